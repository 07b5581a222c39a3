// The gated delta rule's float64 reference on one head (workloads/gated_delta_reference.h): its
// hand-written reverse against central finite differences of the forward, every coordinate of
// every input (q, k, v, g, beta, h0), normalised or not, with and without a final-state gradient
// and an initial state, on fresh random inputs from the workload's ranges; and the forward
// against a direct unrolled computation of two steps.
#include "workloads/gated_delta_reference.h"

#include "support/error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace tilejit::workloads {
namespace {

double loss(const GatedDeltaHead& h, const std::vector<double>& dout,
            const std::vector<double>& dht) {
  const GatedDeltaHeadOutputs out = gated_delta_head_forward(h);
  double l = 0;
  for (size_t i = 0; i < out.o.size(); ++i) l += dout[i] * out.o[i];
  for (size_t i = 0; i < dht.size(); ++i) l += dht[i] * out.ht[i];
  return l;
}

GatedDeltaHead random_head(std::mt19937& rng, int64_t t, int64_t dk, int64_t dv, bool normalize,
                           bool with_h0) {
  std::uniform_real_distribution<double> u(-1, 1), gate(-0.5, 0), beta(0.05, 0.95);
  GatedDeltaHead h;
  h.steps = t, h.key_dim = dk, h.value_dim = dv, h.normalize = normalize;
  h.scale = 1 / std::sqrt(static_cast<double>(dk));
  const double kmax = normalize ? 1 : 1 / std::sqrt(static_cast<double>(dk));
  for (int64_t i = 0; i < t * dk; ++i) h.q.push_back(u(rng)), h.k.push_back(kmax * u(rng));
  for (int64_t i = 0; i < t * dv; ++i) h.v.push_back(u(rng));
  for (int64_t i = 0; i < t; ++i) h.g.push_back(gate(rng)), h.beta.push_back(beta(rng));
  if (with_h0)
    for (int64_t i = 0; i < dk * dv; ++i) h.h0.push_back(u(rng));
  return h;
}

void check_gradients(bool normalize, bool with_h0, bool with_dht) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(str("normalize=", normalize, " h0=", with_h0, " dht=", with_dht, " seed=", seed));
  std::mt19937 rng(seed);
  const int64_t T = 7, DK = 5, DV = 3;
  GatedDeltaHead h = random_head(rng, T, DK, DV, normalize, with_h0);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> dout(T * DV), dht;
  for (double& x : dout) x = u(rng);
  if (with_dht)
    for (int64_t i = 0; i < DK * DV; ++i) dht.push_back(u(rng));
  const GatedDeltaHeadGradients g = gated_delta_head_backward(h, dout, dht);
  if (!with_h0) h.h0.assign(DK * DV, 0.0); // its gradient is still defined: at h0 = 0
  struct Input {
    const char* name;
    std::vector<double>* x;
    const std::vector<double>* grad;
  } inputs[] = {{"q", &h.q, &g.dq}, {"k", &h.k, &g.dk},          {"v", &h.v, &g.dv},
                {"g", &h.g, &g.dg}, {"beta", &h.beta, &g.dbeta}, {"h0", &h.h0, &g.dh0}};
  int nonzero = 0;
  for (const Input& in : inputs) {
    ASSERT_EQ(in.grad->size(), in.x->size()) << in.name;
    for (size_t i = 0; i < in.x->size(); ++i) {
      double& x = (*in.x)[i];
      const double x0 = x, step = 1e-6;
      x = x0 + step;
      const double lp = loss(h, dout, dht);
      x = x0 - step;
      const double lm = loss(h, dout, dht);
      x = x0;
      const double fd = (lp - lm) / (2 * step), got = (*in.grad)[i];
      EXPECT_NEAR(got, fd, 1e-6 * std::max(1.0, std::abs(fd))) << in.name << "[" << i << "]";
      nonzero += std::abs(got) > 1e-3;
    }
  }
  EXPECT_GT(nonzero, 50); // the check is not passing on zeros
}

TEST(GatedDeltaReference, ReverseMatchesFiniteDifferences) {
  for (bool normalize : {true, false})
    for (bool with_h0 : {true, false})
      for (bool with_dht : {true, false}) check_gradients(normalize, with_h0, with_dht);
}

// Two steps without normalisation, written out: S1 = b1 k1^T v1 (from zero);
// S2 = e^{g2} S1 + b2 k2^T (v2 - k2 e^{g2} S1); o2 = scale q2 S2.
TEST(GatedDeltaReference, ForwardIsTheRecurrence) {
  GatedDeltaHead h;
  h.steps = 2, h.key_dim = 2, h.value_dim = 1, h.normalize = false, h.scale = 0.5;
  h.q = {1, 2, 3, -1};
  h.k = {0.5, 0.25, -0.5, 1};
  h.v = {2, -1};
  h.g = {-0.1, -0.3};
  h.beta = {0.5, 0.8};
  const GatedDeltaHeadOutputs out = gated_delta_head_forward(h);
  const double s1[2] = {0.5 * 0.5 * 2, 0.5 * 0.25 * 2};
  const double e2 = std::exp(-0.3);
  const double p2 = -0.5 * e2 * s1[0] + 1 * e2 * s1[1];
  const double u2 = 0.8 * (-1 - p2);
  const double s2[2] = {e2 * s1[0] - 0.5 * u2, e2 * s1[1] + 1 * u2};
  EXPECT_NEAR(out.o[0], 0.5 * (1 * s1[0] + 2 * s1[1]), 1e-12);
  EXPECT_NEAR(out.o[1], 0.5 * (3 * s2[0] - 1 * s2[1]), 1e-12);
  EXPECT_NEAR(out.ht[0], s2[0], 1e-12);
  EXPECT_NEAR(out.ht[1], s2[1], 1e-12);
}

} // namespace
} // namespace tilejit::workloads
