// What an AMDGPU code object (the ELF HIPRTC builds) says about one kernel: its registers,
// LDS, scratch and wavefront size, read from the metadata note (NT_AMDGPU_METADATA, MessagePack,
// code object v3 and later), so that a cached code object needs no compile log. The resource
// report `tilejit inspect --arch gfx90a --stage resources` prints comes from here.
#pragma once

#include "runtime/resource_usage.h"

#include <optional>
#include <string>

namespace tilejit {

struct AmdgpuKernelInfo {
  std::string target;      ///< "amdgcn-amd-amdhsa--gfx90a"
  ResourceUsage usage;     ///< registers = VGPRs, shared = LDS, stack = scratch per lane
  int sgprs = -1;          ///< scalar registers
  int agprs = -1;          ///< accumulation registers (gfx90a's MFMA results; 0 elsewhere)
  int vgpr_spills = -1;    ///< VGPRs spilled to scratch
  int sgpr_spills = -1;    ///< SGPRs spilled
  int wavefront_size = -1; ///< 64 (gfx90a) or 32 (gfx1030)
  int max_threads = -1;    ///< the largest block it was compiled for
};

/// The kernel `kernel_name`'s entry in `code_object`; nullopt when the image is not an AMDGPU
/// ELF with a readable metadata note, or has no such kernel.
std::optional<AmdgpuKernelInfo> read_amdgpu_kernel(const std::string& code_object,
                                                   const std::string& kernel_name);

} // namespace tilejit
