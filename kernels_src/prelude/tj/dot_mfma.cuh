// dot on gfx90a's matrix cores: acc += A @ B with A [M, K] and B [K, N] in shared memory
// (A_KMAJOR / B_NMAJOR: stored transposed), acc in the MfmaAcc layout. Each wave walks its
// 16 x 16 blocks; per block and K step every lane gathers its operand elements from shared
// memory as the instruction wants them (tj/mfma_map.cuh: f16 and bf16 16 deep, f32 4 deep),
// zero past the tile (M, N not multiples of 16, K not a multiple of the step), and one
// v_mfma_f32_16x16x* adds the block's product into its four registers.
#pragma once

#include "tj/layouts.cuh"
#include "tj/mfma_map.cuh"

namespace tj {

#if defined(__gfx90a__)
typedef float mfma_f32x4 __attribute__((ext_vector_type(4)));
typedef _Float16 mfma_f16x4 __attribute__((ext_vector_type(4)));
typedef short mfma_i16x4 __attribute__((ext_vector_type(4)));

/// One K step of one block: d += A(block) B(block). `a[j]` and `b[j]` are this lane's operand
/// elements (Block16<PER>), as f32 (rounded back to T: they came from T).
template <class T>
TJ_DEVICE mfma_f32x4 mfma_step(const float (&a)[4], const float (&b)[4], mfma_f32x4 d);
template <>
TJ_DEVICE mfma_f32x4 mfma_step<f16>(const float (&a)[4], const float (&b)[4], mfma_f32x4 d) {
  const mfma_f16x4 va = {(_Float16)a[0], (_Float16)a[1], (_Float16)a[2], (_Float16)a[3]};
  const mfma_f16x4 vb = {(_Float16)b[0], (_Float16)b[1], (_Float16)b[2], (_Float16)b[3]};
  return __builtin_amdgcn_mfma_f32_16x16x16f16(va, vb, d, 0, 0, 0);
}
template <>
TJ_DEVICE mfma_f32x4 mfma_step<bf16>(const float (&a)[4], const float (&b)[4], mfma_f32x4 d) {
  // bf16 values are the top halves of their f32 (exact: they were bf16).
  mfma_i16x4 va, vb;
  TJ_UNROLL for (int j = 0; j < 4; ++j) {
    va[j] = static_cast<short>(__float_as_uint(a[j]) >> 16);
    vb[j] = static_cast<short>(__float_as_uint(b[j]) >> 16);
  }
  return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(va, vb, d, 0, 0, 0);
}
template <>
TJ_DEVICE mfma_f32x4 mfma_step<float>(const float (&a)[4], const float (&b)[4], mfma_f32x4 d) {
  return __builtin_amdgcn_mfma_f32_16x16x4f32(a[0], b[0], d, 0, 0, 0);
}

template <class LC, int K, bool A_KMAJOR, bool B_NMAJOR, class T>
TJ_DEVICE void dot_mfma(float (&acc)[LC::N], const T* sa, int lda, const T* sb, int ldb) {
  constexpr int PER = sizeof(T) == 4 ? 1 : 4; // operand elements per lane and K step
  using Blk = mfma::Block16<PER>;
  const int lane = lane_id();
  TJ_UNROLL for (int blk = 0; blk < LC::MT * LC::NTL; ++blk) {
    const int row0 = LC::wm() * LC::WTM + (blk / LC::NTL) * 16;
    const int col0 = LC::wn() * LC::WTN + (blk % LC::NTL) * 16;
    const int ar = row0 + Blk::a_row(lane), bc = col0 + Blk::b_col(lane);
    mfma_f32x4 d = {acc[blk * 4], acc[blk * 4 + 1], acc[blk * 4 + 2], acc[blk * 4 + 3]};
    for (int k0 = 0; k0 < K; k0 += Blk::K) {
      float a[4] = {0.f, 0.f, 0.f, 0.f}, b[4] = {0.f, 0.f, 0.f, 0.f};
      TJ_UNROLL for (int j = 0; j < PER; ++j) {
        const int ka = k0 + Blk::a_k(lane, j), kb = k0 + Blk::b_k(lane, j);
        if (ar < LC::R_ && ka < K)
          a[j] = cvt<float>(A_KMAJOR ? sa[ka * lda + ar] : sa[ar * lda + ka]);
        if (bc < LC::C_ && kb < K)
          b[j] = cvt<float>(B_NMAJOR ? sb[bc * ldb + kb] : sb[kb * ldb + bc]);
      }
      d = mfma_step<T>(a, b, d);
    }
    TJ_UNROLL for (int i = 0; i < 4; ++i) acc[blk * 4 + i] = d[i];
  }
}
#endif // __gfx90a__

} // namespace tj
