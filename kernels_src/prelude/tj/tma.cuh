// Hopper's tensor memory accelerator (TMA, sm_90): a tensor map argument, the mbarriers a
// pipelined loop's TMA copies signal, and the 2-D tile load into a 128-byte-swizzled shared
// tile (the layout tj::swizzle128 addresses and wgmma reads).
#pragma once

#include "tj/memory.cuh"

namespace tj {

/// A CUtensorMap, encoded by the launcher (runtime/tma_map.cpp) and passed by value as a
/// __grid_constant__ kernel parameter: the TMA reads it through its generic address.
struct alignas(64) TmaMap {
  unsigned long long opaque[16];
};

/// One thread: N mbarriers, each completing a phase after `arrivals` arrivals (and the bytes
/// they announce), made visible to the other threads' and the TMA's later use (a barrier
/// after this publishes them to the block).
template <int N> TJ_DEVICE void mbarrier_init_all(unsigned long long* bars, int arrivals) {
#if __CUDA_ARCH__ >= 900
  for (int i = 0; i < N; ++i)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bars + i)), "r"(arrivals)
                 : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

/// This thread's arrival on `bar`, announcing `bytes` that TMA copies will deliver to it.
TJ_DEVICE void mbarrier_expect_tx(unsigned long long* bar, unsigned bytes) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
#endif
}

/// This thread's warp, as a value the compiler knows is the same in every lane (read from lane
/// 0): a branch on it is not divergent within a warp, which ptxas needs to keep wgmmas issued
/// before it running (a branch on threadIdx.x around a polling loop made it serialize them).
TJ_DEVICE int warp_index() {
  return __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 32, 0);
}

/// This thread's arrival on `bar` (release: its earlier reads of shared memory, the ring slot
/// `bar` guards, are done before the phase completes and a TMA copy refills the slot).
TJ_DEVICE void mbarrier_arrive(unsigned long long* bar) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
#endif
}

/// One poll: whether the mbarrier at shared address `addr` completed the phase of this parity.
TJ_DEVICE bool mbarrier_try_wait(unsigned addr, int parity) {
#if __CUDA_ARCH__ >= 900
  unsigned done;
  asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
               "selp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(done)
               : "r"(addr), "r"(parity)
               : "memory");
  return done != 0;
#else
  return true;
#endif
}

/// Waits until `bar` completes the phase of this parity (its bytes landed, visible to this
/// thread). A phase that never completes is a compiler bug, not a slow copy: after about 2^28
/// polls (seconds) the kernel traps, so the launch fails instead of hanging.
TJ_DEVICE void mbarrier_wait(unsigned long long* bar, int parity) {
#if __CUDA_ARCH__ >= 900
  const unsigned addr = smem_addr(bar);
  for (unsigned polls = 0; !mbarrier_try_wait(addr, parity); ++polls)
    if (polls == (1u << 28)) __trap();
#endif
}

/// mbarrier_wait for the threads of a kernel with producer warps: ptxas ignores setmaxnreg
/// (the registers the producer warps gave up) in code with a path to an exit, and a trap is
/// one. A phase that never completes here makes the launch fail all the same, through a store
/// to address 0 (an illegal address) after about 2^28 polls. (The producer warps' own waits
/// keep the trap.)
TJ_DEVICE void mbarrier_wait_no_exit(unsigned long long* bar, int parity) {
#if __CUDA_ARCH__ >= 900
  const unsigned addr = smem_addr(bar);
  for (unsigned polls = 0; !mbarrier_try_wait(addr, parity); ++polls)
    if (polls == (1u << 28)) *reinterpret_cast<volatile int*>(0) = 0;
#endif
}

