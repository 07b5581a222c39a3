// Device memory a typed op allocates: outputs the caller did not give (owned by the op's
// result) and work buffers (stream-ordered, owned by the call).
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

/// Work buffers of one op call on `stream` (a CUstream; null: the legacy default stream):
/// taken from the device's stream-ordered memory pool (cuMemAllocAsync) and given back on the
/// same stream when this goes (cuMemFreeAsync), after the launches that use them are queued.
/// cuMemFree would make the host wait for the device at every call (a backward op in a
/// training loop stalled its launch queue), and the pool's memory is reused by the next call.
class CallBuffers {
public:
  explicit CallBuffers(void* stream) : stream_(stream) {}
  ~CallBuffers();
  CallBuffers(const CallBuffers&) = delete;
  CallBuffers& operator=(const CallBuffers&) = delete;
  /// A dense tensor of `shape` on `device` (no memory for an empty one).
  Tensor allocate(DType dtype, std::vector<int64_t> shape, int device);

private:
  void* stream_;
  struct Block {
    cu::CUdeviceptr ptr;
    int device;
  };
  std::vector<Block> blocks_;
};

} // namespace tilejit::ops
