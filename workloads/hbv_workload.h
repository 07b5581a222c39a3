// hbv behind the workload interface (WORKLOADS.md section 5): the forward (hbv_forward) and the
// backward reverse mode derives from it (hbv_forward_grad, the gradients of sum(d_Q * Q)) as one
// per-call training step, on the WORKLOADS.md shapes and the user's own (any B and T).
#pragma once

#include "workloads/workload.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace tilejit::workloads {

inline constexpr const char* kHbvSource = "embedded:workloads/hbv.tile";
/// The derived backward: reverse mode on hbv_forward (compiler/autodiff).
inline constexpr const char* kHbvGradSource = "grad:embedded:workloads/hbv.tile";

struct HbvShape {
  int64_t b = 0, t = 0; ///< basins, days
  int64_t nm = 1;       ///< components per basin (WORKLOADS.md's nmul: Q their mean)
};

std::shared_ptr<const Workload> make_hbv_workload();

/// Parses --shape items for hbv (keys case-insensitive): B (basins, >= 0), T (days, >= 0),
/// optionally NMUL (components per basin: 1, or 2, 4, 8, 16 in one kernel, hbv_forward_nmul).
HbvShape parse_hbv_shape(const std::map<std::string, std::string>& items);

} // namespace tilejit::workloads
