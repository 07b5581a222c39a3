// A GPU's identity and limits, as tilejit reads them through the driver API: what an
// application may ask the Runtime (Runtime::device()) and what tuning keys name.
#pragma once

#include <cstdint>
#include <string>

namespace tilejit {

/// Properties of one CUDA device, read through the driver API.
struct DeviceInfo {
  std::string name;             ///< "NVIDIA H100 80GB HBM3"
  int cc_major = 0;             ///< compute capability, major
  int cc_minor = 0;             ///< compute capability, minor
  int sm_count = 0;             ///< streaming multiprocessors
  int64_t total_mem = 0;        ///< global memory, bytes
  int smem_per_block = 0;       ///< shared memory a block gets without opting in, bytes
  int smem_per_block_optin = 0; ///< most shared memory a block may opt in to, bytes
  int smem_per_sm = 0;          ///< shared memory per SM, bytes
  int regs_per_sm = 0;          ///< 32-bit registers per SM
  int regs_per_block = 0;       ///< 32-bit registers one block may use
  int max_threads_per_sm = 0;   ///< resident threads per SM
  int warp_size = 0;            ///< threads per warp
  int l2_bytes = 0;             ///< L2 cache, bytes
  int mem_clock_khz = 0;        ///< peak memory clock, kHz (0 if the driver does not say)
  int mem_bus_width = 0;        ///< memory bus width, bits (0 if the driver does not say)
  int driver_version = 0;       ///< cuDriverGetVersion: 13000 for CUDA 13.0

  /// NVRTC target for this device: "sm_90a" on Hopper (cc 9.0) and "sm_100a" on cc 10.0, whose
  /// arch-specific 'a' targets enable wgmma, setmaxnreg and tcgen05; "sm_XY" otherwise.
  std::string arch() const;
};

/// Reads the properties of device `ordinal`; throws NoGpuError without a driver or device and
/// tilejit::Error for an ordinal the machine does not have.
DeviceInfo query_device(int ordinal = 0);

} // namespace tilejit
