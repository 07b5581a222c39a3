// Device memory a typed op allocates (outputs the caller did not give, work buffers), owned by
// the op's result or by the call.
#pragma once

#include "runtime/device_buffer.h"

#include <tilejit/tensor.h>

#include <vector>

namespace tilejit::ops {

struct OwnedBuffers {
  std::vector<DeviceBuffer> buffers;
  /// A dense tensor of `shape` on `device` (no memory for an empty one).
  Tensor allocate(DType dtype, std::vector<int64_t> shape, int device) {
    Tensor t = Tensor::contiguous(nullptr, dtype, std::move(shape));
    t.device_index = device;
    if (size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(dtype)) {
      buffers.emplace_back(bytes, device);
      t.data = buffers.back().data();
    }
    return t;
  }
};

} // namespace tilejit::ops
