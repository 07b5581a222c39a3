// Module loading and kernel lookup (see cuda_module.h).
#include "runtime/cuda_module.h"

#include "runtime/cuda_driver.h"
#include "support/error.h"
#include "support/text.h"

#include <cstdint>
#include <utility>

namespace tilejit {

CudaModule CudaModule::load(std::string_view image, int device) {
  CudaDriver& d = CudaDriver::get();
  d.ensure_context(device);
  // cuModuleLoadData reads a cubin by its ELF header but PTX as a C string: copy so the image
  // is NUL-terminated whatever the caller's view ends with.
  std::string data(image);
  char error_log[4096] = {};
  int options[] = {cu::CU_JIT_ERROR_LOG_BUFFER, cu::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof error_log))};
  CudaModule m;
  m.device_ = device;
  cu::CUresult r = d.cuModuleLoadDataEx(&m.module_, data.c_str(), 2, options, values);
  if (r != cu::CUDA_SUCCESS) {
    m.module_ = nullptr;
    std::string log(trim(error_log));
    try {
      d.check(r, "cuModuleLoadDataEx");
    } catch (const Error& e) {
      throw Error(log.empty() ? std::string(e.what()) : str(e.what(), "\n", log));
    }
  }
  return m;
}

CudaModule::~CudaModule() {
  release();
}

CudaModule::CudaModule(CudaModule&& other) noexcept
    : module_(std::exchange(other.module_, nullptr)), device_(other.device_) {}

CudaModule& CudaModule::operator=(CudaModule&& other) noexcept {
  if (this != &other) {
    release();
    module_ = std::exchange(other.module_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

void CudaModule::release() noexcept {
  if (!module_) return;
  try {
    CudaDriver& d = CudaDriver::get();
    d.ensure_context(device_);
    d.cuModuleUnload(module_);
  } catch (...) { // a destructor cannot report; the driver may already be shut down at exit
  }
  module_ = nullptr;
}

cu::CUfunction CudaModule::function(const std::string& name) const {
  if (!module_) throw Error(str("cannot look up kernel '", name, "': no module loaded"));
  CudaDriver& d = CudaDriver::get();
  d.ensure_context(device_);
  cu::CUfunction f = nullptr;
  cu::CUresult r = d.cuModuleGetFunction(&f, module_, name.c_str());
  if (r != cu::CUDA_SUCCESS)
    throw Error(str("kernel '", name, "' not found in the loaded module (", d.error_name(r),
                    "); C++ kernels need their mangled name or extern \"C\""));
  return f;
}

} // namespace tilejit
