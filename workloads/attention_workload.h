// attention behind the workload interface: the forward and the three backward kernels as one
// per-call sequence (o, lse, dq, dk, dv), the WORKLOADS.md dense shapes (f32 seed shapes, bf16
// and f16 long shapes) and the user's own (GQA, causal, odd N and head dims).
#pragma once

#include "workloads/attention.h"
#include "workloads/workload.h"

#include <map>
#include <memory>
#include <string>

namespace tilejit::workloads {

std::shared_ptr<const Workload> make_attention_workload();

std::unique_ptr<Problem> make_attention_problem(const AttentionShape& shape,
                                                const AttentionCase* grid_case = nullptr);

/// Parses --shape items for attention (keys case-insensitive): B (default 1), H or HQ, HKV
/// (default HQ), N, D, CAUSAL=0|1 (default 0), EXACT=0|1 (f32 only, default 0).
AttentionShape parse_attention_shape(const std::map<std::string, std::string>& items, DType dtype);

} // namespace tilejit::workloads
