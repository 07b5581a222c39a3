#include "linear_attn_checks.h"

#include "workloads/gated_delta_reference.h"

#include "support/text.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace tilejit::test {
namespace {

constexpr const char* kKernel = "embedded:workloads/gated_delta.tile#linear_attn";
constexpr const char* kFusedKernel = "embedded:workloads/gated_delta.tile#linear_attn_bwd_kv";

int64_t tile16(int64_t d) {
  return (d + 15) / 16 * 16;
}

/// A [B, NT, H, D] tensor in float64 (the rounded inputs, or perturbed copies of them).
struct Seq {
  std::vector<double> x;
  int64_t b = 0, nt = 0, h = 0, d = 0;
  explicit Seq(const HostBuffer& buf) {
    const auto& s = buf.shape();
    b = s[0], nt = s[1], h = s[2], d = s[3];
    x.resize(static_cast<size_t>(buf.numel()));
    for (int64_t i = 0; i < buf.numel(); ++i) x[static_cast<size_t>(i)] = buf.get(i);
  }
  double& operator()(int64_t bi, int64_t t, int64_t hi, int64_t di) {
    return x[static_cast<size_t>(((bi * nt + t) * h + hi) * d + di)];
  }
  double operator()(int64_t bi, int64_t t, int64_t hi, int64_t di) const {
    return x[static_cast<size_t>(((bi * nt + t) * h + hi) * d + di)];
  }
};

/// out[b, t, h, :] = scale * sum over the steps s that t sees of (x_t . y_s) z_s: the causal
/// (s <= t) or anti-causal (s >= t) product, in float64.
std::vector<double> reference(const Seq& x, const Seq& y, const Seq& z, double scale, bool rev) {
  std::vector<double> out(static_cast<size_t>(x.b * x.nt * x.h * z.d), 0.0);
  for (int64_t b = 0; b < x.b; ++b)
    for (int64_t h = 0; h < x.h; ++h)
      for (int64_t t = 0; t < x.nt; ++t) {
        double* row = &out[static_cast<size_t>(((b * x.nt + t) * x.h + h) * z.d)];
        for (int64_t s = rev ? t : 0; s <= (rev ? x.nt - 1 : t); ++s) {
          double w = 0;
          for (int64_t d = 0; d < x.d; ++d) w += x(b, t, h, d) * y(b, s, h, d);
          for (int64_t d = 0; d < z.d; ++d) row[d] += scale * w * z(b, s, h, d);
        }
      }
  return out;
}

std::vector<double> reference(const HostBuffer& x, const HostBuffer& y, const HostBuffer& z,
                              double scale, bool rev) {
  return reference(Seq(x), Seq(y), Seq(z), scale, rev);
}

/// The loss sum(do * o) of the forward, in float64.
double loss(const Seq& q, const Seq& k, const Seq& v, const Seq& dout, double scale) {
  const std::vector<double> o = reference(q, k, v, scale, false);
  double l = 0;
  for (size_t i = 0; i < o.size(); ++i) l += o[i] * dout.x[i];
  return l;
}

/// One launch: out = la(x, y, z) (rev: la_rev), DK the tile width of x and y.
void launch(const KernelRunner& run, DType t, HostBuffer& x, HostBuffer& y, HostBuffer& z,
            HostBuffer& out, double scale, bool rev, const Bindings& config) {
  Bindings given = config;
  given["T"] = dtype_name(t);
  given["DK"] = std::to_string(tile16(x.shape()[3]));
  given["REV"] = rev ? "1" : "0";
  out.poison();
  run(kKernel, given,
      {TestArg::of(x), TestArg::of(y), TestArg::of(z), TestArg::of(out),
       TestArg::f32(static_cast<float>(scale))});
}

} // namespace

