#include "runtime/hip_runtime.h"

#include "support/error.h"
#include "support/shared_library.h"
#include "support/text.h"

#include <tilejit/errors.h>

namespace tilejit {

namespace {
using hipError_t = int;
constexpr hipError_t hipSuccess = 0;
} // namespace

struct HipRuntime::Api {
  hipError_t (*hipInit)(unsigned) = nullptr;
  hipError_t (*hipGetDeviceCount)(int*) = nullptr;
  hipError_t (*hipSetDevice)(int) = nullptr;
  const char* (*hipGetErrorString)(hipError_t) = nullptr;
  hipError_t (*hipModuleLoadData)(void**, const void*) = nullptr;
  hipError_t (*hipModuleUnload)(void*) = nullptr;
  hipError_t (*hipModuleGetFunction)(void**, void*, const char*) = nullptr;
  hipError_t (*hipModuleLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, unsigned, void*, void**, void**) = nullptr;
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
    if (!missing.empty()) {
      out.reason = str("no AMD GPU: ", path, " has no ", missing);
      return out;
    }
    int count = 0;
    const hipError_t init = api->hipInit(0);
    const hipError_t counted = init == hipSuccess ? api->hipGetDeviceCount(&count) : init;
    if (counted != hipSuccess || count == 0) {
      const char* why = counted != hipSuccess && api->hipGetErrorString
                            ? api->hipGetErrorString(counted)
                            : "no device";
      out.reason = str("no AMD GPU: the HIP runtime (", path, ") found none (", why, ")");
      return out;
    }
    out.runtime.reset(new HipRuntime());
    out.runtime->api_ = std::move(api);
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
  if (result == hipSuccess) return;
  const char* s = api_->hipGetErrorString ? api_->hipGetErrorString(result) : nullptr;
  throw Error(str(what, " failed: ", s ? s : str("HIP error ", result)));
}

HipRuntime::Function HipRuntime::load(const std::string& code_object, const std::string& entry,
                                      int device) const {
  check(api_->hipSetDevice(device), "hipSetDevice");
  Function f;
  check(api_->hipModuleLoadData(&f.module, code_object.data()), "hipModuleLoadData");
  const hipError_t r = api_->hipModuleGetFunction(&f.function, f.module, entry.c_str());
  if (r != hipSuccess) {
    api_->hipModuleUnload(f.module);
    check(r, str("hipModuleGetFunction(", entry, ")"));
  }
  return f;
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

} // namespace tilejit
