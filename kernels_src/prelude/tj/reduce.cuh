// Reductions: combining per-thread partial results across the lanes of a warp (shuffles) and
// across warps (shared memory). The per-thread part is generated inline (it fuses the
// elementwise expression being reduced); these finish one reduction each.
#pragma once

#include "tj/layouts.cuh"

namespace tj {

template <class T> TJ_DEVICE T shfl_xor(T v, int mask) {
#ifdef TJ_AMD
  return __shfl_xor(v, mask); // the whole wavefront, as the CUDA form's full mask
#else
  return __shfl_xor_sync(0xffffffffu, v, mask);
#endif
}

/// Finishes a reduction of layout L along AXIS: v holds this thread's partial values in the
/// Slice<L, AXIS> arrangement; afterwards every thread holds the full results for its slice
/// coordinates. `scratch` needs warps_along<AXIS> * EXTENT elements when warps split AXIS.
/// SYNC_AFTER: end with a barrier so the scratch can be reused at once (generated code
/// alternates two scratch regions instead and passes false).
template <class L, int AXIS, class Op, bool SYNC_AFTER = true, class T, int SN>
TJ_DEVICE void reduce_finish(T (&v)[SN], T* scratch) {
  constexpr int bits = L::template lane_bits<AXIS>();
  TJ_UNROLL for (int s = 0; s < SN; ++s) {
    TJ_UNROLL for (int off = kWarp / 2; off >= 1; off >>= 1) {
      if (bits & off) v[s] = Op::apply(v[s], shfl_xor(v[s], off));
    }
  }
  constexpr int W = L::template warps_along<AXIS>();
  if constexpr (W > 1) {
    using S = Slice<L, AXIS>;
    constexpr int EXT = S::EXTENT;
    const int wp = L::template warp_pos<AXIS>();
    if ((lane_id() & bits) == 0) {
      TJ_UNROLL for (int s = 0; s < SN; ++s) {
        if (S::valid(s)) scratch[wp * EXT + S::c(s)] = v[s];
      }
    }
    block_sync();
    TJ_UNROLL for (int s = 0; s < SN; ++s) {
      if (S::valid(s)) {
        T acc = Op::template identity<T>();
        TJ_UNROLL for (int w = 0; w < W; ++w) acc = Op::apply(acc, scratch[w * EXT + S::c(s)]);
        v[s] = acc;
      }
    }
    if (SYNC_AFTER) block_sync();
  }
}

/// Combines one value per thread over the whole block; every thread gets the result.
/// `scratch` needs NT / kWarp elements.
template <class Op, int NT, bool SYNC_AFTER = true, class T>
TJ_DEVICE T block_reduce(T v, T* scratch) {
  TJ_UNROLL for (int off = kWarp / 2; off >= 1; off >>= 1) v = Op::apply(v, shfl_xor(v, off));
  if constexpr (NT > kWarp) {
    if (lane_id() == 0) scratch[warp_id()] = v;
    block_sync();
    T acc = Op::template identity<T>();
    TJ_UNROLL for (int w = 0; w < NT / kWarp; ++w) acc = Op::apply(acc, scratch[w]);
    if (SYNC_AFTER) block_sync();
    return acc;
  } else {
    return v;
  }
}

} // namespace tj