void check_linear_attn(const KernelRunner& run, DType t, int64_t b, int64_t nt, int64_t h,
                       int64_t kh, int64_t vh, bool rev, const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("linear_attn ", dtype_name(t), " B=", b, " NT=", nt, " H=", h, " KH=", kh,
                   " VH=", vh, rev ? " REV " : " ", config_text(config), " seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer q(t, {b, nt, h, kh}), k(t, {b, nt, h, kh}), v(t, {b, nt, h, vh}), o(t, {b, nt, h, vh});
  fill_uniform(q, rng, -1, 1);
  fill_uniform(k, rng, -1, 1);
  fill_uniform(v, rng, -1, 1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(kh));
  launch(run, t, q, k, v, o, scale, rev, config);
  expect_close(o, reference(q, k, v, scale, rev), 2e-2);
}

void check_linear_attn_backward(const KernelRunner& run, DType t, int64_t b, int64_t nt, int64_t h,
                                int64_t kh, int64_t vh, const Bindings& config,
                                const Bindings* fused_config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("linear_attn backward ", dtype_name(t), " B=", b, " NT=", nt, " H=", h,
                   " KH=", kh, " VH=", vh, " ", config_text(config),
                   fused_config ? " linear_attn_bwd_kv " + config_text(*fused_config) : "",
                   " seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer q(t, {b, nt, h, kh}), k(t, {b, nt, h, kh}), v(t, {b, nt, h, vh}),
      dout(t, {b, nt, h, vh}), dq(t, {b, nt, h, kh}), dk(t, {b, nt, h, kh}), dv(t, {b, nt, h, vh});
  fill_uniform(q, rng, -1, 1);
  fill_uniform(k, rng, -1, 1);
  fill_uniform(v, rng, -1, 1);
  fill_uniform(dout, rng, -1, 1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(kh));
  launch(run, t, dout, v, k, dq, scale, false, config);
  if (fused_config) {
    Bindings given = *fused_config;
    given["T"] = dtype_name(t);
    given["DK"] = std::to_string(tile16(kh));
    given["DV"] = std::to_string(tile16(vh));
    dk.poison();
    dv.poison();
    run(kFusedKernel, given,
        {TestArg::of(q), TestArg::of(k), TestArg::of(v), TestArg::of(dout), TestArg::of(dk),
         TestArg::of(dv), TestArg::f32(static_cast<float>(scale))});
  } else {
    launch(run, t, k, q, dout, dv, scale, true, config);
    launch(run, t, v, dout, q, dk, scale, true, config);
  }
  // The gradients of sum(do * o), o_t = scale sum_{s <= t} (q_t . k_s) v_s, from their
  // closed forms: dq_t = scale sum_{s <= t} (do_t . v_s) k_s, dv_s = scale sum_{t >= s}
  // (q_t . k_s) do_t, dk_s = scale sum_{t >= s} (do_t . v_s) q_t; the closed forms are checked
  // first against central differences of the float64 loss at a few random elements.
  const Seq sq(q), sk(k), sv(v), sdo(dout);
  const std::vector<double> rq = reference(sdo, sv, sk, scale, false);
  const std::vector<double> rv = reference(sk, sq, sdo, scale, true);
  const std::vector<double> rk = reference(sv, sdo, sq, scale, true);
  struct Input {
    const char* name;
    const Seq& x;
    const std::vector<double>& grad;
  };
  for (const Input& in : {Input{"q", sq, rq}, Input{"k", sk, rk}, Input{"v", sv, rv}})
    for (int trial = 0; trial < 3; ++trial) {
      const size_t i = rng() % in.x.x.size();
      Seq plus = in.x, minus = in.x;
      const double step = 1e-4;
      plus.x[i] += step;
      minus.x[i] -= step;
      auto with = [&](const Seq& x) {
        return loss(&in.x == &sq ? x : sq, &in.x == &sk ? x : sk, &in.x == &sv ? x : sv, sdo,
                    scale);
      };
      const double fd = (with(plus) - with(minus)) / (2 * step);
      EXPECT_NEAR(fd, in.grad[i], 1e-6 * (1 + std::abs(fd)))
          << "the reference's d" << in.name << " at element " << i;
    }
  {
    SCOPED_TRACE("dq");
    expect_close(dq, rq, 2e-2);
  }
  {
    SCOPED_TRACE("dv");
    expect_close(dv, rv, 2e-2);
  }
  {
    SCOPED_TRACE("dk");
    expect_close(dk, rk, 2e-2);
  }
}

namespace {

/// The gated delta rule's inputs (fresh, random) and outputs (poisoned), and its float64
/// recurrence from the rounded inputs.
struct GatedDeltaCase {
  int64_t b, nt, h, kh, vh;
  bool norm, with_h0;
  HostBuffer q, k, v, g, beta, h0, o, ht;
  double scale;
  GatedDeltaCase(DType t, int64_t b_, int64_t nt_, int64_t h_, int64_t kh_, int64_t vh_, bool norm_,
                 bool with_h0_, std::mt19937& rng)
      : b(b_), nt(nt_), h(h_), kh(kh_), vh(vh_), norm(norm_), with_h0(with_h0_),
        q(t, {b, nt, h, kh}), k(t, {b, nt, h, kh}), v(t, {b, nt, h, vh}), g(DType::F32, {b, nt, h}),
        beta(DType::F32, {b, nt, h}), h0(DType::F32, {b, h, kh, vh}), o(t, {b, nt, h, vh}),
        ht(DType::F32, {b, h, kh, vh}), scale(1.0 / std::sqrt(static_cast<double>(kh))) {
    fill_uniform(q, rng, -1, 1);
    const double kmax = norm ? 1.0 : 1.0 / std::sqrt(static_cast<double>(kh));
    fill_uniform(k, rng, -kmax, kmax);
    fill_uniform(v, rng, -1, 1);
    fill_uniform(g, rng, -0.5, 0);
    fill_uniform(beta, rng, 0.05, 0.95);
    fill_uniform(h0, rng, -1, 1);
    o.poison();
    ht.poison();
  }

  /// Head (bi, hi) in float64 for the one-head reference (h0 when `with_h0`), and the head's
  /// rows of dout [B, NT, H, VH] and (when given) of dht [B, H, KH, VH] into dO and dT.
  workloads::GatedDeltaHead head(int64_t bi, int64_t hi, const HostBuffer& dout,
                                 const HostBuffer* dht, std::vector<double>& dO,
                                 std::vector<double>& dT) const {
    workloads::GatedDeltaHead x;
    x.steps = nt, x.key_dim = kh, x.value_dim = vh, x.normalize = norm, x.scale = scale;
    dO.clear(), dT.clear();
    for (int64_t ti = 0; ti < nt; ++ti) {
      const int64_t row = (bi * nt + ti) * h + hi;
      for (int64_t i = 0; i < kh; ++i)
        x.q.push_back(q.get(row * kh + i)), x.k.push_back(k.get(row * kh + i));
      for (int64_t j = 0; j < vh; ++j)
        x.v.push_back(v.get(row * vh + j)), dO.push_back(dout.get(row * vh + j));
      x.g.push_back(g.get(row));
      x.beta.push_back(beta.get(row));
    }
    const int64_t st = kh * vh;
    for (int64_t i = 0; i < st && with_h0; ++i) x.h0.push_back(h0.get((bi * h + hi) * st + i));
    for (int64_t i = 0; i < st && dht; ++i) dT.push_back(dht->get((bi * h + hi) * st + i));
    return x;
  }

  /// o and ht against the recurrence, step by step in float64 (relative error `tol`).
  void expect_matches_recurrence(double tol = 2e-2) const {
    std::vector<double> ro(static_cast<size_t>(o.numel())), rh(static_cast<size_t>(ht.numel()));
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t hi = 0; hi < h; ++hi) {
        const int64_t state0 = (bi * h + hi) * kh * vh;
        std::vector<double> S(static_cast<size_t>(kh * vh), 0.0);
        if (with_h0)
          for (int64_t i = 0; i < kh * vh; ++i) S[i] = h0.get(state0 + i);
        for (int64_t ti = 0; ti < nt; ++ti) {
          const int64_t kq = ((bi * nt + ti) * h + hi) * kh, vo = ((bi * nt + ti) * h + hi) * vh;
          const int64_t gb = (bi * nt + ti) * h + hi;
          std::vector<double> kt(kh), qt(kh);
          double kn = 0, qn = 0;
          for (int64_t i = 0; i < kh; ++i) {
            kt[i] = k.get(kq + i), qt[i] = q.get(kq + i);
            kn += kt[i] * kt[i], qn += qt[i] * qt[i];
          }
          if (norm)
            for (int64_t i = 0; i < kh; ++i)
              kt[i] /= std::sqrt(kn + 1e-6), qt[i] /= std::sqrt(qn + 1e-6);
          const double decay = std::exp(g.get(gb)), bt = beta.get(gb);
          for (double& x : S) x *= decay;
          for (int64_t j = 0; j < vh; ++j) {
            double ks = 0;
            for (int64_t i = 0; i < kh; ++i) ks += kt[i] * S[i * vh + j];
            const double u = bt * (v.get(vo + j) - ks);
            for (int64_t i = 0; i < kh; ++i) S[i * vh + j] += kt[i] * u;
          }
          for (int64_t j = 0; j < vh; ++j) {
            double os = 0;
            for (int64_t i = 0; i < kh; ++i) os += qt[i] * S[i * vh + j];
            ro[vo + j] = scale * os;
          }
        }
        for (int64_t i = 0; i < kh * vh; ++i) rh[state0 + i] = S[i];
      }
    {
      SCOPED_TRACE("o");
      expect_close(o, ro, tol);
    }
    {
      SCOPED_TRACE("ht");
      expect_close(ht, rh, tol);
    }
  }
};

/// gated_delta_prepare on the case's inputs, its outputs into w, u, gc, rq and rk.
void run_prepare(const KernelRunner& run, GatedDeltaCase& c, const Bindings& generics,
                 HostBuffer& w, HostBuffer& u, HostBuffer& gc, HostBuffer& rq, HostBuffer& rk) {
  run("embedded:workloads/gated_delta.tile#gated_delta_prepare", generics,
      {TestArg::of(c.q), TestArg::of(c.k), TestArg::of(c.v), TestArg::of(c.g), TestArg::of(c.beta),
       TestArg::of(w), TestArg::of(u), TestArg::of(gc), TestArg::of(rq), TestArg::of(rk)});
}

} // namespace

void check_gated_delta_recurrent(const KernelRunner& run, DType t, int64_t b, int64_t nt, int64_t h,
                                 int64_t kh, int64_t vh, bool norm, bool with_h0,
                                 const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("gated_delta_recurrent ", dtype_name(t), " B=", b, " NT=", nt, " H=", h,
                   " KH=", kh, " VH=", vh, norm ? " NORM" : "", with_h0 ? " H0 " : " ",
                   config_text(config), " seed=", seed));
  std::mt19937 rng(seed);
  GatedDeltaCase c(t, b, nt, h, kh, vh, norm, with_h0, rng);
  Bindings given = config;
  given["T"] = dtype_name(t);
  given["DK"] = std::to_string(tile16(kh));
  given["NORM"] = norm ? "1" : "0";
  given["H0"] = with_h0 ? "1" : "0";
  run("embedded:workloads/gated_delta.tile#gated_delta_recurrent", given,
      {TestArg::of(c.q), TestArg::of(c.k), TestArg::of(c.v), TestArg::of(c.g), TestArg::of(c.beta),
       TestArg::of(c.h0), TestArg::of(c.o), TestArg::of(c.ht),
       TestArg::f32(static_cast<float>(c.scale))});
  c.expect_matches_recurrence();
}

