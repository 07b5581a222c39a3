// The in-tile triangular solve behind solve_tril: X = (I + A)^-1 for the strictly lower part A
// of a C x C matrix in shared memory. Written against a thread index and a barrier callable so
// that the same code also runs on the host, one std::thread per GPU thread
// (tests/runtime/tril_host_test.cpp); it includes nothing under NVRTC.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TJ_TRIL_FN __device__ __forceinline__
#else
#include <cmath>
#define TJ_TRIL_FN inline
#endif

namespace tj {

/// Rows 1..C-1 one at a time, a barrier after each: thread j computes
/// X[i][j] = -(A[i][j] + sum_{k=j+1..i-1} A[i][k] X[k][j]) for j < i (A's row i at consecutive
/// k and X's rows at stride C + 1 across threads: no bank conflicts). C barriers.
template <int C, int NT, class Sync>
TJ_TRIL_FN void tril_inverse_rows(const float* a, float* x, int tid, Sync sync) {
  for (int i = 1; i < C; ++i) {
    for (int j = tid; j < i; j += NT) {
      float acc = a[i * C + j];
      for (int k = j + 1; k < i; ++k) acc = fmaf(a[i * C + k], x[k * C + j], acc);
      x[i * C + j] = -acc;
    }
    sync();
  }
}

/// The same inverse in blocks of 16 (C a multiple of 16): first every 16 x 16 diagonal block by
/// rows as above, all blocks at once (15 barriers); then block row by block row, for
/// I = 1..C/16-1, X[I][J] = -X[I][I] M for M = sum_{K=J..I-1} A[I][K] X[K][J] (all J < I at once:
/// M goes to A's unused upper part, transposed; two barriers per block row). For C = 64 that is
/// 21 barriers instead of 63 and about a quarter of the serial work per thread.
template <int C, int NT, class Sync>
TJ_TRIL_FN void tril_inverse_blocked(float* a, float* x, int tid, Sync sync) {
  static_assert(C % 16 == 0, "tril_inverse_blocked: C a multiple of 16");
  constexpr int B = 16;
  for (int i = 1; i < B; ++i) {
    for (int w = tid; w < C; w += NT) {
      const int r0 = w / B * B, j = w % B;
      if (j >= i) continue;
      float acc = a[(r0 + i) * C + r0 + j];
      for (int k = j + 1; k < i; ++k)
        acc = fmaf(a[(r0 + i) * C + r0 + k], x[(r0 + k) * C + r0 + j], acc);
      x[(r0 + i) * C + r0 + j] = -acc;
    }
    sync();
  }
  for (int r0 = B; r0 < C; r0 += B) {
    // M[r][c] = sum_{k = c..r0-1} A[r0 + r][k] X[k][c] (X[c][c] = 1; X[k][c] = 0 for k < c),
    // kept at a[c][r0 + r]: above the diagonal, where A is not read.
    for (int w = tid; w < B * r0; w += NT) {
      const int r = w / r0, c = w % r0;
      const float* arow = a + (r0 + r) * C;
      float acc = arow[c];
      for (int k = c + 1; k < r0; ++k) acc = fmaf(arow[k], x[k * C + c], acc);
      a[c * C + r0 + r] = acc;
    }
    sync();
    // X[r0 + r][c] = -(M[r][c] + sum_{m < r} X[r0 + r][r0 + m] M[m][c]).
    for (int w = tid; w < B * r0; w += NT) {
      const int r = w / r0, c = w % r0;
      const float* mcol = a + c * C + r0;
      float acc = mcol[r];
      for (int m = 0; m < r; ++m) acc = fmaf(x[(r0 + r) * C + r0 + m], mcol[m], acc);
      x[(r0 + r) * C + c] = -acc;
    }
    sync();
  }
}

/// X = (I + A)^-1: the blocked form where C is a multiple of 16 (and over 16), else by rows.
/// `a` (C * C floats) holds A in its lower part and is overwritten above the diagonal; X's
/// strictly lower part goes to `x` (its diagonal is 1 and its upper part 0: not written). Ends
/// with a barrier.
template <int C, int NT, class Sync>
TJ_TRIL_FN void tril_inverse(float* a, float* x, int tid, Sync sync) {
  if constexpr (C % 16 == 0 && C > 16)
    tril_inverse_blocked<C, NT>(a, x, tid, sync);
  else
    tril_inverse_rows<C, NT>(a, x, tid, sync);
}

} // namespace tj
