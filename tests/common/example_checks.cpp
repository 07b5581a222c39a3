// Example-kernel checks shared by the interpreter (CPU) and GPU tests.
#include "example_checks.h"

#include "compiler/kernel_library.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace tilejit::test {

using ref::HostBuffer;

// ---- gemm --------------------------------------------------------------------------------
std::vector<double> gemm_reference(const HostBuffer& a, const HostBuffer& b, int64_t m, int64_t n,
                                   int64_t k) {
  std::vector<double> c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += a.get(i * k + p) * b.get(p * n + j);
      c[i * n + j] = s;
    }
  return c;
}

void check_gemm(const KernelRunner& run, DType t, int64_t m, int64_t n, int64_t k,
                const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("gemm ", dtype_name(t), " M=", m, " N=", n, " K=", k, " ", config_text(config),
                   "seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer a(t, {m, k}), b(t, {k, n}), c(t, {m, n});
  fill_uniform(a, rng, -1, 1);
  fill_uniform(b, rng, -1, 1);
  c.poison();
  run("embedded:examples/gemm.tile", config, {TestArg::of(a), TestArg::of(b), TestArg::of(c)});
  expect_close(c, gemm_reference(a, b, m, n, k), 1e-2);
}

void check_gemm_f32(const KernelRunner& run, bool exact, int64_t m, int64_t n, int64_t k,
                    const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("gemm_f32 EXACT=", exact, " M=", m, " N=", n, " K=", k, " ", config_text(config),
                   "seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer a(DType::F32, {m, k}), b(DType::F32, {k, n}), c(DType::F32, {m, n});
  fill_uniform(a, rng, -1, 1);
  fill_uniform(b, rng, -1, 1);
  c.poison();
  Bindings given = config;
  given["EXACT"] = exact ? "1" : "0";
  run("embedded:examples/gemm_f32.tile", given, {TestArg::of(a), TestArg::of(b), TestArg::of(c)});
  const std::vector<double> ref = gemm_reference(a, b, m, n, k);
  // TF32 keeps 10 mantissa bits (relative error about 2^-11 per operand); 3xTF32 about fp32's.
  expect_close(c, ref, exact ? 1e-5 : 2e-3);
  if (!exact) {
    // And the operands really were rounded: fp32 products would be far closer.
    double diff = 0, norm = 0;
    for (int64_t i = 0; i < m * n; ++i)
      diff += (c.get(i) - ref[i]) * (c.get(i) - ref[i]), norm += ref[i] * ref[i];
    EXPECT_GT(std::sqrt(diff / norm), 1e-5) << "EXACT=0 gave fp32's accuracy: not TF32";
  }
}

// ---- softmax -----------------------------------------------------------------------------
void check_softmax(const KernelRunner& run, DType t, int64_t rows, int64_t cols,
                   const Bindings& config, double tol) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("softmax ", dtype_name(t), " R=", rows, " C=", cols, " ", config_text(config),
                   "seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer x(t, {rows, cols}), y(t, {rows, cols});
  fill_uniform(x, rng, -8, 8);
  y.poison();
  Bindings given = config;
  given["T"] = dtype_name(t);
  run("embedded:examples/softmax.tile", given, {TestArg::of(x), TestArg::of(y)});
  std::vector<double> ref(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, x.get(r * cols + c));
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(x.get(r * cols + c) - mx);
    for (int64_t c = 0; c < cols; ++c) ref[r * cols + c] = std::exp(x.get(r * cols + c) - mx) / sum;
  }
  expect_close(y, ref, tol);
}

// ---- cumsum_rows -------------------------------------------------------------------------
void check_cumsum(const KernelRunner& run, DType t, int64_t rows, int64_t cols,
                  const Bindings& config, double tol) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("cumsum_rows ", dtype_name(t), " R=", rows, " C=", cols, " ",
                   config_text(config), "seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer x(t, {rows, cols}), y(t, {rows, cols});
  fill_uniform(x, rng, -1, 1);
  y.poison();
  run("embedded:examples/cumsum.tile", config, {TestArg::of(x), TestArg::of(y)});
  std::vector<double> ref(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) ref[r * cols + c] = s += x.get(r * cols + c);
  }
  expect_close(y, ref, tol);
}