/// BLOCKS boxes of ROWS x 128 bytes from the map at (col, row) (elements, innermost first),
/// box b's columns col + b * (128 bytes) into `dst` + b * ROWS * 128 bytes: the column blocks
/// of a swizzle128<ROWS> tile, 1024-byte aligned. Out-of-range elements arrive as zeros; the
/// whole boxes' bytes count towards `bar`'s phase.
template <int BLOCKS, int ROWS, class T>
TJ_DEVICE void tma_load_2d_sw128(T* dst, const TmaMap* map, int col, int row,
                                 unsigned long long* bar) {
#if __CUDA_ARCH__ >= 900
  for (int b = 0; b < BLOCKS; ++b)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_addr(dst) + b * ROWS * 128),
                 "l"(map), "r"(col + b * static_cast<int>(128 / sizeof(T))), "r"(row),
                 "r"(smem_addr(bar))
                 : "memory");
#endif
}

/// tma_load_2d_sw128 for a tensor of rank 3, 4 or 5 whose outer dimensions are points (one
/// element deep in the map's box): c2, c3, c4 their coordinates, innermost first.
template <int BLOCKS, int ROWS, class T>
TJ_DEVICE void tma_load_3d_sw128(T* dst, const TmaMap* map, int col, int row, int c2,
                                 unsigned long long* bar) {
#if __CUDA_ARCH__ >= 900
  for (int b = 0; b < BLOCKS; ++b)
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(smem_addr(dst) + b * ROWS * 128),
                 "l"(map), "r"(col + b * static_cast<int>(128 / sizeof(T))), "r"(row), "r"(c2),
                 "r"(smem_addr(bar))
                 : "memory");
#endif
}
template <int BLOCKS, int ROWS, class T>
TJ_DEVICE void tma_load_4d_sw128(T* dst, const TmaMap* map, int col, int row, int c2, int c3,
                                 unsigned long long* bar) {
#if __CUDA_ARCH__ >= 900
  for (int b = 0; b < BLOCKS; ++b)
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(smem_addr(dst) + b * ROWS * 128),
                 "l"(map), "r"(col + b * static_cast<int>(128 / sizeof(T))), "r"(row), "r"(c2),
                 "r"(c3), "r"(smem_addr(bar))
                 : "memory");
#endif
}
template <int BLOCKS, int ROWS, class T>
TJ_DEVICE void tma_load_5d_sw128(T* dst, const TmaMap* map, int col, int row, int c2, int c3,
                                 int c4, unsigned long long* bar) {
#if __CUDA_ARCH__ >= 900
  for (int b = 0; b < BLOCKS; ++b)
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];" ::"r"(smem_addr(dst) + b * ROWS * 128),
                 "l"(map), "r"(col + b * static_cast<int>(128 / sizeof(T))), "r"(row), "r"(c2),
                 "r"(c3), "r"(c4), "r"(smem_addr(bar))
                 : "memory");
#endif
}

/// One box of the map (a run of one row: box_rows 1, no swizzle) at coordinates innermost
/// first, into `dst` (16-byte aligned); out-of-range elements arrive as zeros and the whole
/// box's bytes count towards `bar`'s phase.
template <class T>
TJ_DEVICE void tma_load_box_2d(T* dst, const TmaMap* map, int c0, int c1, unsigned long long* bar) {
#if __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_addr(dst)),
               "l"(map), "r"(c0), "r"(c1), "r"(smem_addr(bar))
               : "memory");
#endif
}
template <class T>
TJ_DEVICE void tma_load_box_3d(T* dst, const TmaMap* map, int c0, int c1, int c2,
                               unsigned long long* bar) {
#if __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(smem_addr(dst)),
               "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(bar))
               : "memory");
#endif
}
template <class T>
TJ_DEVICE void tma_load_box_4d(T* dst, const TmaMap* map, int c0, int c1, int c2, int c3,
                               unsigned long long* bar) {
#if __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(smem_addr(dst)),
               "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smem_addr(bar))
               : "memory");
#endif
}
template <class T>
TJ_DEVICE void tma_load_box_5d(T* dst, const TmaMap* map, int c0, int c1, int c2, int c3, int c4,
                               unsigned long long* bar) {
#if __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];" ::"r"(smem_addr(dst)),
               "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(smem_addr(bar))
               : "memory");
