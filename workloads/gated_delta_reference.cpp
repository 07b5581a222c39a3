#include "workloads/gated_delta_reference.h"

#include <algorithm>
#include <cmath>

namespace tilejit::workloads {
namespace {

constexpr double kNormEps = 1e-6; // flash-linear-attention's l2norm

/// Row t of x [T, D] divided by its norm when asked; `r` gets 1 / sqrt(|x_t|^2 + eps) (or 1).
std::vector<double> normalized_row(const std::vector<double>& x, int64_t t, int64_t d,
                                   bool normalize, double* r) {
  std::vector<double> row(x.begin() + t * d, x.begin() + (t + 1) * d);
  double n2 = 0;
  for (double e : row) n2 += e * e;
  *r = normalize ? 1 / std::sqrt(n2 + kNormEps) : 1;
  for (double& e : row) e *= *r;
  return row;
}

/// The state after each step: states[t] is S after step t - 1 (states[0] = h0).
struct Walk {
  std::vector<std::vector<double>> states;
  GatedDeltaHeadOutputs out;
};

Walk walk(const GatedDeltaHead& h) {
  const int64_t T = h.steps, DK = h.key_dim, DV = h.value_dim;
  Walk w;
  std::vector<double> S = h.h0.empty() ? std::vector<double>(DK * DV, 0.0) : h.h0;
  w.out.o.assign(T * DV, 0.0);
  w.states.push_back(S);
  for (int64_t t = 0; t < T; ++t) {
    double rq, rk;
    const std::vector<double> q = normalized_row(h.q, t, DK, h.normalize, &rq);
    const std::vector<double> k = normalized_row(h.k, t, DK, h.normalize, &rk);
    const double decay = std::exp(h.g[t]), beta = h.beta[t];
    for (double& x : S) x *= decay;
    for (int64_t j = 0; j < DV; ++j) {
      double p = 0;
      for (int64_t i = 0; i < DK; ++i) p += k[i] * S[i * DV + j];
      const double u = beta * (h.v[t * DV + j] - p);
      for (int64_t i = 0; i < DK; ++i) S[i * DV + j] += k[i] * u;
    }
    for (int64_t j = 0; j < DV; ++j) {
      double o = 0;
      for (int64_t i = 0; i < DK; ++i) o += q[i] * S[i * DV + j];
      w.out.o[t * DV + j] = h.scale * o;
    }
    w.states.push_back(S);
  }
  w.out.ht = S;
  return w;
}

/// d(x r)/dx applied to dxn for the row t of x (x r = x / sqrt(|x|^2 + eps), or x).
void unnormalize(const std::vector<double>& x, int64_t t, int64_t d, bool normalize, double r,
                 const std::vector<double>& dxn, std::vector<double>& dx) {
  if (!normalize) {
    for (int64_t i = 0; i < d; ++i) dx[t * d + i] += dxn[i];
    return;
  }
  double dot = 0;
  for (int64_t i = 0; i < d; ++i) dot += dxn[i] * x[t * d + i];
  for (int64_t i = 0; i < d; ++i) dx[t * d + i] += r * dxn[i] - r * r * r * x[t * d + i] * dot;
}

} // namespace

GatedDeltaHeadOutputs gated_delta_head_forward(const GatedDeltaHead& head) {
  return walk(head).out;
}

GatedDeltaHeadGradients gated_delta_head_backward(const GatedDeltaHead& h,
                                                  const std::vector<double>& dout,
                                                  const std::vector<double>& dht) {
  const int64_t T = h.steps, DK = h.key_dim, DV = h.value_dim;
  const Walk w = walk(h);
  GatedDeltaHeadGradients d;
  d.dq.assign(T * DK, 0.0);
  d.dk.assign(T * DK, 0.0);
  d.dv.assign(T * DV, 0.0);
  d.dg.assign(T, 0.0);
  d.dbeta.assign(T, 0.0);
  std::vector<double> dS = dht.empty() ? std::vector<double>(DK * DV, 0.0) : dht;
  d.dstates.assign((T + 1) * DK * DV, 0.0);
  std::copy(dS.begin(), dS.end(), d.dstates.begin() + T * DK * DV);
  for (int64_t t = T - 1; t >= 0; --t) {
    double rq, rk;
    const std::vector<double> q = normalized_row(h.q, t, DK, h.normalize, &rq);
    const std::vector<double> k = normalized_row(h.k, t, DK, h.normalize, &rk);
    const std::vector<double>& S = w.states[t + 1]; // after step t
    const double decay = std::exp(h.g[t]), beta = h.beta[t];
    std::vector<double> Sa = w.states[t]; // decayed, before the update
    for (double& x : Sa) x *= decay;
    std::vector<double> dqn(DK, 0.0), dkn(DK, 0.0);
    // o_t = scale q S.
    for (int64_t i = 0; i < DK; ++i)
      for (int64_t j = 0; j < DV; ++j) {
        const double gout = h.scale * dout[t * DV + j];
        dqn[i] += gout * S[i * DV + j];
        dS[i * DV + j] += q[i] * gout;
      }
    // S = Sa + k^T u, u = beta (v - p), p = k Sa.
    for (int64_t j = 0; j < DV; ++j) {
      double p = 0, du = 0;
      for (int64_t i = 0; i < DK; ++i) {
        p += k[i] * Sa[i * DV + j];
        du += k[i] * dS[i * DV + j];
      }
      const double u = beta * (h.v[t * DV + j] - p);
      d.dbeta[t] += du * (h.v[t * DV + j] - p);
      d.dv[t * DV + j] += beta * du;
      const double dp = -beta * du;
      for (int64_t i = 0; i < DK; ++i) {
        dkn[i] += dS[i * DV + j] * u + Sa[i * DV + j] * dp;
        dS[i * DV + j] += k[i] * dp; // now d/dSa
      }
    }
    // Sa = exp(g) S_{t-1}.
    for (int64_t i = 0; i < DK * DV; ++i) {
      d.dg[t] += dS[i] * Sa[i];
      dS[i] *= decay;
    }
    unnormalize(h.q, t, DK, h.normalize, rq, dqn, d.dq);
    unnormalize(h.k, t, DK, h.normalize, rk, dkn, d.dk);
    std::copy(dS.begin(), dS.end(), d.dstates.begin() + t * DK * DV);
  }
  d.dh0 = dS;
  return d;
}

} // namespace tilejit::workloads
