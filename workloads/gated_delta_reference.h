// The gated delta rule on one head in float64: the recurrence step by step (the reference the
// workload and tests compare kernels with) and its hand-written reverse (the gradients of
// sum(dout * o) + sum(dht * ht), for the backward kernels to come), checked against finite
// differences in tests/workloads/gated_delta_reference_test.cpp.
#pragma once

#include <cstdint>
#include <vector>

namespace tilejit::workloads {

/// One head: q, k [T, Dk], v [T, Dv], g and beta [T], h0 [Dk, Dv] (zero when empty), row-major.
struct GatedDeltaHead {
  int64_t steps = 0, key_dim = 0, value_dim = 0;
  std::vector<double> q, k, v, g, beta, h0;
  bool normalize = true; ///< q_t and k_t divided by sqrt(|x|^2 + 1e-6) first
  double scale = 1;
};

struct GatedDeltaHeadOutputs {
  std::vector<double> o;  ///< [T, Dv]
  std::vector<double> ht; ///< [Dk, Dv], the state after the last step
};

/// S = S exp(g_t); u = beta_t (v_t - k_t S); S = S + k_t^T u; o_t = scale q_t S.
GatedDeltaHeadOutputs gated_delta_head_forward(const GatedDeltaHead& head);

struct GatedDeltaHeadGradients {
  std::vector<double> dq, dk, dv, dg, dbeta, dh0; ///< shaped like the inputs
  /// [T + 1, Dk, Dv]: the gradient with respect to the state after t steps (t = 0: h0's,
  /// t = T: dht), what a chunked backward carries from chunk to chunk.
  std::vector<double> dstates;
};

/// The gradients of sum(dout * o) + sum(dht * ht) (dout [T, Dv], dht [Dk, Dv]; an empty dht
/// is zero) by the recurrence run backwards over the saved states.
GatedDeltaHeadGradients gated_delta_head_backward(const GatedDeltaHead& head,
                                                  const std::vector<double>& dout,
                                                  const std::vector<double>& dht);

} // namespace tilejit::workloads
