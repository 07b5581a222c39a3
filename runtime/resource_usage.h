// Per-kernel resource usage (registers, shared memory, stack, spills) of a compiled kernel,
// read either from the ptxas -v report in NVRTC's log or straight from the cubin.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tilejit {

/// What one kernel uses; -1 means "not known from this source".
struct ResourceUsage {
  int registers = -1;         ///< 32-bit registers per thread
  int shared_bytes = -1;      ///< static __shared__ bytes per block (dynamic shared not included)
  int stack_bytes = -1;       ///< local-memory stack frame per thread (spills + local arrays)
  int spill_store_bytes = -1; ///< bytes stored by register spills (ptxas report only)
  int spill_load_bytes = -1;  ///< bytes loaded by register spills (ptxas report only)
  int const_bytes = -1;       ///< constant bank 0 bytes (kernel parameters + driver constants)
  /// ptxas's "Potential Performance Loss" notes about this kernel (wgmmas serialized, ...), as
  /// it words them after the code (ptxas report only).
  std::vector<std::string> performance_notes;
};

/// Reads the ptxas -v report (NvrtcRequest::resource_report) for `kernel_name` (the mangled
/// name for C++ kernels). nullopt when the log has no report for that kernel.
std::optional<ResourceUsage> parse_ptxas_report(const std::string& log,
                                                const std::string& kernel_name);

/// Reads `kernel_name`'s resources from the cubin ELF itself (.nv.info register count and
/// frame size, .nv.shared.<kernel> and .nv.constant0.<kernel> sizes), so it needs no log and
/// works on cached cubins. Spill sizes are not recorded in a cubin and stay -1. nullopt when
/// the image is not a well-formed cubin or has no such kernel.
std::optional<ResourceUsage> read_cubin_resources(const std::string& cubin,
                                                  const std::string& kernel_name);

} // namespace tilejit
