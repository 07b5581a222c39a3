// The example kernels (kernels_src/examples) run by the reference interpreter on fresh random
// inputs at odd sizes and several tunable configurations, every output element compared with a
// plain C++ reference computed in double. Outputs are poisoned (NaN) first.
#include "compiler/kernel_library.h"
#include "compiler/launch_plan.h"
#include "compiler/pipeline.h"
#include "compiler/ref/run_tile.h"
#include "ref_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace tilejit::ref {
namespace {

using test::expect_close;
using test::fill_uniform;
using test::fresh_seed;

std::string config_text(const Bindings& b) {
  std::string s;
  for (const auto& [k, v] : b) s += k + "=" + v + " ";
  return s;
}

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

void check_gemm(DType t, int64_t m, int64_t n, int64_t k, const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("gemm ", dtype_name(t), " M=", m, " N=", n, " K=", k, " ", config_text(config),
                   "seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer a(t, {m, k}), b(t, {k, n}), c(t, {m, n});
  fill_uniform(a, rng, -1, 1);
  fill_uniform(b, rng, -1, 1);
  c.poison();
  auto module = load_embedded_tile("examples/gemm.tile");
  RunResult r = run_tile(module.kernel(), config, {a.arg(), b.arg(), c.arg()});
  EXPECT_EQ(r.bindings.at("T"), dtype_name(t));
  expect_close(c, gemm_reference(a, b, m, n, k), 1e-2);
}

const std::vector<Bindings> kGemmConfigs = {
    {},
    {{"BM", "16"}, {"BN", "16"}, {"BK", "16"}, {"WARPS", "1"}, {"STAGES", "1"}},
    {{"BM", "32"}, {"BN", "64"}, {"BK", "64"}, {"WARPS", "2"}, {"STAGES", "3"}},
    {{"BM", "128"}, {"BN", "32"}, {"BK", "16"}, {"WARPS", "4"}, {"STAGES", "4"}},
};

TEST(RefExamples, GemmF16) {
  for (const auto& cfg : kGemmConfigs) {
    check_gemm(DType::F16, 37, 45, 64, cfg);
    check_gemm(DType::F16, 64, 64, 96, cfg);
    check_gemm(DType::F16, 17, 33, 40, cfg); // K not a multiple of BK: the tail reads zeros
  }
}

TEST(RefExamples, GemmBF16) {
  for (const auto& cfg : kGemmConfigs) {
    check_gemm(DType::BF16, 37, 45, 64, cfg);
    check_gemm(DType::BF16, 64, 64, 96, cfg);
  }
}

// ---- softmax -----------------------------------------------------------------------------
void check_softmax(DType t, int64_t rows, int64_t cols, const Bindings& config, double tol) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("softmax ", dtype_name(t), " R=", rows, " C=", cols, " ", config_text(config),
                   "seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer x(t, {rows, cols}), y(t, {rows, cols});
  fill_uniform(x, rng, -8, 8);
  y.poison();
  Bindings given = config;
  given["T"] = dtype_name(t);
  auto module = load_embedded_tile("examples/softmax.tile");
  run_tile(module.kernel(), given, {x.arg(), y.arg()});
  std::vector<double> ref(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, x.get(r * cols + c));
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(x.get(r * cols + c) - mx);
    for (int64_t c = 0; c < cols; ++c) ref[r * cols + c] = std::exp(x.get(r * cols + c) - mx) / sum;
  }
  expect_close(y, ref, tol);
}

const std::vector<Bindings> kSoftmaxConfigs = {
    {},
    {{"BR", "1"}, {"BC", "64"}, {"WARPS", "1"}},
    {{"BR", "4"}, {"BC", "128"}, {"WARPS", "2"}},
    {{"BR", "8"}, {"BC", "512"}, {"WARPS", "8"}},
};

TEST(RefExamples, SoftmaxF32) {
  for (const auto& cfg : kSoftmaxConfigs) {
    check_softmax(DType::F32, 5, 300, cfg, 1e-5);
    check_softmax(DType::F32, 3, 1000, cfg, 1e-5);
  }
}

TEST(RefExamples, SoftmaxF16) {
  for (const auto& cfg : kSoftmaxConfigs) check_softmax(DType::F16, 5, 300, cfg, 1e-2);
}

TEST(RefExamples, SoftmaxBF16) {
  for (const auto& cfg : kSoftmaxConfigs) check_softmax(DType::BF16, 5, 300, cfg, 1e-2);
}

// ---- cumsum_rows -------------------------------------------------------------------------
void check_cumsum(DType t, int64_t rows, int64_t cols, const Bindings& config, double tol) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("cumsum_rows ", dtype_name(t), " R=", rows, " C=", cols, " ",
                   config_text(config), "seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer x(t, {rows, cols}), y(t, {rows, cols});
  fill_uniform(x, rng, -1, 1);
  y.poison();
  auto module = load_embedded_tile("examples/cumsum.tile");
  run_tile(module.kernel(), config, {x.arg(), y.arg()});
  std::vector<double> ref(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) ref[r * cols + c] = s += x.get(r * cols + c);
  }
  expect_close(y, ref, tol);
}

