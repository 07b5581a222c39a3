// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") so that tilejit builds,
// loads and compiles on machines without an NVIDIA driver; only calls that need a GPU fail.
#pragma once

#include "runtime/cuda_abi.h"

#include <mutex>
#include <string>
#include <vector>

namespace tilejit {

/// Process-wide handle on libcuda. Loading and cuInit happen once, lazily, on the first call to
/// available()/get(), and never abort: without a driver or device, available() is false and
/// get() throws NoGpuError with a one-line reason.
///
/// The entry points are public members named like the C API (driver.cuMemAlloc(&p, n)), bound to
/// the versioned symbols cuda.h would pick (cuMemAlloc_v2, ...). Check results with check().
class CudaDriver {
public:
  /// True when libcuda loaded, cuInit succeeded and at least one device exists.
  static bool available();
  /// Why available() is false ("libcuda.so.1 not found (no NVIDIA driver on this machine)",
  /// "cuInit failed: CUDA_ERROR_NO_DEVICE: ..."); empty when available.
  static const std::string& unavailable_reason();
  /// The loaded driver; throws NoGpuError(unavailable_reason()) when there is none.
  static CudaDriver& get();
  /// Throws NoGpuError when the driver is unavailable; for code that only needs the check.
  static void require();

  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  /// Throws tilejit::Error("CUDA error CUDA_ERROR_X (n) in <what>: <description>") unless
  /// `result` is CUDA_SUCCESS.
  void check(cu::CUresult result, const char* what) const;
  /// "CUDA_ERROR_OUT_OF_MEMORY", or "CUDA error <n>" for codes the driver does not know.
  std::string error_name(cu::CUresult result) const;
  /// The driver's one-line description of `result`.
  std::string error_string(cu::CUresult result) const;

  /// cuDriverGetVersion: 13000 for CUDA 13.0.
  int driver_version() const { return driver_version_; }
  /// Number of CUDA devices (at least 1 when available()).
  int device_count() const { return device_count_; }
  /// The file dlopen resolved ("libcuda.so.1").
  const std::string& library_name() const { return library_name_; }

  /// Makes the primary context of device `ordinal` current on the calling thread (retaining it
  /// on first use) and returns it. The primary context is the one the CUDA runtime and PyTorch
  /// use, so pointers and streams from them are valid in tilejit launches and vice versa.
  cu::CUcontext ensure_context(int ordinal = 0);

