// Stream-ordered work buffers of an op call (op_buffers.h).
#include "workloads/op_buffers.h"

#include "runtime/cuda_driver.h"

namespace tilejit::ops {

Tensor CallBuffers::allocate(DType dtype, std::vector<int64_t> shape, int device) {
  Tensor t = Tensor::contiguous(nullptr, dtype, std::move(shape));
  t.device_index = device;
  if (size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(dtype)) {
    CudaDriver& d = CudaDriver::get();
    d.ensure_context(device);
    cu::CUdeviceptr p = 0;
    d.check(d.cuMemAllocAsync(&p, bytes, static_cast<cu::CUstream>(stream_)), "cuMemAllocAsync");
    blocks_.push_back({p, device});
    t.data = reinterpret_cast<void*>(static_cast<uintptr_t>(p));
  }
  return t;
}

CallBuffers::~CallBuffers() {
  // A destructor cannot report failure; at process exit the driver may be gone already.
  try {
    CudaDriver& d = CudaDriver::get();
    for (const Block& b : blocks_) {
      d.ensure_context(b.device);
      d.cuMemFreeAsync(b.ptr, static_cast<cu::CUstream>(stream_));
    }
  } catch (...) {
  }
}

} // namespace tilejit::ops
