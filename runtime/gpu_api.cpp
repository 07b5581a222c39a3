// The API a Runtime's launches go through (see gpu_api.h).
#include "runtime/gpu_api.h"

#include "compiler/target.h"
#include "runtime/cuda_driver.h"
#include "runtime/device_info.h"
#include "runtime/hip_runtime.h"

#include <cstdint>

namespace tilejit {

GpuApi gpu_api(const Runtime& rt) {
  return target_for(rt.arch()).language() == "hip" ? GpuApi::hip : GpuApi::cuda;
}

const char* gpu_api_name(GpuApi api) {
  return api == GpuApi::hip ? "HIP" : "CUDA";
}

void synchronize_device(GpuApi api, int device) {
  if (api == GpuApi::hip) return HipRuntime::get().device_synchronize(device);
  CudaDriver& d = CudaDriver::get();
  d.ensure_context(device);
  d.check(d.cuCtxSynchronize(), "cuCtxSynchronize");
}

void synchronize_stream(GpuApi api, void* stream) {
  if (api == GpuApi::hip) return HipRuntime::get().stream_synchronize(stream);
  CudaDriver& d = CudaDriver::get();
  d.check(d.cuStreamSynchronize(static_cast<cu::CUstream>(stream)), "cuStreamSynchronize");
}

namespace {
cu::CUdeviceptr address(const void* p) {
  return static_cast<cu::CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
}
} // namespace

void copy_on_device(GpuApi api, int device, void* dst, const void* src, size_t bytes) {
  if (api == GpuApi::hip) return HipRuntime::get().copy_on_device(dst, src, bytes, device);
  CudaDriver& d = CudaDriver::get();
  d.ensure_context(device);
  d.check(d.cuMemcpyDtoD(address(dst), address(src), bytes), "cuMemcpyDtoD");
}

void copy_to_host(GpuApi api, int device, void* host, const void* src, size_t bytes) {
  if (api == GpuApi::hip) return HipRuntime::get().copy_to_host(host, src, bytes, device);
  CudaDriver& d = CudaDriver::get();
  d.ensure_context(device);
  d.check(d.cuMemcpyDtoH(host, address(src), bytes), "cuMemcpyDtoH");
}

int shared_memory_limit(Runtime& rt) {
  if (gpu_api(rt) == GpuApi::hip)
    return HipRuntime::get().shared_memory_per_block(rt.device_ordinal());
  return rt.device().smem_per_block_optin;
}

} // namespace tilejit
