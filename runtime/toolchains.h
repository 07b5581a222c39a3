// The toolchains tilejit has (toolchain_for picks one by language) and what they share.
#pragma once

#include "runtime/toolchain.h"

namespace tilejit {

const Toolchain& cuda_toolchain(); ///< NVRTC and the CUDA driver API (cuda_toolchain.cpp)
const Toolchain& hip_toolchain();  ///< HIPRTC and the HIP runtime (hip_toolchain.cpp)

/// The embedded prelude as in-memory headers (include name, text).
const std::vector<std::pair<std::string, std::string>>& prelude_headers();

} // namespace tilejit
