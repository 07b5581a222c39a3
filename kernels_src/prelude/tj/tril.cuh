// The in-tile triangular solve behind solve_tril: X = (I + A)^-1 for the strictly lower part A
// of a C x C matrix in shared memory. Written against a thread index and a barrier callable so
// that the same code also runs on the host, one std::thread per GPU thread
// (tests/runtime/tril_host_test.cpp); under NVRTC it includes only the prelude's mma.cuh (its
// tensor-core block products, which the host form does with FMAs instead).
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__) || defined(__HIP__)
#ifndef __HIP__
#include "tj/mma.cuh"
#endif
#define TJ_TRIL_FN __device__ __forceinline__
#define TJ_TRIL_UNROLL _Pragma("unroll")
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define TJ_TRIL_MMA 1 // the block products on the TF32 tensor cores (mma.sync m16n8k8)
#endif
#else
#include <cmath>
#define TJ_TRIL_FN inline
#define TJ_TRIL_UNROLL
#endif

namespace tj {

/// The buffers' row strides in floats: A's (C + 4) and X's (C + 8) put the 32 lanes of a
/// tensor-core fragment read on 32 different banks (A read as the m16n8k8 A operand, X as the
/// B operand); the FMA forms read rows or columns across lanes and stay conflict-free too.
template <int C> struct TrilStride {
  static constexpr int A = C + 4;
  static constexpr int X = C + 8;
  /// Floats the solve needs: A, then X (the compiler's scratch plan sizes solve_tril by this).
  static constexpr int floats = C * A + C * X;
};

/// X = (I + A)^-1 row by row (any C), a barrier after each row: thread j computes
/// X[i][j] = -(A[i][j] + sum_{k=j+1..i-1} A[i][k] X[k][j]) for j < i. Writes all of X (its
/// diagonal 1, its upper part 0). C barriers.
template <int C, int NT, class Sync>
TJ_TRIL_FN void tril_inverse_rows(const float* a, float* x, int tid, Sync sync) {
  constexpr int SA = TrilStride<C>::A, SX = TrilStride<C>::X;
  for (int e = tid; e < C * C; e += NT) {
    const int r = e / C, c = e % C;
    if (c >= r) x[r * SX + c] = r == c ? 1.0f : 0.0f;
  }
  for (int i = 1; i < C; ++i) {
    for (int j = tid; j < i; j += NT) {
      float acc = a[i * SA + j];
      for (int k = j + 1; k < i; ++k) acc = fmaf(a[i * SA + k], x[k * SX + j], acc);
      x[i * SX + j] = -acc;
    }
    sync();
  }
}

/// M = A[r0 : r0 + 16, 0 : r0] X[0 : r0, 0 : r0], then X[r0 : r0 + 16, 0 : r0] = -X_rr M
/// (X_rr the diagonal block at r0), M kept in A's rows 0..15 (no longer read by then). On
/// sm_80 and later, per warp and 8 columns of M at a time on the TF32 tensor cores, each
/// operand split into a TF32 part and its rest (3xTF32: about f32's accuracy; the solve's
/// products are a few hundred MMAs, not worth a coarser answer); M's 16 x 8 tile goes to
/// shared memory and comes back as the second product's B operand within the warp, so the
/// block row needs no barrier between its two products. Elsewhere (and on the host) by FMAs,
/// a thread per element, with a barrier between them.
template <int C, int NT, class Sync>
TJ_TRIL_FN void tril_block_row(float* a, float* x, int r0, int tid, Sync sync) {
  constexpr int SA = TrilStride<C>::A, SX = TrilStride<C>::X;
#ifdef TJ_TRIL_MMA
  static_assert(NT % 32 == 0, "solve_tril: whole warps");
  (void)sync;
  const int lane = tid % 32, g = lane / 4, t = lane % 4;
  for (int n0 = tid / 32 * 8; n0 < r0; n0 += NT / 4) {
    float m[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    // X[k][n] is 0 above the diagonal: the k steps below n0 add nothing.
    for (int k0 = n0; k0 < r0; k0 += 8) {
      const float* ar = a + (r0 + g) * SA + k0 + t;
      const float af[4] = {ar[0], ar[8 * SA], ar[4], ar[8 * SA + 4]};
      const float bf[2] = {x[(k0 + t) * SX + n0 + g], x[(k0 + t + 4) * SX + n0 + g]};
      mma_1688_tf32x3(m, af, bf);
    }
    // The accumulator: (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1).
    a[g * SA + n0 + 2 * t] = m[0];
    a[g * SA + n0 + 2 * t + 1] = m[1];
    a[(g + 8) * SA + n0 + 2 * t] = m[2];
    a[(g + 8) * SA + n0 + 2 * t + 1] = m[3];
    __syncwarp();
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k0 = 0; k0 < 16; k0 += 8) {
      const float* xr = x + (r0 + g) * SX + r0 + k0 + t;
      const float af[4] = {xr[0], xr[8 * SX], xr[4], xr[8 * SX + 4]};
      const float bf[2] = {a[(k0 + t) * SA + n0 + g], a[(k0 + t + 4) * SA + n0 + g]};
      mma_1688_tf32x3(d, af, bf);
    }
    x[(r0 + g) * SX + n0 + 2 * t] = -d[0];
    x[(r0 + g) * SX + n0 + 2 * t + 1] = -d[1];
    x[(r0 + g + 8) * SX + n0 + 2 * t] = -d[2];
    x[(r0 + g + 8) * SX + n0 + 2 * t + 1] = -d[3];
    __syncwarp(); // M's columns are this warp's again on its next turn
  }
#else
  for (int w = tid; w < 16 * r0; w += NT) {
    const int r = w / r0, c = w % r0;
    const float* arow = a + (r0 + r) * SA;
    float acc = 0.0f;
    for (int k = c; k < r0; ++k) acc = fmaf(arow[k], x[k * SX + c], acc);
    a[r * SA + c] = acc;
  }
  sync();
  for (int w = tid; w < 16 * r0; w += NT) {
    const int r = w / r0, c = w % r0;
    const float* xrow = x + (r0 + r) * SX + r0;
    float acc = 0.0f;
    for (int m = 0; m <= r; ++m) acc = fmaf(xrow[m], a[m * SA + c], acc);
    x[(r0 + r) * SX + c] = -acc;
  }
#endif
}

/// The same inverse in blocks of 16 (C a multiple of 16). Each 16 x 16 diagonal block's column
/// j is one thread's forward substitution in registers (it reads only its own column: no
/// barrier); then block row by block row (tril_block_row), one barrier each. X's blocks above
/// the diagonal are zeroed first (the block products read them). For C = 64: 5 barriers and a
/// few hundred MMAs, where a row at a time took 63 barriers.
template <int C, int NT, class Sync>
TJ_TRIL_FN void tril_inverse_blocked(float* a, float* x, int tid, Sync sync) {
  static_assert(C % 16 == 0, "tril_inverse_blocked: C a multiple of 16");
  constexpr int B = 16, SA = TrilStride<C>::A, SX = TrilStride<C>::X;
  for (int e = tid; e < C * C; e += NT) {
    const int r = e / C, c = e % C;
    if (c / B > r / B) x[r * SX + c] = 0.0f;
  }
  for (int w = tid; w < C; w += NT) {
    const int r0 = w / B * B, j = w % B;
    const float* ab = a + r0 * SA + r0;
    float col[B];
    TJ_TRIL_UNROLL
    for (int i = 0; i < B; ++i) {
      float acc = 0.0f;
      TJ_TRIL_UNROLL
      for (int k = 0; k < i; ++k) acc = fmaf(ab[i * SA + k], col[k], acc);
      col[i] = i < j ? 0.0f : i == j ? 1.0f : -acc;
    }
    TJ_TRIL_UNROLL
    for (int i = 0; i < B; ++i) x[(r0 + i) * SX + r0 + j] = col[i];
  }
  sync();
  for (int r0 = B; r0 < C; r0 += B) {
    tril_block_row<C, NT>(a, x, r0, tid, sync);
    sync();
  }
}

/// X = (I + A)^-1: the blocked form where C is a multiple of 16, else by rows. `a` holds A in
/// its lower part (row stride TrilStride<C>::A; its diagonal and upper part are not read) and
/// is overwritten in its first 16 rows; all of X goes to `x` (row stride TrilStride<C>::X).
/// Ends with a barrier.
template <int C, int NT, class Sync>
TJ_TRIL_FN void tril_inverse(float* a, float* x, int tid, Sync sync) {
  if constexpr (C % 16 == 0)
    tril_inverse_blocked<C, NT>(a, x, tid, sync);
  else
    tril_inverse_rows<C, NT>(a, x, tid, sync);
}

} // namespace tj
