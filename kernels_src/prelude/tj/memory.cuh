// Global and shared memory moves: vector loads, asynchronous copies (cp.async), fences and
// the block-uniform atomic.
#pragma once

#include "tj/types.cuh"

namespace tj {

template <int BYTES> struct VecBits;
template <> struct VecBits<16> { typedef uint4 type; };
template <> struct VecBits<8> { typedef uint2 type; };
template <> struct VecBits<4> { typedef unsigned type; };
template <> struct VecBits<2> { typedef unsigned short type; };
template <> struct VecBits<1> { typedef unsigned char type; };

/// Loads VEC elements from global memory with one vector access (src aligned to it) into
/// registers.
template <class T, int VEC> TJ_DEVICE void load_vec(T* dst, const T* src) {
  typedef typename VecBits<sizeof(T) * VEC>::type V;
  V v = *reinterpret_cast<const V*>(src);
  memcpy(dst, &v, sizeof(V));
}

/// Stores VEC elements from registers to global memory with one vector access (dst aligned to
/// it). The store goes through a V pointer, not memcpy: memcpy to an f16 pointer only knows
/// 2-byte alignment, and four f16 became eight one-byte stores.
template <class T, int VEC> TJ_DEVICE void store_vec(T* dst, const T* src) {
  typedef typename VecBits<sizeof(T) * VEC>::type V;
  V v;
  memcpy(&v, src, sizeof(V));
  *reinterpret_cast<V*>(dst) = v;
}

/// p[0] += a, p[1] += b (p 8-byte aligned): one vector reduction on sm_90
/// (red.global.add.v2.f32), two scalar ones before it.
TJ_DEVICE void atomic_add2(float* p, float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(p), make_float2(a, b));
#else
  atomicAdd(p, a);
  atomicAdd(p + 1, b);
#endif
}

#ifdef TJ_AMD
// No asynchronous global->shared copy on AMD here: the same calls copy at once (zeros where
// `pred` is false), so a kernel's waits have nothing left to wait for and its barriers publish
// the copies as they would publish cp.async's.
TJ_DEVICE void cp_async16(void* smem, const void* gmem, bool pred) {
  *static_cast<uint4*>(smem) = pred ? *static_cast<const uint4*>(gmem) : make_uint4(0, 0, 0, 0);
}
template <int BYTES> TJ_DEVICE void cp_async_elem(void* smem, const void* gmem, bool pred) {
  typedef typename VecBits<BYTES>::type V;
  *static_cast<V*>(smem) = pred ? *static_cast<const V*>(gmem) : V{};
}
TJ_DEVICE void cp_async_commit() {}
template <int N> TJ_DEVICE void cp_async_wait() {}
#else
TJ_DEVICE unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// 16-byte asynchronous global->shared copy; when `pred` is false the 16 bytes are zeroed.
/// `.ca` (through L1), not `.cg` (L1 bypass): on an H100, ncu counted 24 L2 sectors read per
/// warp-wide `.cg` copy of 512 contiguous bytes (16 needed), the extra third hitting in L2;
/// `.ca` reads the 16. paged_sparse D=256 ran 4-5% faster with it (same DRAM bytes).
TJ_DEVICE void cp_async16(void* smem, const void* gmem, bool pred) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem),
               "r"(pred ? 16 : 0));
}
/// 4- or 8-byte asynchronous global->shared copy of one element (a gathered i32, f32, i64...);
/// zeroed when `pred` is false. cp.async has no 2-byte form: 16-bit gathers stay synchronous.
template <int BYTES> TJ_DEVICE void cp_async_elem(void* smem, const void* gmem, bool pred) {
  static_assert(BYTES == 4 || BYTES == 8, "cp.async copies 4, 8 or 16 bytes");
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(smem_addr(smem)), "l"(gmem),
               "n"(BYTES), "r"(pred ? BYTES : 0));
}

TJ_DEVICE void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int N> TJ_DEVICE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
#endif

/// Asks L2 to fetch the line holding `p` (a hint: no register waits for it). Deep prefetch
/// through L2 keeps many bytes in flight without holding shared memory for them.
TJ_DEVICE void prefetch_l2(const void* p) {
#ifdef TJ_AMD
  (void)p; // no L2 prefetch instruction on AMD: the hint is dropped
#else
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p));
#endif
}

/// The DSL's fence(): a device-scope acquire-release fence. Publishing with it (stores; fence;
/// atomic) and reading after it (atomic; fence; loads) is the release/acquire pattern of the
/// PTX memory model; __threadfence() would be a sequentially consistent fence (MEMBAR.SC plus
/// an L1 invalidate), several times slower and stronger than that pattern needs.
TJ_DEVICE void fence() {
#ifdef TJ_AMD
  __threadfence(); // AMD: one device-scope fence
#else
  asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
#endif
}

/// An atomic add issued once for the whole block, after every thread of the block has reached
/// it (so writes each thread fenced before are visible first); every thread gets the old value.
template <class T, bool SYNC_AFTER = true>
TJ_DEVICE T atomic_add_uniform(T* p, T v, bool inbounds, T* scratch) {
  block_sync();
  if (threadIdx.x == 0) scratch[0] = inbounds ? atomicAdd(p, v) : T(0);
  block_sync();
  T old = scratch[0];
  if (SYNC_AFTER) block_sync();
  return old;
}

} // namespace tj
