// The example kernels (kernels_src/examples) on the reference interpreter: fresh random inputs
// at odd sizes and several tunable configurations, every output element compared with a plain
// C++ reference computed in double (tests/common/example_checks.cpp).
#include "compiler/kernel_library.h"
#include "compiler/launch_plan.h"
#include "compiler/pipeline.h"
#include "compiler/ref/run_tile.h"
#include "example_checks.h"
#include "paged_sparse_checks.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace tilejit::ref {
namespace {

using test::fill_uniform;
using test::fresh_seed;

const test::KernelRunner& cpu() {
  static const test::KernelRunner runner = test::interpreter_runner();
  return runner;
}

TEST(RefExamples, GemmF16) {
  for (const auto& cfg : test::gemm_configs()) {
    test::check_gemm(cpu(), DType::F16, 37, 45, 64, cfg);
    test::check_gemm(cpu(), DType::F16, 64, 64, 96, cfg);
    test::check_gemm(cpu(), DType::F16, 17, 33, 40,
                     cfg); // K not a multiple of BK: the tail reads zeros
  }
}

TEST(RefExamples, GemmBF16) {
  for (const auto& cfg : test::gemm_configs()) {
    test::check_gemm(cpu(), DType::BF16, 37, 45, 64, cfg);
    test::check_gemm(cpu(), DType::BF16, 64, 64, 96, cfg);
  }
}

// f32 operands through TF32 (the interpreter rounds them as cvt.rna.tf32 does) and exact.
TEST(RefExamples, GemmF32Tf32AndExact) {
  for (const auto& cfg : test::gemm_f32_configs())
    for (bool exact : {false, true}) {
      test::check_gemm_f32(cpu(), exact, 37, 45, 64, cfg);
      test::check_gemm_f32(cpu(), exact, 17, 33, 40, cfg); // K not a multiple of BK
    }
}

TEST(RefExamples, SoftmaxF32) {
  for (const auto& cfg : test::softmax_configs()) {
    test::check_softmax(cpu(), DType::F32, 5, 300, cfg, 1e-5);
    test::check_softmax(cpu(), DType::F32, 3, 1000, cfg, 1e-5);
  }
}

TEST(RefExamples, SoftmaxF16) {
  for (const auto& cfg : test::softmax_configs())
    test::check_softmax(cpu(), DType::F16, 5, 300, cfg, 1e-2);
}

TEST(RefExamples, SoftmaxBF16) {
  for (const auto& cfg : test::softmax_configs())
    test::check_softmax(cpu(), DType::BF16, 5, 300, cfg, 1e-2);
}

TEST(RefExamples, CumsumRows) {
  for (const auto& cfg : test::cumsum_configs()) {
    test::check_cumsum(cpu(), DType::F32, 7, 150, cfg, 1e-5);
    test::check_cumsum(cpu(), DType::F16, 7, 150, cfg, 1e-2);
    test::check_cumsum(cpu(), DType::BF16, 7, 150, cfg, 1e-2);
  }
}

TEST(RefExamples, BucketScan) {
  for (const char* bb : {"32", "64", "128", "256"}) {
    test::check_bucket_scan(cpu(), 77, 33, {{"BB", bb}});
    test::check_bucket_scan(cpu(), 300, 5, {{"BB", bb}});
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

namespace tilejit::test {
namespace {

// paged_sparse on the interpreter: small ragged problems (sequence lengths differ, kept counts
// differ per (b, kv head), including 0 and 1), f16 and bf16, several configurations.
/// B=2, Hkv=2, D=64, 16-token pages: small enough for the interpreter.
PagedSparseShape small_paged_sparse(int64_t heads_q, std::vector<int64_t> seq_lens,
                                    std::vector<int64_t> kept_lens, DType t) {
  PagedSparseShape s;
  s.batch = 2;
  s.heads_q = heads_q;
  s.heads_kv = 2;
  s.head_dim = 64;
  s.page_size = 16;
  s.seq_lens = std::move(seq_lens);
  s.kept_lens = std::move(kept_lens);
  s.dtype = t;
  return s;
}

TEST(RefWorkloads, PagedSparseRagged) {
  for (DType t : {DType::F16, DType::BF16}) {
    auto d =
        make_paged_sparse_data(small_paged_sparse(8, {300, 77}, {0, 45, 1, 77}, t), fresh_seed());
    for (const Bindings& cfg : std::vector<Bindings>{
             {{"CHUNK", "64"}, {"BN", "16"}, {"STAGES", "2"}, {"WARPS", "4"}, {"PF", "2"}},
             {{"CHUNK", "128"}, {"BN", "32"}, {"STAGES", "1"}, {"WARPS", "2"}, {"PF", "2"}},
             // one tile per chunk: the merge takes several chunks
             {{"CHUNK", "32"}, {"BN", "32"}, {"STAGES", "1"}, {"WARPS", "4"}, {"PF", "0"}},
             // chunk sizes that are not powers of two (wave balance)
             {{"CHUNK", "192"}, {"BN", "64"}, {"STAGES", "2"}, {"WARPS", "4"}, {"PF", "2"}},
             {{"CHUNK", "384"}, {"BN", "32"}, {"STAGES", "3"}, {"WARPS", "2"}}})
      check_paged_sparse(interpreter_runner(), *d, cfg);
  }
}

// More chunks than one unrolled step of the merge takes (eight, after unroll-loops): 290 kept
// tokens in chunks of 32 are ten partial results, a full step and a step with two.
TEST(RefWorkloads, PagedSparseMergeOfMoreThanEightChunks) {
  auto d = make_paged_sparse_data(small_paged_sparse(4, {300, 250}, {290, 0, 1, 200}, DType::F16),
                                  fresh_seed());
  for (const Bindings& cfg : std::vector<Bindings>{
           {{"CHUNK", "32"}, {"BN", "32"}, {"STAGES", "1"}, {"WARPS", "4"}, {"PF", "0"}},
           {{"CHUNK", "32"}, {"BN", "16"}, {"STAGES", "2"}, {"WARPS", "2"}, {"PF", "0"}}})
    check_paged_sparse(interpreter_runner(), *d, cfg);
}

} // namespace
} // namespace tilejit::test
