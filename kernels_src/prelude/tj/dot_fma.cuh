// dot on the FMA units, for targets without matrix instructions (gfx1030): acc += A @ B with A
// [M, K] and B [K, N] in shared memory (A_KMAJOR / B_NMAJOR: stored transposed), acc in the
// layout LC the compiler chose (the m16n8 accumulator's: each thread owns the same elements as
// on tensor cores, so everything around the dot is unchanged). Each thread sums its own
// elements' K products in f32; values past the tile's M or N (padded fragments) are skipped.
#pragma once

#include "tj/layouts.cuh"

namespace tj {

template <class LC, int K, bool A_KMAJOR, bool B_NMAJOR, class T>
TJ_DEVICE void dot_fma(float (&acc)[LC::N], const T* sa, int lda, const T* sb, int ldb) {
  TJ_UNROLL for (int e = 0; e < LC::N; ++e) {
    if (!LC::valid(e)) continue;
    const int r = LC::r(e), c = LC::c(e);
    float s = acc[e];
    for (int k = 0; k < K; ++k) {
      const T a = A_KMAJOR ? sa[k * lda + r] : sa[r * lda + k];
      const T b = B_NMAJOR ? sb[c * ldb + k] : sb[k * ldb + c];
      s = fmaf(cvt<float>(a), cvt<float>(b), s);
    }
    acc[e] = s;
  }
}

} // namespace tj
