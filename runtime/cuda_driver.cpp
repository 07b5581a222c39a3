// Loads libcuda with dlopen and binds the entry points tilejit uses (see cuda_driver.h).
#include "runtime/cuda_driver.h"

#include "support/error.h"

#include <dlfcn.h>
#include <initializer_list>
#include <memory>

namespace tilejit {

namespace {

/// Outcome of the one-time load: a driver, or the reason there is none.
struct LoadResult {
  std::unique_ptr<CudaDriver> driver;
  std::string reason;
};

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}

} // namespace

/// Friend of CudaDriver that performs the one-time load.
struct CudaDriverLoader {
  // Binds `slot` to the first of `names` the library exports. Several names because cuda.h
  // maps some calls to versioned symbols (cuMemAlloc -> cuMemAlloc_v2); the plain symbol keeps
  // the old ABI, so the versioned one must come first.
  template <typename Fn>
  static bool bind(void* lib, Fn& slot, std::initializer_list<const char*> names,
                   std::string& missing) {
    for (const char* name : names) {
      if (void* sym = dlsym(lib, name)) {
        slot = reinterpret_cast<Fn>(sym);
        return true;
      }
    }
    if (missing.empty()) missing = *names.begin();
    return false;
  }

  static LoadResult load() {
    LoadResult out;
    const char* soname = "libcuda.so.1";
    // A process that already loaded libcuda (CUDA runtime, PyTorch) gets that same instance
    // back, so contexts and pointers are shared with it.
    void* lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      std::string err = dl_error();
      if (err.find("No such file") != std::string::npos)
        out.reason = "libcuda.so.1 not found (no NVIDIA driver on this machine)";
      else
        out.reason = str("cannot load libcuda.so.1: ", err);
      return out;
    }
    // The library stays loaded for the life of the process: module handles and contexts
    // outlive any scope we could close it in.
    std::unique_ptr<CudaDriver> d(new CudaDriver());
    d->library_name_ = soname;
    std::string missing;
    bool ok = true;
    ok &= bind(lib, d->cuInit, {"cuInit"}, missing);
    ok &= bind(lib, d->cuDriverGetVersion, {"cuDriverGetVersion"}, missing);
    ok &= bind(lib, d->cuGetErrorName, {"cuGetErrorName"}, missing);
    ok &= bind(lib, d->cuGetErrorString, {"cuGetErrorString"}, missing);
    ok &= bind(lib, d->cuDeviceGetCount, {"cuDeviceGetCount"}, missing);
    ok &= bind(lib, d->cuDeviceGet, {"cuDeviceGet"}, missing);
    ok &= bind(lib, d->cuDeviceGetName, {"cuDeviceGetName"}, missing);
    ok &= bind(lib, d->cuDeviceGetAttribute, {"cuDeviceGetAttribute"}, missing);
    ok &= bind(lib, d->cuDeviceTotalMem, {"cuDeviceTotalMem_v2"}, missing);
    ok &= bind(lib, d->cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, missing);
    ok &= bind(lib, d->cuCtxSetCurrent, {"cuCtxSetCurrent"}, missing);
    ok &= bind(lib, d->cuCtxGetCurrent, {"cuCtxGetCurrent"}, missing);
    ok &= bind(lib, d->cuCtxSynchronize, {"cuCtxSynchronize"}, missing);
    ok &= bind(lib, d->cuModuleLoadData, {"cuModuleLoadData"}, missing);
    ok &= bind(lib, d->cuModuleLoadDataEx, {"cuModuleLoadDataEx"}, missing);
    ok &= bind(lib, d->cuModuleUnload, {"cuModuleUnload"}, missing);
    ok &= bind(lib, d->cuModuleGetFunction, {"cuModuleGetFunction"}, missing);
    ok &= bind(lib, d->cuFuncGetAttribute, {"cuFuncGetAttribute"}, missing);
    ok &= bind(lib, d->cuFuncSetAttribute, {"cuFuncSetAttribute"}, missing);
    ok &= bind(lib, d->cuLaunchKernel, {"cuLaunchKernel"}, missing);
    ok &= bind(lib, d->cuOccupancyMaxActiveBlocksPerMultiprocessor,
               {"cuOccupancyMaxActiveBlocksPerMultiprocessor"}, missing);
    ok &= bind(lib, d->cuMemAlloc, {"cuMemAlloc_v2"}, missing);
    ok &= bind(lib, d->cuMemFree, {"cuMemFree_v2"}, missing);
    ok &= bind(lib, d->cuMemAllocAsync, {"cuMemAllocAsync"}, missing);
    ok &= bind(lib, d->cuMemFreeAsync, {"cuMemFreeAsync"}, missing);
    ok &= bind(lib, d->cuMemGetInfo, {"cuMemGetInfo_v2"}, missing);
    ok &= bind(lib, d->cuMemcpyHtoD, {"cuMemcpyHtoD_v2"}, missing);
    ok &= bind(lib, d->cuMemcpyDtoH, {"cuMemcpyDtoH_v2"}, missing);
    ok &= bind(lib, d->cuMemcpyDtoD, {"cuMemcpyDtoD_v2"}, missing);
    ok &= bind(lib, d->cuMemsetD8, {"cuMemsetD8_v2"}, missing);
    ok &= bind(lib, d->cuMemsetD32, {"cuMemsetD32_v2"}, missing);
    ok &= bind(lib, d->cuMemsetD32Async, {"cuMemsetD32Async"}, missing);
    ok &= bind(lib, d->cuStreamCreate, {"cuStreamCreate"}, missing);
    ok &= bind(lib, d->cuStreamDestroy, {"cuStreamDestroy_v2"}, missing);
    ok &= bind(lib, d->cuStreamSynchronize, {"cuStreamSynchronize"}, missing);
    ok &= bind(lib, d->cuEventCreate, {"cuEventCreate"}, missing);
    ok &= bind(lib, d->cuEventRecord, {"cuEventRecord"}, missing);
    ok &= bind(lib, d->cuEventSynchronize, {"cuEventSynchronize"}, missing);
    // CUDA 12.8 added cuEventElapsedTime_v2 (cuda.h 13 maps to it); older drivers only have
    // the plain symbol, whose signature is the same.
    ok &=
        bind(lib, d->cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, missing);
    ok &= bind(lib, d->cuEventDestroy, {"cuEventDestroy_v2"}, missing);
    ok &= bind(lib, d->cuStreamWaitEvent, {"cuStreamWaitEvent"}, missing);
    ok &= bind(lib, d->cuStreamBeginCapture, {"cuStreamBeginCapture_v2"}, missing);
    ok &= bind(lib, d->cuStreamEndCapture, {"cuStreamEndCapture"}, missing);
    ok &= bind(lib, d->cuStreamIsCapturing, {"cuStreamIsCapturing"}, missing);
    ok &= bind(lib, d->cuGraphInstantiateWithFlags, {"cuGraphInstantiateWithFlags"}, missing);
    ok &= bind(lib, d->cuGraphLaunch, {"cuGraphLaunch"}, missing);
    ok &= bind(lib, d->cuGraphExecDestroy, {"cuGraphExecDestroy"}, missing);
    ok &= bind(lib, d->cuGraphDestroy, {"cuGraphDestroy"}, missing);
    if (!ok) {
      out.reason = str("libcuda.so.1 has no ", missing, " (NVIDIA driver too old for tilejit)");
      return out;
    }
    std::string optional;
    bind(lib, d->cuTensorMapEncodeTiled, {"cuTensorMapEncodeTiled"}, optional);

