#include "runtime/hip_runtime.h"

// hipDeviceProp_t as the Debian ROCm 5.2 headers lay it out (libamdhip64-dev): only its type
// is used, the functions are dlopen'd. ROCm 6 keeps this layout behind the plain
// `hipGetDeviceProperties` symbol (its new layout is `hipGetDevicePropertiesR0600`).
#define __HIP_PLATFORM_AMD__ 1
#include <hip/hip_runtime_api.h>

#include "support/error.h"
#include "support/shared_library.h"
#include "support/text.h"

#include <tilejit/errors.h>

#include <cstring>

namespace tilejit {

namespace {
using HipStatus = int; // hipError_t's values, through the dlopen'd functions
constexpr HipStatus kHipSuccess = 0;
} // namespace

struct HipRuntime::Api {
  HipStatus (*hipInit)(unsigned) = nullptr;
  HipStatus (*hipGetDeviceCount)(int*) = nullptr;
  HipStatus (*hipSetDevice)(int) = nullptr;
  const char* (*hipGetErrorString)(HipStatus) = nullptr;
  HipStatus (*hipModuleLoadData)(void**, const void*) = nullptr;
  HipStatus (*hipModuleUnload)(void*) = nullptr;
  HipStatus (*hipModuleGetFunction)(void**, void*, const char*) = nullptr;
  HipStatus (*hipModuleLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned,
                                     unsigned, unsigned, void*, void**, void**) = nullptr;
  HipStatus (*hipGetDeviceProperties)(hipDeviceProp_t*, int) = nullptr;
  HipStatus (*hipRuntimeGetVersion)(int*) = nullptr;
  HipStatus (*hipDriverGetVersion)(int*) = nullptr;
  HipStatus (*hipEventCreate)(void**) = nullptr;
  HipStatus (*hipEventDestroy)(void*) = nullptr;
  HipStatus (*hipEventRecord)(void*, void*) = nullptr;
  HipStatus (*hipEventSynchronize)(void*) = nullptr;
  HipStatus (*hipEventElapsedTime)(float*, void*, void*) = nullptr;
  HipStatus (*hipMalloc)(void**, size_t) = nullptr;
  HipStatus (*hipFree)(void*) = nullptr;
  HipStatus (*hipMemsetD32Async)(void*, int, size_t, void*) = nullptr;
  HipStatus (*hipStreamSynchronize)(void*) = nullptr;
  HipStatus (*hipMemcpy)(void*, const void*, size_t, int) = nullptr;
  HipStatus (*hipMemset)(void*, int, size_t) = nullptr;
  HipStatus (*hipDeviceSynchronize)() = nullptr;
};

/// Friend of HipRuntime that performs the one-time load and device count.
struct HipRuntimeLoader {
  struct Result {
    std::unique_ptr<HipRuntime> runtime;
    std::string reason;
  };
  static Result load() {
    Result out;
    std::string path;
    const std::vector<std::string> names = {"libamdhip64.so.6", "libamdhip64.so.5",
                                            "libamdhip64.so", "/opt/rocm/lib/libamdhip64.so"};
    void* lib = open_first_library(names, path);
    if (!lib) {
      out.reason =
          str("no AMD GPU: the HIP runtime is not installed (tried ", join(names, ", "), ")");
      return out;
    }
    auto api = std::make_unique<HipRuntime::Api>();
    std::string missing;
    bind_symbol(lib, api->hipInit, "hipInit", missing);
    bind_symbol(lib, api->hipGetDeviceCount, "hipGetDeviceCount", missing);
    bind_symbol(lib, api->hipSetDevice, "hipSetDevice", missing);
    bind_symbol(lib, api->hipGetErrorString, "hipGetErrorString", missing);
    bind_symbol(lib, api->hipModuleLoadData, "hipModuleLoadData", missing);
    bind_symbol(lib, api->hipModuleUnload, "hipModuleUnload", missing);
    bind_symbol(lib, api->hipModuleGetFunction, "hipModuleGetFunction", missing);
    bind_symbol(lib, api->hipModuleLaunchKernel, "hipModuleLaunchKernel", missing);
    bind_symbol(lib, api->hipGetDeviceProperties, "hipGetDeviceProperties", missing);
    bind_symbol(lib, api->hipRuntimeGetVersion, "hipRuntimeGetVersion", missing);
    bind_symbol(lib, api->hipDriverGetVersion, "hipDriverGetVersion", missing);
    bind_symbol(lib, api->hipEventCreate, "hipEventCreate", missing);
    bind_symbol(lib, api->hipEventDestroy, "hipEventDestroy", missing);
    bind_symbol(lib, api->hipEventRecord, "hipEventRecord", missing);
    bind_symbol(lib, api->hipEventSynchronize, "hipEventSynchronize", missing);
    bind_symbol(lib, api->hipEventElapsedTime, "hipEventElapsedTime", missing);
    bind_symbol(lib, api->hipMalloc, "hipMalloc", missing);
    bind_symbol(lib, api->hipFree, "hipFree", missing);
    bind_symbol(lib, api->hipMemsetD32Async, "hipMemsetD32Async", missing);
    bind_symbol(lib, api->hipStreamSynchronize, "hipStreamSynchronize", missing);
    bind_symbol(lib, api->hipMemcpy, "hipMemcpy", missing);
    bind_symbol(lib, api->hipMemset, "hipMemset", missing);
    bind_symbol(lib, api->hipDeviceSynchronize, "hipDeviceSynchronize", missing);
    if (!missing.empty()) {
      out.reason = str("no AMD GPU: ", path, " has no ", missing);
      return out;
    }
    int count = 0;
    const HipStatus init = api->hipInit(0);
    const HipStatus counted = init == kHipSuccess ? api->hipGetDeviceCount(&count) : init;
    if (counted != kHipSuccess || count == 0) {
      const char* why = counted != kHipSuccess && api->hipGetErrorString
                            ? api->hipGetErrorString(counted)
                            : "no device";
      out.reason = str("no AMD GPU: the HIP runtime (", path, ") found none (", why, ")");
      return out;
    }
    out.runtime.reset(new HipRuntime());
    out.runtime->api_ = std::move(api);
    out.runtime->device_count_ = count;
    return out;
  }
};

HipRuntime::~HipRuntime() = default;

const HipRuntime& HipRuntime::get() {
  static const HipRuntimeLoader::Result r = HipRuntimeLoader::load();
  if (!r.runtime) throw NoGpuError(r.reason);
  return *r.runtime;
}

void HipRuntime::check(int result, const std::string& what) const {
  if (result == kHipSuccess) return;
  const char* s = api_->hipGetErrorString ? api_->hipGetErrorString(result) : nullptr;
  throw Error(str(what, " failed: ", s ? s : str("HIP error ", result)));
}

HipRuntime::Function HipRuntime::load(const std::string& code_object, const std::string& entry,
                                      int device) const {
  check(api_->hipSetDevice(device), "hipSetDevice");
  Function f;
  check(api_->hipModuleLoadData(&f.module, code_object.data()), "hipModuleLoadData");
  const HipStatus r = api_->hipModuleGetFunction(&f.function, f.module, entry.c_str());
  if (r != kHipSuccess) {
    api_->hipModuleUnload(f.module);
    check(r, str("hipModuleGetFunction(", entry, ")"));
  }
  return f;
}

void* HipRuntime::allocate(size_t bytes, int device) const {
  check(api_->hipSetDevice(device), "hipSetDevice");
  void* p = nullptr;
  check(api_->hipMalloc(&p, bytes), str("hipMalloc(", bytes, " bytes)"));
  return p;
}

void HipRuntime::release(void* p) const {
  if (p) api_->hipFree(p);
}

void HipRuntime::copy_to_device(void* device_ptr, const void* host, size_t bytes,
                                int device) const {
  check(api_->hipSetDevice(device), "hipSetDevice");
  check(api_->hipMemcpy(device_ptr, host, bytes, hipMemcpyHostToDevice), "hipMemcpy (to device)");
}

void HipRuntime::copy_to_host(void* host, const void* device_ptr, size_t bytes, int device) const {
  check(api_->hipSetDevice(device), "hipSetDevice");
  check(api_->hipMemcpy(host, device_ptr, bytes, hipMemcpyDeviceToHost), "hipMemcpy (to host)");
}

void HipRuntime::copy_on_device(void* dst, const void* src, size_t bytes, int device) const {
  check(api_->hipSetDevice(device), "hipSetDevice");
  check(api_->hipMemcpy(dst, src, bytes, hipMemcpyDeviceToDevice), "hipMemcpy (on the device)");
}

void HipRuntime::fill_bytes(void* device_ptr, uint8_t value, size_t bytes, int device) const {
  check(api_->hipSetDevice(device), "hipSetDevice");
  check(api_->hipMemset(device_ptr, value, bytes), "hipMemset");
  // hipMemset may return before the device is done, like cuMemsetD8: wait, so that work on
  // any stream sees the fill.
  check(api_->hipDeviceSynchronize(), "hipDeviceSynchronize after hipMemset");
}

void HipRuntime::device_synchronize(int device) const {
  check(api_->hipSetDevice(device), "hipSetDevice");
  check(api_->hipDeviceSynchronize(), "hipDeviceSynchronize");
}

int HipRuntime::shared_memory_per_block(int device) const {
  hipDeviceProp_t props{};
  check(api_->hipGetDeviceProperties(&props, device), "hipGetDeviceProperties");
  return static_cast<int>(props.sharedMemPerBlock);
}

void HipRuntime::memset_d32_async(void* p, unsigned value, size_t count, void* stream) const {
  check(api_->hipMemsetD32Async(p, static_cast<int>(value), count, stream), "hipMemsetD32Async");
}

void HipRuntime::stream_synchronize(void* stream) const {
  check(api_->hipStreamSynchronize(stream), "hipStreamSynchronize");
}

void HipRuntime::unload(const Function& f) const {
  if (f.module) api_->hipModuleUnload(f.module);
}

void HipRuntime::launch(const Function& f, const std::array<int64_t, 3>& grid, int threads,
                        int64_t smem_bytes, void* stream, void** args,
                        const std::string& name) const {
  check(api_->hipModuleLaunchKernel(f.function, static_cast<unsigned>(grid[0]),
                                    static_cast<unsigned>(grid[1]), static_cast<unsigned>(grid[2]),
                                    static_cast<unsigned>(threads), 1, 1,
                                    static_cast<unsigned>(smem_bytes), stream, args, nullptr),
        str("hipModuleLaunchKernel(", name, ")"));
}

HipRuntime::DeviceIdentity HipRuntime::identity(int device) const {
  hipDeviceProp_t props{};
  check(api_->hipGetDeviceProperties(&props, device), "hipGetDeviceProperties");
  DeviceIdentity id;
  id.name = std::string(props.name, strnlen(props.name, sizeof(props.name)));
  id.gfx = std::string(props.gcnArchName, strnlen(props.gcnArchName, sizeof(props.gcnArchName)));
  id.compute_units = props.multiProcessorCount;
  check(api_->hipRuntimeGetVersion(&id.runtime_version), "hipRuntimeGetVersion");
  check(api_->hipDriverGetVersion(&id.driver_version), "hipDriverGetVersion");
  return id;
}

void* HipRuntime::event_create(int device) const {
  check(api_->hipSetDevice(device), "hipSetDevice");
  void* e = nullptr;
  check(api_->hipEventCreate(&e), "hipEventCreate");
  return e;
}

void HipRuntime::event_destroy(void* event) const {
  if (event) api_->hipEventDestroy(event);
}

void HipRuntime::event_record(void* event, void* stream) const {
  check(api_->hipEventRecord(event, stream), "hipEventRecord");
}

float HipRuntime::event_elapsed_ms(void* start, void* stop) const {
  check(api_->hipEventSynchronize(stop), "hipEventSynchronize");
  float ms = 0;
  check(api_->hipEventElapsedTime(&ms, start, stop), "hipEventElapsedTime");
  return ms;
}

} // namespace tilejit