  // ---- driver entry points (signatures as in cuda.h) ----
  cu::CUresult (*cuInit)(unsigned flags) = nullptr;
  cu::CUresult (*cuDriverGetVersion)(int* version) = nullptr;
  cu::CUresult (*cuGetErrorName)(cu::CUresult error, const char** str) = nullptr;
  cu::CUresult (*cuGetErrorString)(cu::CUresult error, const char** str) = nullptr;
  cu::CUresult (*cuDeviceGetCount)(int* count) = nullptr;
  cu::CUresult (*cuDeviceGet)(cu::CUdevice* device, int ordinal) = nullptr;
  cu::CUresult (*cuDeviceGetName)(char* name, int len, cu::CUdevice device) = nullptr;
  cu::CUresult (*cuDeviceGetAttribute)(int* value, int attribute, cu::CUdevice device) = nullptr;
  cu::CUresult (*cuDeviceTotalMem)(size_t* bytes, cu::CUdevice device) = nullptr;
  cu::CUresult (*cuDevicePrimaryCtxRetain)(cu::CUcontext* ctx, cu::CUdevice device) = nullptr;
  cu::CUresult (*cuCtxSetCurrent)(cu::CUcontext ctx) = nullptr;
  cu::CUresult (*cuCtxGetCurrent)(cu::CUcontext* ctx) = nullptr;
  cu::CUresult (*cuCtxSynchronize)() = nullptr;
  cu::CUresult (*cuModuleLoadData)(cu::CUmodule* module, const void* image) = nullptr;
  cu::CUresult (*cuModuleLoadDataEx)(cu::CUmodule* module, const void* image, unsigned num_options,
                                     int* options, void** option_values) = nullptr;
  cu::CUresult (*cuModuleUnload)(cu::CUmodule module) = nullptr;
  cu::CUresult (*cuModuleGetFunction)(cu::CUfunction* function, cu::CUmodule module,
                                      const char* name) = nullptr;
  cu::CUresult (*cuFuncGetAttribute)(int* value, int attribute, cu::CUfunction function) = nullptr;
  cu::CUresult (*cuFuncSetAttribute)(cu::CUfunction function, int attribute, int value) = nullptr;
  cu::CUresult (*cuLaunchKernel)(cu::CUfunction function, unsigned grid_x, unsigned grid_y,
                                 unsigned grid_z, unsigned block_x, unsigned block_y,
                                 unsigned block_z, unsigned shared_bytes, cu::CUstream stream,
                                 void** kernel_params, void** extra) = nullptr;
  cu::CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int* blocks, cu::CUfunction function,
                                                              int block_size,
                                                              size_t dynamic_shared) = nullptr;
  cu::CUresult (*cuMemAlloc)(cu::CUdeviceptr* ptr, size_t bytes) = nullptr;
  cu::CUresult (*cuMemFree)(cu::CUdeviceptr ptr) = nullptr;
  /// Stream-ordered allocation from the device's default memory pool (CUDA 11.2): the ops' work
  /// buffers, freed on their stream without a host wait.
  cu::CUresult (*cuMemAllocAsync)(cu::CUdeviceptr* ptr, size_t bytes,
                                  cu::CUstream stream) = nullptr;
  cu::CUresult (*cuMemFreeAsync)(cu::CUdeviceptr ptr, cu::CUstream stream) = nullptr;
  cu::CUresult (*cuMemGetInfo)(size_t* free_bytes, size_t* total_bytes) = nullptr;
  cu::CUresult (*cuMemcpyHtoD)(cu::CUdeviceptr dst, const void* src, size_t bytes) = nullptr;
  cu::CUresult (*cuMemcpyDtoH)(void* dst, cu::CUdeviceptr src, size_t bytes) = nullptr;
  cu::CUresult (*cuMemcpyDtoD)(cu::CUdeviceptr dst, cu::CUdeviceptr src, size_t bytes) = nullptr;
  cu::CUresult (*cuMemsetD8)(cu::CUdeviceptr dst, unsigned char value, size_t count) = nullptr;
  cu::CUresult (*cuMemsetD32)(cu::CUdeviceptr dst, unsigned value, size_t count) = nullptr;
  cu::CUresult (*cuMemsetD32Async)(cu::CUdeviceptr dst, unsigned value, size_t count,
                                   cu::CUstream stream) = nullptr;
  cu::CUresult (*cuStreamCreate)(cu::CUstream* stream, unsigned flags) = nullptr;
  cu::CUresult (*cuStreamDestroy)(cu::CUstream stream) = nullptr;
  cu::CUresult (*cuStreamSynchronize)(cu::CUstream stream) = nullptr;
  cu::CUresult (*cuEventCreate)(cu::CUevent* event, unsigned flags) = nullptr;
  cu::CUresult (*cuEventRecord)(cu::CUevent event, cu::CUstream stream) = nullptr;
  cu::CUresult (*cuEventSynchronize)(cu::CUevent event) = nullptr;
  cu::CUresult (*cuEventElapsedTime)(float* ms, cu::CUevent start, cu::CUevent end) = nullptr;
  cu::CUresult (*cuEventDestroy)(cu::CUevent event) = nullptr;
  /// Work queued on `stream` after this call waits for `event` (flags 0): streams ordered on
  /// the GPU without the host waiting (ring attention's compute and transfer streams).
  cu::CUresult (*cuStreamWaitEvent)(cu::CUstream stream, cu::CUevent event,
                                    unsigned flags) = nullptr;
  // CUDA graphs: a launch captured once and replayed, as serving engines run decode steps.
  cu::CUresult (*cuStreamBeginCapture)(cu::CUstream stream, int mode) = nullptr;
  cu::CUresult (*cuStreamEndCapture)(cu::CUstream stream, cu::CUgraph* graph) = nullptr;
  /// *status: 0 not capturing, 1 capturing, 2 a capture invalidated (CUstreamCaptureStatus).
  cu::CUresult (*cuStreamIsCapturing)(cu::CUstream stream, int* status) = nullptr;
  cu::CUresult (*cuGraphInstantiateWithFlags)(cu::CUgraphExec* exec, cu::CUgraph graph,
                                              unsigned long long flags) = nullptr;
  cu::CUresult (*cuGraphLaunch)(cu::CUgraphExec exec, cu::CUstream stream) = nullptr;
  cu::CUresult (*cuGraphExecDestroy)(cu::CUgraphExec exec) = nullptr;
  cu::CUresult (*cuGraphDestroy)(cu::CUgraph graph) = nullptr;
  /// Optional (CUDA 12 drivers and newer): null where the driver lacks it, and then no kernel
  /// is compiled with TMA copies (runtime.cpp asks has_tensor_maps()).
  cu::CUresult (*cuTensorMapEncodeTiled)(cu::CUtensorMap* map, int data_type, unsigned rank,
                                         void* global_address, const unsigned long long* dims,
                                         const unsigned long long* strides_bytes,
                                         const unsigned* box, const unsigned* element_strides,
                                         int interleave, int swizzle, int l2_promotion,
                                         int oob_fill) = nullptr;
  bool has_tensor_maps() const { return cuTensorMapEncodeTiled != nullptr; }

private:
  CudaDriver() = default;
  friend struct CudaDriverLoader;

  std::string library_name_;
  int driver_version_ = 0;
  int device_count_ = 0;
  std::mutex context_mutex_;                    // guards primary_contexts_
  std::vector<cu::CUcontext> primary_contexts_; // retained once per device, never released
};

} // namespace tilejit
