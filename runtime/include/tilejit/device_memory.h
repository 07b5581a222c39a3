// Owned GPU memory for applications that have no CUDA allocator of their own (a framework's
// tensors pass as tilejit::Tensor views instead).
#pragma once

#include <tilejit/tensor.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace tilejit {

/// `bytes` of global memory on device `device`, freed with the last copy of this handle.
/// Throws NoGpuError without a GPU, tilejit::Error when the allocation fails.
class DeviceMemory {
public:
  explicit DeviceMemory(size_t bytes, int device = 0);
  void upload(const void* host, size_t bytes, size_t offset = 0);
  void download(void* host, size_t bytes, size_t offset = 0) const;
  void* data() const;
  size_t size() const;
  /// A dense row-major view of this memory as a tensor of `dtype` and `shape`.
  Tensor view(DType dtype, std::vector<int64_t> shape) const;

private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

} // namespace tilejit
