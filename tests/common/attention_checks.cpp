#include "attention_checks.h"

#include "support/text.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace tilejit::test {

void check_attention_fwd(const KernelRunner& run, DType t, int64_t b, int64_t hq, int64_t hkv,
                         int64_t n, int64_t dh, bool causal, bool exact, const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("attn_fwd ", dtype_name(t), " B=", b, " HQ=", hq, " HKV=", hkv, " N=", n,
                   " DH=", dh, causal ? " causal" : "", exact ? " exact " : " ",
                   config_text(config), " seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer q(t, {b, hq, n, dh}), k(t, {b, hkv, n, dh}), v(t, {b, hkv, n, dh}),
      o(t, {b, hq, n, dh}), lse(DType::F32, {b, hq, n});
  fill_uniform(q, rng, -2, 2);
  fill_uniform(k, rng, -2, 2);
  fill_uniform(v, rng, -1, 1);
  o.poison();
  lse.poison();
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  Bindings given = config;
  given["T"] = dtype_name(t);
  given["D"] = std::to_string((dh + 15) / 16 * 16);
  given["CAUSAL"] = causal ? "1" : "0";
  given["EXACT"] = exact ? "1" : "0";
  run("embedded:workloads/attention.tile#attn_fwd", given,
      {TestArg::of(q), TestArg::of(k), TestArg::of(v), TestArg::of(o), TestArg::of(lse),
       TestArg::f32(static_cast<float>(scale))});
  // float64 reference: softmax over the keys each query may see.
  std::vector<double> ref_o(static_cast<size_t>(b * hq * n * dh)), ref_lse(b * hq * n);
  std::vector<double> s(static_cast<size_t>(n));
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t hk = h / (hq / hkv);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t keys = causal ? i + 1 : n;
        double mx = -INFINITY;
        for (int64_t j = 0; j < keys; ++j) {
          double dotv = 0;
          for (int64_t d = 0; d < dh; ++d)
            dotv +=
                q.get(((bi * hq + h) * n + i) * dh + d) * k.get(((bi * hkv + hk) * n + j) * dh + d);
          s[j] = dotv * scale;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < keys; ++j) sum += std::exp(s[j] - mx);
        for (int64_t d = 0; d < dh; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < keys; ++j)
            acc += std::exp(s[j] - mx) * v.get(((bi * hkv + hk) * n + j) * dh + d);
          ref_o[((bi * hq + h) * n + i) * dh + d] = acc / sum;
        }
        ref_lse[(bi * hq + h) * n + i] = mx + std::log(sum);
      }
    }
  const bool wide = t != DType::F32;
  expect_close(o, ref_o, wide ? 1e-2 : exact ? 1e-5 : 5e-3);
  const double lse_tol = wide ? 2e-3 : exact ? 1e-5 : 1e-3;
  double worst = 0;
  int64_t at = -1;
  for (int64_t i = 0; i < lse.numel(); ++i) {
    const double e = std::abs(lse.get(i) - ref_lse[i]);
    if (!(e <= worst)) worst = e, at = i; // NaN counts as the worst
  }
  EXPECT_LE(worst, lse_tol) << "lse element " << at << ": " << lse.get(at) << " vs " << ref_lse[at];
}

} // namespace tilejit::test
