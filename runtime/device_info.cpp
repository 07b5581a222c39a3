// Device properties through the driver API (see device_info.h).
#include "runtime/device_info.h"

#include "runtime/cuda_driver.h"
#include "support/error.h"

namespace tilejit {

std::string DeviceInfo::arch() const {
  std::string base = str("sm_", cc_major, cc_minor);
  if ((cc_major == 9 && cc_minor == 0) || (cc_major == 10 && cc_minor == 0)) return base + "a";
  return base;
}

DeviceInfo query_device(int ordinal) {
  CudaDriver& d = CudaDriver::get();
  if (ordinal < 0 || ordinal >= d.device_count())
    throw Error(str("CUDA device ", ordinal, " does not exist: this machine has ", d.device_count(),
                    " device", d.device_count() == 1 ? "" : "s"));
  cu::CUdevice dev = 0;
  d.check(d.cuDeviceGet(&dev, ordinal), "cuDeviceGet");

  DeviceInfo info;
  char name[256] = {};
  d.check(d.cuDeviceGetName(name, sizeof name - 1, dev), "cuDeviceGetName");
  info.name = name;
  size_t total = 0;
  d.check(d.cuDeviceTotalMem(&total, dev), "cuDeviceTotalMem");
  info.total_mem = static_cast<int64_t>(total);
  info.driver_version = d.driver_version();

  auto attr = [&](int attribute, const char* what) {
    int value = 0;
    d.check(d.cuDeviceGetAttribute(&value, attribute, dev), what);
    return value;
  };
  // Memory clock and bus width are informational, and newer drivers may stop reporting them
  // (CUDA 13 dropped them from the runtime's device properties), so a failure reads as 0.
  auto optional_attr = [&](int attribute) {
    int value = 0;
    return d.cuDeviceGetAttribute(&value, attribute, dev) == cu::CUDA_SUCCESS ? value : 0;
  };
  using namespace cu;
  info.cc_major =
      attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "cuDeviceGetAttribute(cc major)");
  info.cc_minor =
      attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "cuDeviceGetAttribute(cc minor)");
  info.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "cuDeviceGetAttribute(SM count)");
  info.smem_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
                             "cuDeviceGetAttribute(shared memory per block)");
  info.smem_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                   "cuDeviceGetAttribute(opt-in shared memory per block)");
  info.smem_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                          "cuDeviceGetAttribute(shared memory per SM)");
  info.regs_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
                          "cuDeviceGetAttribute(registers per SM)");
  info.regs_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
                             "cuDeviceGetAttribute(registers per block)");
  info.max_threads_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
                                 "cuDeviceGetAttribute(threads per SM)");
  info.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE, "cuDeviceGetAttribute(warp size)");
  info.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "cuDeviceGetAttribute(L2 size)");
  info.mem_clock_khz = optional_attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  info.mem_bus_width = optional_attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  return info;
}

} // namespace tilejit