void check_gated_delta_chunked(const KernelRunner& run, DType t, int64_t b, int64_t nt, int64_t h,
                               int64_t kh, int64_t vh, bool norm, bool with_h0, int64_t chunk,
                               const Bindings& prepare_config, const Bindings& chunk_config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("gated_delta chunked ", dtype_name(t), " B=", b, " NT=", nt, " H=", h,
                   " KH=", kh, " VH=", vh, norm ? " NORM" : "", with_h0 ? " H0" : "", " C=", chunk,
                   " prepare ", config_text(prepare_config), " chunk ", config_text(chunk_config),
                   " seed=", seed));
  std::mt19937 rng(seed);
  GatedDeltaCase c(t, b, nt, h, kh, vh, norm, with_h0, rng);
  // The intermediates are poisoned too: every element the second kernel reads must have
  // been written by the first.
  HostBuffer w(t, {b, nt, h, kh}), u(t, {b, nt, h, vh}), gc(DType::F32, {b, nt, h}),
      rq(DType::F32, {b, nt, h}), rk(DType::F32, {b, nt, h}),
      hs(DType::F32, {b, h, 1, kh, vh}); // not saved (SAVE = 0)
  for (HostBuffer* x : {&w, &u, &gc, &rq, &rk, &hs}) x->poison();
  const std::string src = "embedded:workloads/gated_delta.tile#";
  Bindings given = prepare_config;
  given["T"] = dtype_name(t);
  given["DK"] = std::to_string(tile16(kh));
  given["C"] = std::to_string(chunk);
  given["NORM"] = norm ? "1" : "0";
  run(src + "gated_delta_prepare", given,
      {TestArg::of(c.q), TestArg::of(c.k), TestArg::of(c.v), TestArg::of(c.g), TestArg::of(c.beta),
       TestArg::of(w), TestArg::of(u), TestArg::of(gc), TestArg::of(rq), TestArg::of(rk)});
  Bindings given2 = chunk_config;
  given2["T"] = dtype_name(t);
  given2["DK"] = std::to_string(tile16(kh));
  given2["C"] = std::to_string(chunk);
  given2["NORM"] = norm ? "1" : "0";
  given2["H0"] = with_h0 ? "1" : "0";
  run(src + "gated_delta_chunk", given2,
      {TestArg::of(c.q), TestArg::of(c.k), TestArg::of(w), TestArg::of(u), TestArg::of(gc),
       TestArg::of(rq), TestArg::of(rk), TestArg::of(c.h0), TestArg::of(c.o), TestArg::of(c.ht),
       TestArg::of(hs), TestArg::f32(static_cast<float>(c.scale))});
  c.expect_matches_recurrence();
}

