// hbv's DSL kernels (kernels_src/workloads/hbv.tile) against the float64 reference
// (workloads/hbv_reference.h), on the interpreter or the GPU (KernelRunner).
#pragma once

#include "kernel_runner.h"

#include <cstdint>

namespace tilejit::test {

/// hbv_forward on B basins over T days, random inputs from WORKLOADS.md's ranges (fresh seed),
/// Q poisoned first: every element must be finite and Q within 1e-4 (norm-relative) of the
/// float64 reference run on the same f32-rounded inputs.
void check_hbv_forward(const KernelRunner& run, int64_t b, int64_t t, const Bindings& config);

} // namespace tilejit::test