#endif
}

/// Row r of an atomic_add.bulk: s[0 : n] added into p[0 : n] (p's elements `stride` floats
/// apart). By the bulk copy engine (cp.reduce.async.bulk, one instruction for the run) when the
/// run is contiguous, both ends 16-byte aligned and n a multiple of 4 (16 bytes); else one
/// atomicAdd per element, so that any stride, offset or width stays right. The shared bytes
/// must have been fenced for the async proxy (fence_proxy_async) by the threads that wrote
/// them, before the barrier that precedes this.
TJ_DEVICE void bulk_add_row(float* p, long long stride, const float* s, int n) {
  if (n <= 0) return;
#if __CUDA_ARCH__ >= 900
  const bool aligned =
      ((reinterpret_cast<unsigned long long>(p) | static_cast<unsigned long long>(smem_addr(s))) &
       15) == 0;
  if (stride == 1 && (n & 3) == 0 && aligned) {
    asm volatile(
        "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(p),
        "r"(smem_addr(s)), "r"(n * 4)
        : "memory");
    return;
  }
#endif
  for (int c = 0; c < n; ++c) atomicAdd(p + c * stride, s[c]);
}

/// After a bulk atomic_add's rows are issued: this thread's bulk operations become a group.
TJ_DEVICE void bulk_commit() {
#if __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}

/// Adds a swizzle128_b32<ROWS> tile of f32 (BLOCKS blocks of 32 columns) into the tensor at
/// the box (col, row, c2, ...) of `map` (32 columns x ROWS rows, the 128-byte swizzle), one
/// tensor reduction per block: the TMA drops what lies past the tensor's edges. One thread
/// issues it; tj::bulk_commit and tj::bulk_wait_read as for bulk_add_row.
template <int RANK, int BLOCKS, int ROWS>
TJ_DEVICE void tma_reduce_add_sw128(const float* src, const TmaMap* map, int col, int row,
                                    int c2 = 0, int c3 = 0, int c4 = 0) {
#if __CUDA_ARCH__ >= 900
  for (int b = 0; b < BLOCKS; ++b) {
    const unsigned s = smem_addr(src) + b * ROWS * 128;
    const int x = col + b * 32;
    if constexpr (RANK == 2)
      asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group"
                   " [%0, {%1, %2}], [%3];" ::"l"(map), "r"(x), "r"(row), "r"(s)
                   : "memory");
    else if constexpr (RANK == 3)
      asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group"
                   " [%0, {%1, %2, %3}], [%4];" ::"l"(map), "r"(x), "r"(row), "r"(c2), "r"(s)
                   : "memory");
    else if constexpr (RANK == 4)
      asm volatile("cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.tile.bulk_group"
                   " [%0, {%1, %2, %3, %4}], [%5];" ::"l"(map), "r"(x), "r"(row), "r"(c2),
                   "r"(c3), "r"(s)
                   : "memory");
    else
      asm volatile("cp.reduce.async.bulk.tensor.5d.global.shared::cta.add.tile.bulk_group"
                   " [%0, {%1, %2, %3, %4, %5}], [%6];" ::"l"(map), "r"(x), "r"(row), "r"(c2),
                   "r"(c3), "r"(c4), "r"(s)
                   : "memory");
  }
#endif
}

/// Until this thread's bulk operations have read their shared bytes (not until the sums land),
/// so that their tiles may be written again after the barrier this precedes.
TJ_DEVICE void bulk_wait_read() {
#if __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
#endif
}

/// Until this thread's bulk operations have completed (their sums written): before a fence,
/// a return or the kernel's end.
TJ_DEVICE void bulk_wait_all() {
#if __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif
}

/// Producer warps: a warpgroup's registers per thread lowered to N (returned to the block's
/// pool) or raised to N (taken from it, waiting until there are enough); every warp of the
/// warpgroup runs the same one.
template <int N>
TJ_DEVICE void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
TJ_DEVICE void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

} // namespace tj
