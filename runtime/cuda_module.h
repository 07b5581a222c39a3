// A loaded CUDA module (RAII over cuModuleLoadDataEx/cuModuleUnload) and kernel lookup in it.
#pragma once

#include "runtime/cuda_abi.h"

#include <string>
#include <string_view>

namespace tilejit {

/// A cubin (or PTX, JIT-compiled by the driver) loaded into the primary context of a device.
/// Move-only; unloads on destruction.
class CudaModule {
public:
  CudaModule() = default;
  /// Loads `image` on device `device`. Throws NoGpuError without a GPU, and tilejit::Error
  /// with the driver's JIT log when the image does not load (e.g. a cubin for another arch:
  /// CUDA_ERROR_NO_BINARY_FOR_GPU).
  static CudaModule load(std::string_view image, int device = 0);
  ~CudaModule();
  CudaModule(CudaModule&& other) noexcept;
  CudaModule& operator=(CudaModule&& other) noexcept;
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;

  /// The __global__ function `name` (its mangled name for C++ kernels); throws
  /// tilejit::Error naming it when the module has no such kernel.
  cu::CUfunction function(const std::string& name) const;
  cu::CUmodule handle() const { return module_; }
  int device() const { return device_; }

private:
  void release() noexcept;
  cu::CUmodule module_ = nullptr;
  int device_ = 0;
};

} // namespace tilejit
