// gated_delta's causal linear attention (WORKLOADS.md section 4): shapes (the grid's and the
// user's), random inputs, a float64 reference of the forward and the gradients (by the state
// recurrence, on sampled heads) and the FLOP count. Used by the workload
// (gated_delta_workload.cpp) and the tests.
#pragma once

#include "compiler/ref/run_tile.h"

#include <tilejit/tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tilejit::workloads {

/// Layout [B, T, H, D]: q and k KEY_DIM wide, v and o VALUE_DIM wide.
struct LinearAttnShape {
  int64_t batch = 1, steps = 256, heads = 4, key_dim = 32, value_dim = 32;
  DType dtype = DType::BF16;
  std::string describe() const; ///< "bf16 B=128 T=256 H=4 Dk=32 Dv=32"
  /// The kernel's tile widths: each dim rounded up to 16.
  int64_t key_tile() const { return (key_dim + 15) / 16 * 16; }
  int64_t value_tile() const { return (value_dim + 15) / 16 * 16; }
  double scale() const; ///< 1 / sqrt(key_dim)
};

/// A WORKLOADS.md shape: B, T, H and D (= Dk = Dv).
struct LinearAttnCase {
  int64_t batch, steps, heads, dim;
  std::string name() const; ///< "linear/B128/T256/H4/D32"
  LinearAttnShape shape(DType dtype) const;
};
std::vector<LinearAttnCase> linear_attn_cases();

/// Inputs (q, k in [-1, 1), v and dout in [-1, 1), drawn at random) and outputs (o, dq, dk, dv).
struct LinearAttnData {
  LinearAttnShape shape;
  ref::HostBuffer q, k, v, dout, o, dq, dk, dv;
};
std::unique_ptr<LinearAttnData> make_linear_attn_data(const LinearAttnShape& shape, uint64_t seed);

/// The (batch, head) pairs the reference computes in full: (0, 0) and (B - 1, H - 1).
std::vector<std::pair<int64_t, int64_t>> linear_attn_reference_heads(const LinearAttnShape& s);

struct LinearAttnErrors {
  double o = 0, dq = 0, dk = 0, dv = 0; ///< relative L2 over the reference heads
  int64_t nan = 0;                      ///< NaN or inf anywhere in the outputs
  /// 2e-2: 16-bit inputs, and the state rounded to them for the tensor cores.
  static constexpr double kTol = 2e-2;
  bool ok() const { return nan == 0 && o <= kTol && dq <= kTol && dk <= kTol && dv <= kTol; }
};

/// Compares the outputs (as downloaded into the data) with the float64 reference:
///   o_t = scale q_t S_t, S_t = sum_{s <= t} k_s^T v_s;
///   dq_t = scale do_t sum_{s <= t} v_s^T k_s; with R_s = scale sum_{t >= s} q_t^T do_t,
///   dv_s = k_s R_s and dk_s = R_s v_s^T (the gradients of sum(do * o)).
LinearAttnErrors compare_linear_attn(const LinearAttnData& d);

/// Tensor-core FLOPs of the chunked forward and backward (chunks of 64): per chunk and head the
/// intra-chunk products and the state's, once forward, three times backward.
double linear_attn_flops(const LinearAttnShape& s);

} // namespace tilejit::workloads