void check_gated_delta_bwd_state(const KernelRunner& run, DType t, int64_t b, int64_t nt, int64_t h,
                                 int64_t kh, int64_t vh, bool norm, bool with_dht, int64_t chunk,
                                 const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("gated_delta_bwd_state ", dtype_name(t), " B=", b, " NT=", nt, " H=", h,
                   " KH=", kh, " VH=", vh, norm ? " NORM" : "", with_dht ? " DHT" : "",
                   " C=", chunk, " ", config_text(config), " seed=", seed));
  std::mt19937 rng(seed);
  GatedDeltaCase c(t, b, nt, h, kh, vh, norm, false, rng);
  const int64_t nch = (nt + chunk - 1) / chunk;
  HostBuffer w(t, {b, nt, h, kh}), u(t, {b, nt, h, vh}), gc(DType::F32, {b, nt, h}),
      rq(DType::F32, {b, nt, h}), rk(DType::F32, {b, nt, h}), dout(t, {b, nt, h, vh}),
      dht(DType::F32, {b, h, kh, vh}), dh(DType::F32, {b, h, nch, kh, vh}),
      du2(DType::F32, {b, nt, h, vh}), dh0(DType::F32, {b, h, kh, vh});
  fill_uniform(dout, rng, -1, 1);
  fill_uniform(dht, rng, -1, 1);
  for (HostBuffer* x : {&w, &u, &gc, &rq, &rk, &dh, &du2, &dh0}) x->poison();
  const std::string src = "embedded:workloads/gated_delta.tile#";
  Bindings generics = {{"T", dtype_name(t)},
                       {"DK", std::to_string(tile16(kh))},
                       {"C", std::to_string(chunk)},
                       {"NORM", norm ? "1" : "0"}};
  run_prepare(run, c, generics, w, u, gc, rq, rk);
  Bindings given = config;
  given.insert(generics.begin(), generics.end());
  given["DHT"] = with_dht ? "1" : "0";
  run(src + "gated_delta_bwd_state", given,
      {TestArg::of(c.q), TestArg::of(c.k), TestArg::of(w), TestArg::of(gc), TestArg::of(rq),
       TestArg::of(rk), TestArg::of(dout), TestArg::of(dht), TestArg::of(dh), TestArg::of(du2),
       TestArg::of(dh0), TestArg::f32(static_cast<float>(c.scale))});
  // The float64 reverse of the recurrence, head by head: the state gradients at the chunks'
  // ends and h0's.
  std::vector<double> rdh(static_cast<size_t>(dh.numel())), rdh0(static_cast<size_t>(dh0.numel()));
  const int64_t state = kh * vh;
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hi = 0; hi < h; ++hi) {
      std::vector<double> dO, dT;
      const workloads::GatedDeltaHead head =
          c.head(bi, hi, dout, with_dht ? &dht : nullptr, dO, dT);
      const workloads::GatedDeltaHeadGradients gr =
          workloads::gated_delta_head_backward(head, dO, dT);
      for (int64_t ci = 0; ci < nch; ++ci) {
        const int64_t after = std::min((ci + 1) * chunk, nt);
        for (int64_t i = 0; i < state; ++i)
          rdh[((bi * h + hi) * nch + ci) * state + i] = gr.dstates[after * state + i];
      }
      for (int64_t i = 0; i < state; ++i) rdh0[(bi * h + hi) * state + i] = gr.dh0[i];
    }
  {
    SCOPED_TRACE("dh");
    expect_close(dh, rdh, 2e-2);
  }
  {
    SCOPED_TRACE("dh0");
    expect_close(dh0, rdh0, 2e-2);
  }
}

