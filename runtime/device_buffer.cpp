// RAII device memory (see device_buffer.h).
#include "runtime/device_buffer.h"

#include "runtime/cuda_driver.h"
#include "runtime/hip_runtime.h"
#include "support/error.h"

#include <utility>

namespace tilejit {

namespace {
void* as_pointer(cu::CUdeviceptr p) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(p));
}
} // namespace

DeviceBuffer::DeviceBuffer(size_t bytes, int device, GpuApi api)
    : size_(bytes), device_(device), api_(api) {
  if (api == GpuApi::hip) {
    const HipRuntime& hip = HipRuntime::get(); // "no AMD GPU: ..." without one
    if (bytes)
      ptr_ = static_cast<cu::CUdeviceptr>(reinterpret_cast<uintptr_t>(hip.allocate(bytes, device)));
    return;
  }
  CudaDriver& d = CudaDriver::get();
  d.ensure_context(device);
  // cuMemAlloc rejects 0 bytes; an empty buffer needs no memory.
  if (bytes == 0) return;
  d.check(d.cuMemAlloc(&ptr_, bytes), "cuMemAlloc");
}

DeviceBuffer::~DeviceBuffer() {
  release();
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)), size_(std::exchange(other.size_, 0)),
      device_(other.device_), api_(other.api_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    ptr_ = std::exchange(other.ptr_, 0);
    size_ = std::exchange(other.size_, 0);
    device_ = other.device_;
    api_ = other.api_;
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (!ptr_) return;
  // A destructor cannot report failure; at process exit the driver may already be shut down
  // (CUDA_ERROR_DEINITIALIZED), which is harmless.
  try {
    if (api_ == GpuApi::hip) {
      HipRuntime::get().release(as_pointer(ptr_));
    } else {
      CudaDriver& d = CudaDriver::get();
      d.ensure_context(device_);
      d.cuMemFree(ptr_);
    }
  } catch (...) {
  }
  ptr_ = 0;
  size_ = 0;
}

void DeviceBuffer::check_range(const char* what, size_t bytes, size_t offset) const {
  if (offset > size_ || bytes > size_ - offset)
    throw Error(str("DeviceBuffer::", what, " of ", bytes, " bytes at offset ", offset,
                    " overruns the ", size_, "-byte buffer"));
}

void DeviceBuffer::upload(const void* host, size_t bytes, size_t offset) {
  check_range("upload", bytes, offset);
  if (bytes == 0) return;
  if (api_ == GpuApi::hip)
    return HipRuntime::get().copy_to_device(as_pointer(ptr_ + offset), host, bytes, device_);
  CudaDriver& d = CudaDriver::get();
  d.ensure_context(device_);
  d.check(d.cuMemcpyHtoD(ptr_ + offset, host, bytes), "cuMemcpyHtoD");
}

void DeviceBuffer::download(void* host, size_t bytes, size_t offset) const {
  check_range("download", bytes, offset);
  if (bytes == 0) return;
  if (api_ == GpuApi::hip)
    return HipRuntime::get().copy_to_host(host, as_pointer(ptr_ + offset), bytes, device_);
  CudaDriver& d = CudaDriver::get();
  d.ensure_context(device_);
  d.check(d.cuMemcpyDtoH(host, ptr_ + offset, bytes), "cuMemcpyDtoH");
}

void DeviceBuffer::fill_byte(uint8_t value) {
  if (size_ == 0) return;
  if (api_ == GpuApi::hip) return HipRuntime::get().fill_bytes(data(), value, size_, device_);
  CudaDriver& d = CudaDriver::get();
  d.ensure_context(device_);
  d.check(d.cuMemsetD8(ptr_, value, size_), "cuMemsetD8");
  // cuMemsetD8 is asynchronous with respect to the host for device memory; synchronise so the
  // fill is complete before anything on another stream reads the buffer.
  d.check(d.cuCtxSynchronize(), "cuCtxSynchronize after cuMemsetD8");
}

} // namespace tilejit
