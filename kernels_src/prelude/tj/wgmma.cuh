// Hopper's warpgroup tensor cores (wgmma, sm_90a): the 128-byte swizzled shared-memory layout
// they read, their descriptors and ordering, and one tile dot with a 4-bit A operand unpacked
// into registers (tj::dot_q4_wgmma, the wgmma form of tj::dot_q4).
#pragma once

#include "tj/layouts.cuh"
#include "tj/memory.cuh"
#include "tj/unpack.cuh"
#include "tj/wgmma_ops.cuh"

namespace tj {

/// Element offset of (r, c) in a [R, C] tile of 16-bit values stored K-major with the 128-byte
/// swizzle, ROWS = R rounded up to 16: the columns in blocks of 64 (128 bytes), each block
/// ROWS rows of 128 bytes; in a row, 16-byte chunk j sits at chunk j ^ (r % 8). The tile
/// starts 1024-byte aligned (plan-shared-memory). 16-byte runs (8 columns from a multiple of
/// 8) stay contiguous, so cp.async fills it whole; 8 rows' chunks fall on 8 bank groups.
template <int ROWS> TJ_DEVICE int swizzle128(int r, int c) {
  return (c >> 6) * (ROWS * 64) + r * 64 + ((((c >> 3) & 7) ^ (r & 7)) << 3) + (c & 7);
}

/// The descriptor of a K-major, 128-byte swizzled operand starting at `p` (a 16-byte multiple
/// past a 1024-aligned tile: the k16 step's columns): 8-row groups 1024 bytes apart.
TJ_DEVICE unsigned long long wgmma_desc_sw128(const void* p) {
  const unsigned long long addr = smem_addr(p);
  return ((addr & 0x3ffffull) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}

/// Orders this thread's earlier register and shared-memory writes before the wgmma that
/// follows (the operands it reads, the accumulators it adds to).
TJ_DEVICE void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
TJ_DEVICE void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
/// Waits until at most PENDING committed groups are still running.
template <int PENDING> TJ_DEVICE void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}
/// Keeps the compiler from moving reads or writes of acc across this point (a wait, a dot's
/// end): its registers change behind its back while wgmmas run.
template <int N> TJ_DEVICE void wgmma_fence_operand(float (&acc)[N]) {
  TJ_UNROLL for (int i = 0; i < N; ++i) asm volatile("" : "+f"(acc[i])::"memory");
}
/// Waits for every wgmma this thread's warpgroup has in flight (a loop's IN_FLIGHT dots);
/// acc is readable after it.
template <int N> TJ_DEVICE void wgmma_wait_acc(float (&acc)[N]) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  wgmma_wait<0>();
#endif
  wgmma_fence_operand(acc);
}
/// Makes this thread's shared-memory writes (plain stores and cp.async, the generic proxy)
/// visible to the tensor cores' reads (the async proxy); a barrier after it publishes them.
TJ_DEVICE void fence_proxy_async() {
#if __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/// The pair (field t, field t + 4) of a word as two T values minus a zero point: for unpack4's
/// interleaved words, k 8j + 2t and 8j + 2t + 1 of word j. Three instructions per pair.
template <class T> TJ_DEVICE unsigned unpack4_pair(unsigned w, int t, int zero);
template <> TJ_DEVICE unsigned unpack4_pair<f16>(unsigned w, int t, int zero) {
  unsigned p = and_or(w >> (4 * t), 0x000f000fu, 0x64006400u); // 1024 + q in each half
  const unsigned base_z = (0x6400u + (static_cast<unsigned>(zero) & 15u)) * 0x10001u;
  asm("sub.f16x2 %0, %0, %1;" : "+r"(p) : "r"(base_z));
  return p;
}
template <> TJ_DEVICE unsigned unpack4_pair<bf16>(unsigned w, int t, int zero) {
  unsigned p = and_or(w >> (4 * t), 0x000f000fu, 0x43004300u); // 128 + q in each half
  const unsigned minus_128_z = (0xc300u + (static_cast<unsigned>(zero) & 15u)) * 0x10001u;
  asm("fma.rn.bf16x2 %0, %0, %1, %2;" : "+r"(p) : "r"(0x3f803f80u), "r"(minus_128_z));
  return p;
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
/// acc += (Q - Z) @ B on the warpgroup tensor cores: what tj::dot_q4 computes, for an
/// accumulator whose warps own 16 rows each (LC = MmaAcc<M, N, WM, 1, NT>, WM a multiple of 4,
/// M = 16 * WM: warpgroup g computes rows 64g..64g+63, the wgmma's M). Q: unpack4's
/// interleaved words in shared memory (row stride ldq words, 16-byte aligned rows); Z as in
/// dot_q4 (ZERO 0, 1 or 2); B [K, N] stored [N][K] in shared memory with the 128-byte swizzle
/// (swizzle128<BROWS>), read by the tensor cores through descriptors. K is a multiple of 64.
///
/// The tensor cores take B in k order, so each A fragment must too: in a chunk of 32 k, lane
/// (g, t) needs k 2t, 2t + 1 (+8, +16, +24) of rows g and g + 8: pair t of each of the chunk's
/// four words, read as one 16-byte vector per row. The chunk's two wgmmas run while the next
/// chunk is unpacked; the dot returns once all of them are done (acc readable). SCALED: times
/// each row's scale, as in dot_q4.
///
/// IN_FLIGHT: the dot returns with its last chunk's wgmmas still running (a pipelined loop's
/// next iteration unpacks and copies meanwhile): each chunk is its own commit group, and a
/// chunk waits only for the one before last, whose A registers it reuses. acc is readable
/// after wgmma_wait_acc; B's tile must stay unwritten until the next dot's second chunk (the
/// loop's ring keeps one slot more behind: expand-pipelines).
template <class LC, int K, class T, int ZERO, int BROWS, bool SCALED = false,
          bool IN_FLIGHT = false>
TJ_DEVICE void dot_q4_wgmma(float (&acc)[LC::N], const int* sq, int ldq, const int* zero,
                            const T* sb, const T* scale = nullptr) {
  static_assert(K % 64 == 0, "dot_q4_wgmma: K must be a multiple of 64");
  static_assert(LC::WN_ == 1 && LC::WTM == 16 && LC::WM_ % 4 == 0 && LC::PM == LC::R_,
                "dot_q4_wgmma: each warp owns 16 rows, and the warps make whole warpgroups");
  static_assert(LC::PN == LC::C_ && WgmmaShape<LC::PN>::ok, "dot_q4_wgmma: no wgmma for this N");
  const int l = lane_id(), g = l / 4, t = l % 4;
  const int r = LC::wm() * 16 + g;
  const int zlo = ZERO ? zero[0] : 0;
  const int zhi = ZERO == 2 ? zero[1] : zlo;
  const unsigned long long desc0 = wgmma_desc_sw128(sb);
  const unsigned slo = SCALED ? scale[0].bits * 0x10001u : 0u; // (s, s)
  const unsigned shi = SCALED ? scale[1].bits * 0x10001u : 0u;
  auto pair = [&](unsigned w, int z, unsigned s) {
    const unsigned p = unpack4_pair<T>(w, t, z);
    return SCALED ? mul2<T>(p, s) : p;
  };
  if (!IN_FLIGHT) wgmma_fence();
  TJ_UNROLL for (int k0 = 0; k0 < K; k0 += 32) {
    unsigned lo[4], hi[4];
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(lo[0]), "=r"(lo[1]), "=r"(lo[2]), "=r"(lo[3])
                 : "r"(smem_addr(sq + r * ldq + k0 / 8))
                 : "memory");
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(hi[0]), "=r"(hi[1]), "=r"(hi[2]), "=r"(hi[3])
                 : "r"(smem_addr(sq + (r + 8) * ldq + k0 / 8))
                 : "memory");
    if (IN_FLIGHT) {
      wgmma_wait<1>(); // the chunk before last is done: its A registers are free
      wgmma_fence();
    }
    TJ_UNROLL for (int s = 0; s < 2; ++s) {
      // Word 2s holds k 16s..16s+7 (the fragment's columns 2t, 2t + 1), word 2s + 1 the next 8.
      const unsigned a[4] = {pair(lo[2 * s], zlo, slo), pair(hi[2 * s], zhi, shi),
                             pair(lo[2 * s + 1], zlo, slo), pair(hi[2 * s + 1], zhi, shi)};
      const int k = k0 + 16 * s; // descriptor units are 16 bytes
      const unsigned long long step = (k >> 6) * (BROWS * 128 / 16) + (k & 63) * 2 / 16;
      wgmma_rs<LC::PN, T>(acc, a, desc0 + step);
    }
    if (IN_FLIGHT) wgmma_commit();
  }
  if (!IN_FLIGHT) {
    wgmma_commit();
    wgmma_wait<0>();
  }
  wgmma_fence_operand(acc);
}
#endif // __CUDA_ARCH_FEAT_SM90_ALL

} // namespace tj