void check_gated_delta_backward(const KernelRunner& run, DType t, int64_t b, int64_t nt, int64_t h,
                                int64_t kh, int64_t vh, bool norm, bool with_h0, bool with_dht,
                                int64_t chunk, const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("gated_delta backward ", dtype_name(t), " B=", b, " NT=", nt, " H=", h,
                   " KH=", kh, " VH=", vh, norm ? " NORM" : "", with_h0 ? " H0" : "",
                   with_dht ? " DHT" : "", " C=", chunk, " ", config_text(config), " seed=", seed));
  std::mt19937 rng(seed);
  GatedDeltaCase c(t, b, nt, h, kh, vh, norm, with_h0, rng);
  const int64_t nch = (nt + chunk - 1) / chunk;
  HostBuffer w(t, {b, nt, h, kh}), u(t, {b, nt, h, vh}), gc(DType::F32, {b, nt, h}),
      rq(DType::F32, {b, nt, h}), rk(DType::F32, {b, nt, h}), hs(DType::F32, {b, h, nch, kh, vh}),
      dout(t, {b, nt, h, vh}), dht(DType::F32, {b, h, kh, vh}), dh(DType::F32, {b, h, nch, kh, vh}),
      du2(DType::F32, {b, nt, h, vh}), dh0(DType::F32, {b, h, kh, vh}), dq(t, {b, nt, h, kh}),
      dk(t, {b, nt, h, kh}), dv(t, {b, nt, h, vh}), dg(DType::F32, {b, nt, h}),
      dbeta(DType::F32, {b, nt, h});
  fill_uniform(dout, rng, -1, 1);
  fill_uniform(dht, rng, -1, 1);
  for (HostBuffer* x : {&w, &u, &gc, &rq, &rk, &hs, &dh, &du2, &dh0, &dq, &dk, &dv, &dg, &dbeta})
    x->poison();
  const std::string src = "embedded:workloads/gated_delta.tile#";
  const Bindings generics = {{"T", dtype_name(t)},
                             {"DK", std::to_string(tile16(kh))},
                             {"C", std::to_string(chunk)},
                             {"NORM", norm ? "1" : "0"}};
  const TestArg scale = TestArg::f32(static_cast<float>(c.scale));
  run_prepare(run, c, generics, w, u, gc, rq, rk);
  Bindings fwd = generics;
  fwd["H0"] = with_h0 ? "1" : "0";
  fwd["SAVE"] = "1";
  run(src + "gated_delta_chunk", fwd,
      {TestArg::of(c.q), TestArg::of(c.k), TestArg::of(w), TestArg::of(u), TestArg::of(gc),
       TestArg::of(rq), TestArg::of(rk), TestArg::of(c.h0), TestArg::of(c.o), TestArg::of(c.ht),
       TestArg::of(hs), scale});
  Bindings state = generics;
  state["DHT"] = with_dht ? "1" : "0";
  run(src + "gated_delta_bwd_state", state,
      {TestArg::of(c.q), TestArg::of(c.k), TestArg::of(w), TestArg::of(gc), TestArg::of(rq),
       TestArg::of(rk), TestArg::of(dout), TestArg::of(dht), TestArg::of(dh), TestArg::of(du2),
       TestArg::of(dh0), scale});
  Bindings given = config;
  given.insert(generics.begin(), generics.end());
  run(src + "gated_delta_bwd_chunk", given,
      {TestArg::of(c.q), TestArg::of(c.k), TestArg::of(c.v), TestArg::of(c.beta), TestArg::of(gc),
       TestArg::of(rq), TestArg::of(rk), TestArg::of(w), TestArg::of(u), TestArg::of(hs),
       TestArg::of(dh), TestArg::of(du2), TestArg::of(dout), TestArg::of(dq), TestArg::of(dk),
       TestArg::of(dv), TestArg::of(dg), TestArg::of(dbeta), scale});
  // The float64 reverse of the recurrence, head by head.
  std::vector<double> rq_(static_cast<size_t>(dq.numel())), rk_(rq_.size()),
      rv(static_cast<size_t>(dv.numel())), rg(static_cast<size_t>(dg.numel())), rb(rg.size()),
      rh0(static_cast<size_t>(dh0.numel()));
  const int64_t st = kh * vh;
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hi = 0; hi < h; ++hi) {
      std::vector<double> dO, dT;
      const workloads::GatedDeltaHead head =
          c.head(bi, hi, dout, with_dht ? &dht : nullptr, dO, dT);
      const workloads::GatedDeltaHeadGradients gr =
          workloads::gated_delta_head_backward(head, dO, dT);
      for (int64_t ti = 0; ti < nt; ++ti) {
        const int64_t row = (bi * nt + ti) * h + hi;
        for (int64_t i = 0; i < kh; ++i)
          rq_[row * kh + i] = gr.dq[ti * kh + i], rk_[row * kh + i] = gr.dk[ti * kh + i];
        for (int64_t j = 0; j < vh; ++j) rv[row * vh + j] = gr.dv[ti * vh + j];
        rg[row] = gr.dg[ti];
        rb[row] = gr.dbeta[ti];
      }
      for (int64_t i = 0; i < st; ++i) rh0[(bi * h + hi) * st + i] = gr.dh0[i];
    }
  const std::pair<const char*, std::pair<const HostBuffer*, const std::vector<double>*>> outs[] = {
      {"dq", {&dq, &rq_}}, {"dk", {&dk, &rk_}},      {"dv", {&dv, &rv}},
      {"dg", {&dg, &rg}},  {"dbeta", {&dbeta, &rb}}, {"dh0", {&dh0, &rh0}}};
  for (const auto& [name, pair] : outs) {
    SCOPED_TRACE(name);
    expect_close(*pair.first, *pair.second, 3e-2);
  }
}

} // namespace tilejit::test