// ---- bucket_scan -------------------------------------------------------------------------
void check_bucket_scan(const KernelRunner& run, int64_t basins, int64_t steps,
                       const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(
      str("bucket_scan B=", basins, " T=", steps, " ", config_text(config), "seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer p(DType::F32, {basins, steps}), params(DType::F32, {basins, 4}),
      q(DType::F32, {basins, steps});
  fill_uniform(p, rng, 0, 2);
  std::uniform_real_distribution<double> decay(0.5, 0.99), cap(0.1, 1.0), k(0.05, 0.5),
      thr(0.0, 0.5);
  for (int64_t b = 0; b < basins; ++b) {
    params.set(b * 4 + 0, decay(rng));
    params.set(b * 4 + 1, cap(rng));
    params.set(b * 4 + 2, k(rng));
    params.set(b * 4 + 3, thr(rng));
  }
  q.poison();
  run("embedded:examples/bucket_scan.tile", config,
      {TestArg::of(p), TestArg::of(params), TestArg::of(q)});
  std::vector<double> ref(basins * steps);
  for (int64_t b = 0; b < basins; ++b) {
    double s = 0.001;
    for (int64_t t = 0; t < steps; ++t) {
      s = params.get(b * 4) * s + std::min(p.get(b * steps + t), params.get(b * 4 + 1));
      double out = params.get(b * 4 + 2) * std::max(s - params.get(b * 4 + 3), 0.0);
      s -= out;
      ref[b * steps + t] = out;
    }
  }
  expect_close(q, ref, 1e-5);
}

const std::vector<Bindings>& gemm_configs() {
  static const std::vector<Bindings> configs = {
      {},
      {{"BM", "16"}, {"BN", "16"}, {"BK", "16"}, {"WARPS", "1"}, {"STAGES", "1"}},
      {{"BM", "32"}, {"BN", "64"}, {"BK", "64"}, {"WARPS", "2"}, {"STAGES", "3"}},
      {{"BM", "128"}, {"BN", "32"}, {"BK", "16"}, {"WARPS", "4"}, {"STAGES", "4"}},
      {{"BM", "128"}, {"BN", "128"}, {"BK", "32"}, {"WARPS", "8"}, {"STAGES", "2"}},
  };
  return configs;
}

const std::vector<Bindings>& gemm_f32_configs() {
  static const std::vector<Bindings> configs = {
      {},
      {{"BM", "16"}, {"BN", "16"}, {"BK", "8"}, {"WARPS", "1"}, {"STAGES", "1"}},
      {{"BM", "32"}, {"BN", "64"}, {"BK", "32"}, {"WARPS", "2"}, {"STAGES", "3"}},
      {{"BM", "128"}, {"BN", "32"}, {"BK", "16"}, {"WARPS", "4"}, {"STAGES", "4"}},
      {{"BM", "128"}, {"BN", "128"}, {"BK", "32"}, {"WARPS", "8"}, {"STAGES", "2"}},
  };
  return configs;
}

const std::vector<Bindings>& softmax_configs() {
  static const std::vector<Bindings> configs = {
      {},
      {{"BR", "1"}, {"BC", "64"}, {"WARPS", "1"}},
      {{"BR", "4"}, {"BC", "128"}, {"WARPS", "2"}},
      {{"BR", "8"}, {"BC", "512"}, {"WARPS", "8"}},
  };
  return configs;
}

const std::vector<Bindings>& cumsum_configs() {
  static const std::vector<Bindings> configs = {
      {},
      {{"BR", "1"}, {"BC", "32"}, {"WARPS", "1"}},
      {{"BR", "2"}, {"BC", "128"}, {"WARPS", "4"}},
      {{"BR", "8"}, {"BC", "256"}, {"WARPS", "2"}},
  };
  return configs;
}

} // namespace tilejit::test
