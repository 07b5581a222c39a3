// gated_delta behind the workload interface: causal linear attention, the forward and the
// backward as four launches of one DSL kernel (linear_attn, operands exchanged), on the
// WORKLOADS.md shapes and the user's own (any B, T, H, Dk, Dv up to 256); and the gated delta
// rule's forward (RULE=delta: the recurrent form, gated_delta_recurrent; its chunked form and
// backward are to come).
#pragma once

#include "workloads/gated_delta_rule.h"
#include "workloads/linear_attn.h"
#include "workloads/workload.h"

#include <map>
#include <memory>
#include <string>

namespace tilejit::workloads {

std::shared_ptr<const Workload> make_gated_delta_workload();

std::unique_ptr<Problem> make_linear_attn_problem(const LinearAttnShape& shape,
                                                  const LinearAttnCase* grid_case = nullptr);

/// The RULE --shape names (keys case-insensitive): "linear" when it names none.
std::string shape_rule(const std::map<std::string, std::string>& items);

/// Parses --shape items for gated_delta's linear attention (keys case-insensitive): B (default
/// 1), T, H (default 1), D (both dims) or DK and DV, RULE=linear (the default).
LinearAttnShape parse_linear_attn_shape(const std::map<std::string, std::string>& items,
                                        DType dtype);

/// The same sizes for RULE=delta, and NORM=0|1 (default 1: q and k L2-normalised in the
/// kernel) and H0=0|1 (default 0: the state starts at zero).
GatedDeltaShape parse_gated_delta_rule_shape(const std::map<std::string, std::string>& items,
                                             DType dtype);

} // namespace tilejit::workloads