const std::vector<Bindings> kCumsumConfigs = {
    {},
    {{"BR", "1"}, {"BC", "32"}, {"WARPS", "1"}},
    {{"BR", "2"}, {"BC", "128"}, {"WARPS", "4"}},
    {{"BR", "8"}, {"BC", "256"}, {"WARPS", "2"}},
};

TEST(RefExamples, CumsumRows) {
  for (const auto& cfg : kCumsumConfigs) {
    check_cumsum(DType::F32, 7, 150, cfg, 1e-5);
    check_cumsum(DType::F16, 7, 150, cfg, 1e-2);
    check_cumsum(DType::BF16, 7, 150, cfg, 1e-2);
  }
}

// ---- bucket_scan -------------------------------------------------------------------------
void check_bucket_scan(int64_t basins, int64_t steps, const Bindings& config) {
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
  auto module = load_embedded_tile("examples/bucket_scan.tile");
  run_tile(module.kernel(), config, {p.arg(), params.arg(), q.arg()});
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

TEST(RefExamples, BucketScan) {
  for (const char* bb : {"32", "64", "128", "256"}) {
    check_bucket_scan(77, 33, {{"BB", bb}});
    check_bucket_scan(300, 5, {{"BB", bb}});
  }
}

// ---- later passes ------------------------------------------------------------------------
// Passes after infer-types change how a program runs on the GPU (layouts, pipelining, shared
// memory, barriers), never what it computes: the interpreter must give identical results on
// the IR each of them produces.
TEST(RefExamples, LaterPassesKeepTheMeaning) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("seed=", seed));
  std::mt19937 rng(seed);
  struct Case {
    const char* file;
    std::vector<HostBuffer> args;
    Bindings config;
  };
  std::vector<Case> cases;
  cases.push_back({"examples/gemm.tile",
                   {HostBuffer(DType::F16, {37, 64}), HostBuffer(DType::F16, {64, 45}),
                    HostBuffer(DType::F16, {37, 45})},
                   {{"BM", "32"}, {"BN", "32"}, {"BK", "16"}, {"STAGES", "3"}, {"WARPS", "2"}}});
  cases.push_back({"examples/softmax.tile",
                   {HostBuffer(DType::F16, {5, 300}), HostBuffer(DType::F16, {5, 300})},
                   {}});
  cases.push_back({"examples/cumsum.tile",
                   {HostBuffer(DType::F32, {7, 150}), HostBuffer(DType::F32, {7, 150})},
                   {}});
  cases.push_back({"examples/bucket_scan.tile",
                   {HostBuffer(DType::F32, {77, 33}), HostBuffer(DType::F32, {77, 4}),
                    HostBuffer(DType::F32, {77, 33})},
                   {{"BB", "32"}}});
  const auto& passes = pass_names();
  auto first_later = std::find(passes.begin(), passes.end(), "infer-types");
  ASSERT_NE(first_later, passes.end());
  for (auto& c : cases) {
    SCOPED_TRACE(c.file);
    auto module = load_embedded_tile(c.file);
    const dsl::Kernel& k = module.kernel();
    std::vector<HostArg> args;
    std::vector<ArgSpec> specs;
    for (auto& b : c.args) {
      fill_uniform(b, rng, 0, 1);
      args.push_back(b.arg());
      ArgSpec s;
      s.dtype = b.dtype();
      s.shape = b.shape();
      specs.push_back(s);
    }
    Bindings bindings = c.config;
    infer_generics(k, specs, bindings);
    bindings = complete_bindings(k, bindings);
    LaunchPlan plan = plan_launch(k, bindings, specs);
    HostBuffer& out = c.args.back();
    std::vector<double> want;
    for (auto pass = first_later; pass != passes.end(); ++pass) {
      SCOPED_TRACE("after " + *pass);
      out.poison();
      run_kernel(*lower_to_ir(k, bindings, {}, *pass), args, plan.grid);
      std::vector<double> got(out.numel());
      for (int64_t i = 0; i < out.numel(); ++i) got[i] = out.get(i);
      if (want.empty()) {
        want = got;
        continue;
      }
      for (int64_t i = 0; i < out.numel(); ++i)
        ASSERT_TRUE(got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])))
            << "element " << i;
    }
  }
}

} // namespace
} // namespace tilejit::ref
