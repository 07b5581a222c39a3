// gated_delta behind the workload interface. Today its linear-attention part: the forward and
// the backward as four launches of one DSL kernel (linear_attn, operands exchanged), the
// WORKLOADS.md shapes and the user's own (any B, T, H, Dk, Dv up to 256). The gated delta rule
// itself is still to come (RULE=delta says so).
#pragma once

#include "workloads/linear_attn.h"
#include "workloads/workload.h"

#include <map>
#include <memory>
#include <string>

namespace tilejit::workloads {

std::shared_ptr<const Workload> make_gated_delta_workload();

std::unique_ptr<Problem> make_linear_attn_problem(const LinearAttnShape& shape,
                                                  const LinearAttnCase* grid_case = nullptr);

/// Parses --shape items for gated_delta (keys case-insensitive): B (default 1), T, H (default
/// 1), D (both dims) or DK and DV, RULE=linear (the default; `delta` is not implemented yet).
LinearAttnShape parse_linear_attn_shape(const std::map<std::string, std::string>& items,
                                        DType dtype);

} // namespace tilejit::workloads
