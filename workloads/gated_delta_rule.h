// The gated delta rule (WORKLOADS.md section 4), forward: shapes, random inputs, a float64
// reference of the recurrence (on sampled heads) and the FLOP count. Used by the workload
// (gated_delta_workload.cpp, RULE=delta) and the tests.
#pragma once

#include "compiler/ref/run_tile.h"
#include "workloads/gated_delta_reference.h"

#include <tilejit/tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tilejit::workloads {

/// Layout [B, T, H, D]: q and k KEY_DIM wide, v and o VALUE_DIM wide; g and beta [B, T, H] f32;
/// the states h0 and ht [B, H, KEY_DIM, VALUE_DIM] f32.
struct GatedDeltaShape {
  int64_t batch = 1, steps = 256, heads = 4, key_dim = 32, value_dim = 32;
  bool normalize = true;      ///< q and k L2-normalised over Dk in the kernel
  bool initial_state = false; ///< start from h0 (else from zero)
  int64_t chunk = 64;         ///< the chunked form's steps per chunk (16, 32 or 64)
  bool backward = false;      ///< also the gradients of sum(dout * o) + sum(dht * ht)
  DType dtype = DType::BF16;
  std::string describe() const; ///< "bf16 B=128 T=256 H=4 Dk=32 Dv=32 delta norm h0"
  int64_t key_tile() const { return (key_dim + 15) / 16 * 16; }
  int64_t chunks() const { return (steps + chunk - 1) / chunk; }
  double scale() const; ///< 1 / sqrt(key_dim)
};

/// Inputs (q, k, v in [-1, 1), g in [-0.5, 0), beta in (0.05, 0.95), h0 in [-1, 1); without
/// normalisation k in [-1, 1) / sqrt(Dk), so that the rule stays stable) and outputs (o, ht).
struct GatedDeltaData {
  GatedDeltaShape shape;
  ref::HostBuffer q, k, v, g, beta, h0, o, ht;
  /// The chunked form's intermediates (poisoned): w and u (the WY form's products, in the
  /// inputs' dtype), the chunk-local cumulative g, and q's and k's reciprocal norms per step.
  ref::HostBuffer w, u, gc, rq, rk;
  /// The chunk kernel's saved states: [B, H, chunks, Dk, Dv] with the backward, else [B, H, 1,
  /// Dk, Dv] (not written).
  ref::HostBuffer hs;
  /// With the backward: dout and dht (random inputs), the gradients (poisoned outputs) and the
  /// backward's intermediates (the state gradients dh [B, H, chunks, Dk, Dv] and dU, f32).
  ref::HostBuffer dout, dht, dq, dk, dv, dg, dbeta, dh0, dh, du2;
};
std::unique_ptr<GatedDeltaData> make_gated_delta_data(const GatedDeltaShape& shape, uint64_t seed);

struct GatedDeltaErrors {
  double o = 0, ht = 0; ///< relative L2 over the reference heads: (0, 0) and (B - 1, H - 1)
  /// With the backward: the gradients' relative L2 over the same heads.
  double dq = 0, dk = 0, dv = 0, dg = 0, dbeta = 0, dh0 = 0;
  int64_t nan = 0; ///< NaN or inf anywhere in the outputs
  static constexpr double kTol = 2e-2;
  static constexpr double kGradTol = 3e-2; ///< products of gradients rounded to 16 bits
  bool ok() const {
    return nan == 0 && o <= kTol && ht <= kTol && dq <= kGradTol && dk <= kGradTol &&
           dv <= kGradTol && dg <= kGradTol && dbeta <= kGradTol && dh0 <= kGradTol;
  }
};

/// Head (b, h) of `d`'s inputs in float64, for the one-head reference.
GatedDeltaHead gated_delta_head(const GatedDeltaData& d, int64_t b, int64_t h);

/// Compares o and ht with the float64 recurrence S = S exp(g_t); u = beta_t (v_t - k_t S);
/// S += k_t^T u; o_t = scale q_t S (q_t, k_t normalised first when asked).
GatedDeltaErrors compare_gated_delta(const GatedDeltaData& d);

/// FLOPs of the recurrence: per step and head the decay, k S, the rank-1 update and q S.
double gated_delta_flops(const GatedDeltaShape& s);

} // namespace tilejit::workloads
