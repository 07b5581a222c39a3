// dequant_gemm behind the workload interface: int4 GPTQ (a one-time DSL repack, then the
// tensor-core split-K kernel on the packed form) and int8 weight-only linears, the 60
// WORKLOADS.md shapes, and the user's own (any M, N, K the formats allow, group sizes, act-order).
#pragma once

#include "workloads/dequant_gemm.h"
#include "workloads/workload.h"

#include <map>
#include <memory>
#include <string>

namespace tilejit::workloads {

std::shared_ptr<const Workload> make_dequant_gemm_workload();

std::unique_ptr<Problem> make_dequant_problem(const DequantShape& shape,
                                              const DequantCase* grid_case = nullptr);

/// Parses --shape items for dequant_gemm (keys case-insensitive):
///   M (default 1), N and K, or LAYER=qkv|o|gate_up|down|lm_head for N and K;
///   BITS=4|8 (default 4); int4 only: G=32|64|128|-1 (default 128), ACT=0|1 (default 0).
DequantShape parse_dequant_shape(const std::map<std::string, std::string>& items, DType dtype);

} // namespace tilejit::workloads
