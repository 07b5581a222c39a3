// A global tensor argument: pointer, sizes and strides (in elements). The host packs it with
// the same layout (runtime/kernel_args.cpp): 8-byte pointer, then R sizes, then R strides, each
// of type I.
#pragma once

namespace tj {

template <class T, int R, class I = long long> struct Tensor {
  T* ptr;
  I shape[R];
  I stride[R];
};

/// Sizes and strides in 32 bits, for kernels whose launcher proved that every offset fits (the
/// ones indexed with 32-bit arithmetic anyway): half the parameter bytes, so fewer
/// constant-cache lines to fetch, one miss after another, when a block starts.
template <class T, int R> using Tensor32 = Tensor<T, R, int>;

/// A 64-bit subscript in a kernel indexed with 32-bit arithmetic (every size fits in an int):
/// one outside int's range is out of bounds, so it becomes INT_MIN, which stays out of bounds
/// after a tile's offsets are added, instead of wrapping to a small in-bounds index.
__device__ __forceinline__ int narrow_index(long long v) {
  return v == static_cast<long long>(static_cast<int>(v)) ? static_cast<int>(v) : (-2147483647 - 1);
}
__device__ __forceinline__ int narrow_index(unsigned long long v) {
  return v <= 2147483647ull ? static_cast<int>(v) : (-2147483647 - 1);
}

} // namespace tj
