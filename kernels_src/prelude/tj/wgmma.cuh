// Hopper's warpgroup tensor cores (wgmma, sm_90a): the 128-byte swizzled shared-memory layout
// they read, their descriptors and ordering, one tile dot with a 4-bit A operand unpacked into
// registers (tj::dot_q4_wgmma, the wgmma form of tj::dot_q4) and the 16-bit tile dots with A
// from shared memory or registers (tj::dot_wgmma_sa, tj::dot_wgmma_ra: dot_ss and dot_rs).
#pragma once

#include "tj/layouts.cuh"
#include "tj/memory.cuh"
#include "tj/mma.cuh"
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

/// swizzle128 for 32-bit elements: blocks of 32 columns (128 bytes), 16-byte chunks of 4 (the
/// layout the TMA writes and reads for a 32-column box of f32 with the 128-byte swizzle).
template <int ROWS> TJ_DEVICE int swizzle128_b32(int r, int c) {
  return (c >> 5) * (ROWS * 32) + r * 32 + ((((c >> 2) & 7) ^ (r & 7)) << 2) + (c & 3);
}

/// The descriptor of a K-major, 128-byte swizzled operand starting at `p` (a 16-byte multiple
/// past a 1024-aligned tile: the k16 step's columns): 8-row groups 1024 bytes apart.
TJ_DEVICE unsigned long long wgmma_desc_sw128(const void* p) {
  const unsigned long long addr = smem_addr(p);
  return ((addr & 0x3ffffull) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}

/// The descriptor of an MN-major operand (B stored [K][N], N contiguous: a [K, N] tile read as
/// it lies) with the 128-byte swizzle (swizzle128<ROWS> with rows k, columns n): N in blocks of
/// 64 one ROWS x 128-byte block apart (the leading byte offset), 8-row groups of K 1024 bytes
/// apart (the stride byte offset). `p` is the row of the k16 step (16 rows: 2048 bytes each).
template <int ROWS> TJ_DEVICE unsigned long long wgmma_desc_sw128_mn(const void* p) {
  const unsigned long long addr = smem_addr(p);
  return ((addr & 0x3ffffull) >> 4) | (static_cast<unsigned long long>(ROWS * 128 / 16) << 16) |
         ((1024ull >> 4) << 32) | (1ull << 62);
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
/// One k16 step of a 16-bit B operand on the warpgroup tensor cores: acc += A(k0) @ B(k0).
/// B_MNMAJOR false: B [K, N] stored [N][K] (K-major, BROWS = N rows), as tj::dot_q4_wgmma
/// reads it; true: stored [K][N] as it lies (MN-major, BROWS = K rows), imm-trans-b set.
template <int N, class T, bool B_MNMAJOR, int BROWS>
TJ_DEVICE void wgmma_b_step(float* acc, const unsigned* a, const T* sb, int k0) {
  if (B_MNMAJOR) {
    wgmma_rs_mn<N, T>(acc, a, wgmma_desc_sw128_mn<BROWS>(sb + k0 * 64));
  } else {
    const unsigned long long step = (k0 >> 6) * (BROWS * 128 / 16) + (k0 & 63) * 2 / 16;
    wgmma_rs<N, T>(acc, a, wgmma_desc_sw128(sb) + step);
  }
}

/// Where this warpgroup's columns of B start, in elements of its swizzled tile, for an
/// accumulator whose warpgroups also split N (LC::WN_ > 1, each computing LC::WTN columns):
/// MN-major (stored [K][N]) N in blocks of 64 columns BROWS rows each; K-major (stored [N][K])
/// WTN rows of 64 elements into each block (8-row multiples: the swizzle's phase is kept).
template <class LC, bool B_MNMAJOR, int BROWS> TJ_DEVICE int wgmma_b_columns() {
  static_assert(!B_MNMAJOR || LC::WN_ == 1 || LC::WTN % 64 == 0,
                "wgmma: an MN-major B splits over warpgroups in whole 64-column blocks");
  if (LC::WN_ == 1) return 0;
  return B_MNMAJOR ? LC::wn() * (LC::WTN / 64) * (BROWS * 64) : LC::wn() * LC::WTN * 64;
}

/// acc += A @ B for all of K, A's k16 fragments already in registers: the wgmmas issued back to
/// back as one group, and the call returns with them running (A's registers and B's tile must
/// stay untouched until a wgmma_wait; wgmma_fence_operand(acc) after it). Each warpgroup
/// computes its warps' WTN columns (all of N where the warpgroups split only M).
template <class LC, int K, class T, bool B_MNMAJOR, int BROWS>
TJ_DEVICE void wgmma_issue_all_k(float (&acc)[LC::N], const unsigned (&a)[K / 16][4],
                                 const T* sb) {
  sb += wgmma_b_columns<LC, B_MNMAJOR, BROWS>();
  wgmma_fence();
  TJ_UNROLL for (int kk = 0; kk < K / 16; ++kk)
    wgmma_b_step<LC::WTN, T, B_MNMAJOR, BROWS>(acc, a[kk], sb, kk * 16);
  wgmma_commit();
}

/// The same, done when it returns (acc readable).
template <class LC, int K, class T, bool B_MNMAJOR, int BROWS>
TJ_DEVICE void wgmma_all_k(float (&acc)[LC::N], const unsigned (&a)[K / 16][4], const T* sb) {
  wgmma_issue_all_k<LC, K, T, B_MNMAJOR, BROWS>(acc, a, sb);
  wgmma_wait<0>();
  wgmma_fence_operand(acc);
}

/// What a 16-bit tile dot on wgmma needs of its accumulator: each warp owns 16 rows, the warps
/// make whole warpgroups (LC = MmaAcc<M, N, WM, WN, NT>, WM a multiple of 4: warpgroup g
/// computes rows 64 (g % (WM / 4)) .. + 63 and, where WN > 1, columns WTN wn() .. + WTN - 1:
/// attention backward's dq, 64 rows on two warpgroups), WTN a wgmma size.
template <class LC, int K> TJ_DEVICE constexpr bool wgmma_tile_dot_ok() {
  static_assert(K % 16 == 0, "wgmma tile dot: K must be a multiple of 16");
  static_assert(LC::WTM == 16 && LC::WM_ % 4 == 0 && LC::PM == LC::R_,
                "wgmma tile dot: each warp owns 16 rows, and the warps make whole warpgroups");
  static_assert(LC::PN == LC::C_ && WgmmaShape<LC::WTN>::ok, "wgmma tile dot: no wgmma for this N");
  return true;
}

/// A [M, K]'s k16 fragments for this warp's 16 rows, from shared memory as dot_ss reads it
/// (A_KMAJOR: stored [K][M]), by ldmatrix.
template <class LC, int K, class T, bool A_KMAJOR>
TJ_DEVICE void wgmma_a_from_shared(unsigned (&a)[K / 16][4], const T* sa, int lda) {
  TJ_UNROLL for (int kk = 0; kk < K / 16; ++kk)
    load_a_frag<T, A_KMAJOR>(a[kk], sa, lda, LC::wm() * 16, kk * 16);
}

/// A's k16 fragments from an f32 register tile in LA = MmaAcc<M, K, WM, 1, NT> (an earlier
/// dot's accumulator, e.g. attention's probabilities), rounded to T as dot_rs does.
template <class LC, class LA, int K, class T>
TJ_DEVICE void wgmma_a_from_registers(unsigned (&a)[K / 16][4], const float (&ra)[LA::N]) {
  static_assert(LA::WN_ == 1 && LA::WM_ == LC::WM_ && LA::WTM == 16,
                "wgmma tile dot: A's warps own the same 16 rows as the accumulator's");
  TJ_UNROLL for (int kk = 0; kk < K / 16; ++kk) {
    const float* lo = &ra[(2 * kk) * 4];
    const float* hi = &ra[(2 * kk + 1) * 4];
    a[kk][0] = pack2<T>(lo[0], lo[1]);
    a[kk][1] = pack2<T>(lo[2], lo[3]);
    a[kk][2] = pack2<T>(hi[0], hi[1]);
    a[kk][3] = pack2<T>(hi[2], hi[3]);
  }
}

/// acc += A @ B on the warpgroup tensor cores, for 16-bit tiles: what tj::dot_ss computes (the
/// accumulator as wgmma_tile_dot_ok says). A [M, K] in shared memory, each warp's 16 rows
/// loaded by ldmatrix, all of K before the first wgmma (a wgmma's A registers stay untouched
/// until it is done); B in a swizzled tile (wgmma_b_step). Done when it returns (acc readable).
template <class LC, int K, class T, bool A_KMAJOR, bool B_MNMAJOR, int BROWS>
TJ_DEVICE void dot_wgmma_sa(float (&acc)[LC::N], const T* sa, int lda, const T* sb) {
  static_assert(wgmma_tile_dot_ok<LC, K>());
  unsigned a[K / 16][4];
  wgmma_a_from_shared<LC, K, T, A_KMAJOR>(a, sa, lda);
  wgmma_all_k<LC, K, T, B_MNMAJOR, BROWS>(acc, a, sb);
}

/// A's descriptor at k step k0 for this warpgroup's 64 rows (g = LC::wm() / 4): K-major (A_MN
/// false: A [M, K] stored [M][K] in swizzle128<AROWS>, AROWS = M rows; 64-column blocks of K)
/// or MN-major (A_MN: stored [K][M], AROWS = K rows, M in blocks of 64 columns, this
/// warpgroup's the g-th: attention backward's ds^T, staged as [keys][queries]).
template <class LC, class T, bool A_MN, int AROWS>
TJ_DEVICE unsigned long long wgmma_a_desc(const T* sa, int k0) {
  if (A_MN) return wgmma_desc_sw128_mn<AROWS>(sa + (LC::wm() / 4) * (AROWS * 64) + k0 * 64);
  return wgmma_desc_sw128(sa) + (LC::wm() / 4) * (64 * 128 / 16) + (k0 >> 6) * (AROWS * 128 / 16) +
         (k0 & 63) * 2 / 16;
}

/// B's descriptor at k step k0 for this warpgroup's columns: K-major (stored [N][K]) or MN-major
/// (B_MN: stored [K][N]), as wgmma_b_step reads them.
template <class LC, class T, bool B_MN, int BROWS>
TJ_DEVICE unsigned long long wgmma_b_desc(const T* sb, int k0) {
  sb += wgmma_b_columns<LC, B_MN, BROWS>();
  if (B_MN) return wgmma_desc_sw128_mn<BROWS>(sb + k0 * 64);
  return wgmma_desc_sw128(sb) + (k0 >> 6) * (BROWS * 128 / 16) + (k0 & 63) * 2 / 16;
}

/// acc += A @ B for all of K with A read by the tensor cores too (wgmma_ss): A and B each in a
/// swizzled tile (as select-wgmma swizzles them), K-major or MN-major (A_MN: A stored [K][M];
/// B_MN: B stored [K][N]; wgmma_a_desc, wgmma_b_desc); the group is issued and the call returns
/// with it running (neither tile may be written until a wgmma_wait).
template <class LC, int K, class T, bool A_MN, int AROWS, bool B_MN, int BROWS>
TJ_DEVICE void wgmma_issue_all_k_ss(float (&acc)[LC::N], const T* sa, const T* sb) {
  static_assert(A_MN || K % 64 == 0, "wgmma: a K-major A's K a multiple of 64 (whole blocks)");
  wgmma_fence();
  TJ_UNROLL for (int kk = 0; kk < K / 16; ++kk)
    WgmmaSs<LC::WTN, T>::template run<A_MN, B_MN>(acc, wgmma_a_desc<LC, T, A_MN, AROWS>(sa, kk * 16),
                                                  wgmma_b_desc<LC, T, B_MN, BROWS>(sb, kk * 16));
  wgmma_commit();
}

/// acc += A @ B with both operands read from their swizzled tiles by the tensor cores
/// (wgmma_issue_all_k_ss): attention's q k^T with q by descriptor (both K-major), its
/// backward's ds^T k (both MN-major); done when it returns (acc readable).
template <class LC, int K, class T, bool A_MN, int AROWS, bool B_MN, int BROWS>
TJ_DEVICE void dot_wgmma_ss(float (&acc)[LC::N], const T* sa, const T* sb) {
  static_assert(wgmma_tile_dot_ok<LC, K>());
  wgmma_issue_all_k_ss<LC, K, T, A_MN, AROWS, B_MN, BROWS>(acc, sa, sb);
  wgmma_wait<0>();
  wgmma_fence_operand(acc);
}

/// acc += A @ B with A in registers (`ra`, see wgmma_a_from_registers); B as in dot_wgmma_sa.
template <class LC, class LA, int K, class T, bool B_MNMAJOR, int BROWS>
TJ_DEVICE void dot_wgmma_ra(float (&acc)[LC::N], const float (&ra)[LA::N], const T* sb) {
  static_assert(wgmma_tile_dot_ok<LC, K>());
  unsigned a[K / 16][4];
  wgmma_a_from_registers<LC, LA, K, T>(a, ra);
  wgmma_all_k<LC, K, T, B_MNMAJOR, BROWS>(acc, a, sb);
}

/// The issuing halves of dot_wgmma_sa and dot_wgmma_ra (the DSL's dot(..., issue=1)): A's
/// fragments into `a` (registers of the caller's scope, untouched until the wgmmas are done),
/// the wgmmas issued as one group, and the call returns with them running into acc. The
/// caller waits (wgmma_wait<0>, then wgmma_fence_operand(acc) and wgmma_release(a)) before it
/// reads acc or writes B's tile; what it computes in between overlaps the tensor cores.
template <class LC, int K, class T, bool A_KMAJOR, bool B_MNMAJOR, int BROWS>
TJ_DEVICE void dot_wgmma_sa_issue(float (&acc)[LC::N], unsigned (&a)[K / 16][4], const T* sa,
                                  int lda, const T* sb) {
  static_assert(wgmma_tile_dot_ok<LC, K>());
  wgmma_a_from_shared<LC, K, T, A_KMAJOR>(a, sa, lda);
  wgmma_issue_all_k<LC, K, T, B_MNMAJOR, BROWS>(acc, a, sb);
}
/// The issuing half of dot_wgmma_ss: no A registers to hold, the caller waits as for the others.
template <class LC, int K, class T, bool A_MN, int AROWS, bool B_MN, int BROWS>
TJ_DEVICE void dot_wgmma_ss_issue(float (&acc)[LC::N], const T* sa, const T* sb) {
  static_assert(wgmma_tile_dot_ok<LC, K>());
  wgmma_issue_all_k_ss<LC, K, T, A_MN, AROWS, B_MN, BROWS>(acc, sa, sb);
}
template <class LC, class LA, int K, class T, bool B_MNMAJOR, int BROWS>
TJ_DEVICE void dot_wgmma_ra_issue(float (&acc)[LC::N], unsigned (&a)[K / 16][4],
                                  const float (&ra)[LA::N], const T* sb) {
  static_assert(wgmma_tile_dot_ok<LC, K>());
  wgmma_a_from_registers<LC, LA, K, T>(a, ra);
  wgmma_issue_all_k<LC, K, T, B_MNMAJOR, BROWS>(acc, a, sb);
}
#endif // __CUDA_ARCH_FEAT_SM90_ALL

/// After the wait for an issued dot: its A registers were in use until here (keeps the
/// compiler from giving them to other values while the wgmmas read them).
template <int KK> TJ_DEVICE void wgmma_release(unsigned (&a)[KK][4]) {
  TJ_UNROLL for (int i = 0; i < KK; ++i)
    asm volatile("" ::"r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]) : "memory");
}

} // namespace tj