    if (cu::CUresult r = d->cuInit(0); r != cu::CUDA_SUCCESS) {
      out.reason = str("cuInit failed: ", d->error_name(r), ": ", d->error_string(r));
      return out;
    }
    d->check(d->cuDriverGetVersion(&d->driver_version_), "cuDriverGetVersion");
    if (cu::CUresult r = d->cuDeviceGetCount(&d->device_count_); r != cu::CUDA_SUCCESS) {
      out.reason = str("cuDeviceGetCount failed: ", d->error_name(r), ": ", d->error_string(r));
      return out;
    }
    if (d->device_count_ <= 0) {
      out.reason = "no CUDA device found (the NVIDIA driver reports 0 devices)";
      return out;
    }
    d->primary_contexts_.assign(static_cast<size_t>(d->device_count_), nullptr);
    out.driver = std::move(d);
    return out;
  }

  static const LoadResult& loaded() {
    // A function-local static: initialised exactly once even when several threads race here.
    static const LoadResult result = [] {
      try {
        return load();
      } catch (const std::exception& e) {
        LoadResult failed;
        failed.reason = e.what();
        return failed;
      }
    }();
    return result;
  }
};

bool CudaDriver::available() {
  return CudaDriverLoader::loaded().driver != nullptr;
}

const std::string& CudaDriver::unavailable_reason() {
  return CudaDriverLoader::loaded().reason;
}

CudaDriver& CudaDriver::get() {
  const LoadResult& r = CudaDriverLoader::loaded();
  if (!r.driver) throw NoGpuError(r.reason);
  return *r.driver;
}

void CudaDriver::require() {
  get();
}

std::string CudaDriver::error_name(cu::CUresult result) const {
  const char* name = nullptr;
  if (cuGetErrorName && cuGetErrorName(result, &name) == cu::CUDA_SUCCESS && name) return name;
  return str("CUDA error ", result);
}

std::string CudaDriver::error_string(cu::CUresult result) const {
  const char* text = nullptr;
  if (cuGetErrorString && cuGetErrorString(result, &text) == cu::CUDA_SUCCESS && text) return text;
  return "unknown error";
}

void CudaDriver::check(cu::CUresult result, const char* what) const {
  if (result == cu::CUDA_SUCCESS) return;
  throw Error(str("CUDA error ", error_name(result), " (", result, ") in ", what, ": ",
                  error_string(result)));
}

cu::CUcontext CudaDriver::ensure_context(int ordinal) {
  if (ordinal < 0 || ordinal >= device_count_)
    throw Error(str("CUDA device ", ordinal, " does not exist: this machine has ", device_count_,
                    " device", device_count_ == 1 ? "" : "s"));
  cu::CUcontext ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(context_mutex_);
    ctx = primary_contexts_[static_cast<size_t>(ordinal)];
    if (!ctx) {
      cu::CUdevice dev = 0;
      check(cuDeviceGet(&dev, ordinal), "cuDeviceGet");
      check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
      primary_contexts_[static_cast<size_t>(ordinal)] = ctx;
    }
  }
  // The current context is per thread and other libraries may change it, so ask the driver
  // rather than caching it (cuCtxGetCurrent is a cheap thread-local read).
  cu::CUcontext current = nullptr;
  check(cuCtxGetCurrent(&current), "cuCtxGetCurrent");
  if (current != ctx) check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  return ctx;
}

} // namespace tilejit
