// Typed tensor views: what a tilejit kernel launch takes as an argument. A view does not own
// its memory; it describes someone else's buffer (a tilejit DeviceBuffer, a PyTorch tensor).
#pragma once

#include <tilejit/dtype.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tilejit {

/// Where a tensor's memory lives.
enum class DeviceKind { CPU, CUDA };

/// A non-owning strided view: element (i0, i1, ...) is at
/// data + (i0 * strides[0] + i1 * strides[1] + ...) * dtype_size(dtype).
struct Tensor {
  void* data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides; ///< in elements, not bytes; one per dimension
  DeviceKind device = DeviceKind::CUDA;
  int device_index = 0;

  /// Product of the shape (1 for a rank-0 tensor).
  int64_t numel() const;
  int rank() const { return static_cast<int>(shape.size()); }
  /// Row-major dense: strides are the suffix products of the shape. Dimensions of size 1 may
  /// have any stride, and an empty tensor is contiguous (PyTorch's rule, so its views agree).
  bool is_contiguous() const;
  /// A row-major dense view of `data`.
  static Tensor contiguous(void* data, DType dtype, std::vector<int64_t> shape,
                           DeviceKind device = DeviceKind::CUDA);
  /// "f16[3, 32, 128] cuda:0"; a non-contiguous view adds its strides:
  /// "f32[4, 4] strides [1, 4] cpu".
  std::string describe() const;
};

} // namespace tilejit
