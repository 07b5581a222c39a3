// Owned device memory (RAII over cuMemAlloc/cuMemFree, or hipMalloc/hipFree on an AMD GPU) for
// the tuner, tests and benchmarks.
#pragma once

#include "runtime/cuda_abi.h"
#include "runtime/gpu_api.h"

#include <cstddef>
#include <cstdint>

namespace tilejit {

/// A block of global memory on one device, freed on destruction. Move-only. Copies and fills
/// use the legacy default stream and return when the host memory may be reused; work on that
/// stream (or on blocking streams) sees their result.
class DeviceBuffer {
public:
  /// An empty buffer (no allocation, no driver needed).
  DeviceBuffer() = default;
  /// Allocates `bytes` on device `device` of `api` (contents undefined); throws NoGpuError
  /// without such a GPU ("no AMD GPU: ..." for HIP) and tilejit::Error
  /// (CUDA_ERROR_OUT_OF_MEMORY, ...) when allocation fails.
  explicit DeviceBuffer(size_t bytes, int device = 0, GpuApi api = GpuApi::cuda);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// Copies `bytes` from host memory into the buffer at byte `offset`.
  void upload(const void* host, size_t bytes, size_t offset = 0);
  /// Copies `bytes` from the buffer at byte `offset` into host memory.
  void download(void* host, size_t bytes, size_t offset = 0) const;
  /// Sets every byte to `value` (0xFF poisons float outputs with NaN).
  void fill_byte(uint8_t value);

  /// Device address (0 when empty), as a kernel argument takes it.
  cu::CUdeviceptr ptr() const { return ptr_; }
  /// The same address as a pointer, for a Tensor view.
  void* data() const { return reinterpret_cast<void*>(static_cast<uintptr_t>(ptr_)); }
  size_t size() const { return size_; }
  int device() const { return device_; }
  GpuApi api() const { return api_; }

private:
  void check_range(const char* what, size_t bytes, size_t offset) const;
  void release() noexcept;

  cu::CUdeviceptr ptr_ = 0;
  size_t size_ = 0;
  int device_ = 0;
  GpuApi api_ = GpuApi::cuda;
};

} // namespace tilejit
