// The workload interface on the CPU: the registry, every registered workload's problems
// consistent with its kernels (NVRTC compiles every step for sm_90a from shapes alone), a
// three-kernel toy workload and paged_sparse's user shapes run on the reference interpreter
// against their float64 references, and the user-shape parser's errors.
#include "toy_workload.h"
#include "workload_checks.h"

#include "compiler/kernel_library.h"
#include "nvrtc_test_support.h"
#include "support/error.h"
#include "test_util.h"
#include "tuner/search_space.h"
#include "tuner/tuner.h"
#include "workloads/attention_workload.h"
#include "workloads/dequant_gemm_workload.h"
#include "workloads/gated_delta_workload.h"
#include "workloads/hbv_reference.h"
#include "workloads/hbv_workload.h"
#include "workloads/paged_sparse_workload.h"
#include "workloads/problem_on_gpu.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <set>
#include <tuple>

namespace tilejit::test {
namespace {

using workloads::BufferRole;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::shared_ptr<const workloads::Workload> toy() {
  static auto w = [] {
    auto t = make_toy_workload();
    workloads::register_workload(t);
    return t;
  }();
  return w;
}

TEST(WorkloadRegistry, FindsRegisteredWorkloadsAndNamesTheOthers) {
  toy();
  EXPECT_EQ(workloads::find_workload("paged_sparse")->name(), "paged_sparse");
  EXPECT_EQ(workloads::find_workload("toy_chain")->kernels().size(), 3u);
  std::string unknown = error_of([] { workloads::find_workload("nope"); });
  EXPECT_NE(unknown.find("unknown workload 'nope'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("paged_sparse"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("toy_chain"), std::string::npos) << unknown;
  EXPECT_EQ(workloads::find_workload("gated_delta")->name(), "gated_delta");
  for (const auto& [name, summary] : workloads::planned_workloads())
    EXPECT_NE(name, "paged_sparse") << "an implemented workload is not planned";
}

TEST(WorkloadRegistry, DtypesAreParsedPerWorkload) {
  auto ps = workloads::find_workload("paged_sparse");
  EXPECT_EQ(workloads::parse_workload_dtypes(*ps, "bf16"), std::vector<DType>{DType::BF16});
  EXPECT_EQ(workloads::parse_workload_dtypes(*ps, "all").size(), 2u);
  std::string bad = error_of([&] { workloads::parse_workload_dtypes(*ps, "f32"); });
  EXPECT_NE(bad.find("--dtype 'f32': paged_sparse takes f16, bf16"), std::string::npos) << bad;
}

/// Every step names buffers the problem has, writes only buffers, and every output is written;
/// one-time steps come first; NVRTC compiles every step's kernel for the problem's shapes.
void check_consistent(const workloads::Workload& w, const workloads::Problem& p, Runtime& rt,
                      const workloads::WorkloadKernels& kernels) {
  SCOPED_TRACE(w.name() + " " + p.name());
  std::set<std::string> buffers, plan_names;
  for (const auto& b : p.buffers()) EXPECT_TRUE(buffers.insert(b.name).second) << b.name;
  const std::vector<workloads::Plan> plans = p.plans();
  ASSERT_FALSE(plans.empty());
  EXPECT_EQ(plans.front().steps.size(), p.steps().size()) << "the first plan is steps()";
  for (const workloads::Plan& plan : plans) {
    SCOPED_TRACE("plan " + plan.name);
    EXPECT_TRUE(plan_names.insert(plan.name).second) << "plan names are unique";
    std::set<std::string> written;
    bool per_call_seen = false;
    for (const auto& s : plan.steps) {
      EXPECT_FALSE(s.one_time && per_call_seen) << s.label << ": one-time steps come first";
      per_call_seen = per_call_seen || !s.one_time;
      for (const auto& a : s.args) {
        if (!a.buffer.empty()) {
          EXPECT_TRUE(buffers.count(a.buffer)) << s.label << " " << a.buffer;
        }
      }
      for (const auto& b : s.writes) {
        EXPECT_TRUE(buffers.count(b)) << s.label << " writes " << b;
        written.insert(b);
      }
      LaunchOptions lo;
      lo.config = s.generics;
      EXPECT_NO_THROW(rt.prepare(kernels.get(s.kernel), workloads::shape_only_args(p, s), lo))
          << s.label;
    }
    for (const auto& b : p.buffers()) {
      if (b.role == BufferRole::output) {
        EXPECT_TRUE(written.count(b.name)) << b.name;
      }
    }
  }
}

TEST(WorkloadInterface, EveryProblemIsConsistentWithItsKernels) {
  TJ_REQUIRE_NVRTC();
  toy();
  RuntimeOptions o;
  o.arch = "sm_90a";
  o.tune_on_first_use = false;
  Runtime rt(o);
  for (const auto& w : workloads::registered_workloads()) {
    workloads::WorkloadKernels kernels(rt, *w);
    for (const auto& p : w->cases(w->dtypes().front())) check_consistent(*w, *p, rt, kernels);
  }
}

TEST(WorkloadInterface, AThreeKernelWorkloadRunsOnTheInterpreter) {
  auto w = toy();
  for (const auto& p : w->cases(DType::F32)) {
    auto data = p->make_data(fresh_seed());
    workloads::Comparison c = run_problem_on_interpreter(*w, *p, *data);
    EXPECT_TRUE(c.ok) << p->name() << ": " << c.summary();
  }
  // User shape, odd sizes, forced tunables for one kernel only.
  auto p = w->parse_shape({{"R", "5"}, {"C", "129"}}, DType::F32);
  auto data = p->make_data(fresh_seed());
  workloads::Comparison c = run_problem_on_interpreter(*w, *p, *data, {{"WARPS", "1"}});
  EXPECT_TRUE(c.ok) << c.summary();
}

TEST(WorkloadInterface, ASkippedStepIsCaughtByTheComparison) {
  auto w = toy();
  auto p = w->parse_shape({{"R", "5"}, {"C", "129"}}, DType::F32);
  auto data = p->make_data(fresh_seed());
  // The one-time pack never ran: P stays poisoned and the result must be refused.
  class WithoutPack final : public workloads::Workload {
  public:
    explicit WithoutPack(std::shared_ptr<const workloads::Workload> w) : w_(std::move(w)) {}
    std::string name() const override { return w_->name(); }
    std::string summary() const override { return ""; }
    std::vector<workloads::KernelSource> kernels() const override { return w_->kernels(); }
    std::vector<std::string> peers() const override { return {}; }
    std::vector<DType> dtypes() const override { return w_->dtypes(); }
    std::vector<std::unique_ptr<workloads::Problem>> cases(DType t) const override {
      return w_->cases(t);
    }
    std::unique_ptr<workloads::Problem> parse_shape(const std::map<std::string, std::string>& i,
                                                    DType t) const override {
      return w_->parse_shape(i, t);
    }
    std::string shape_help() const override { return ""; }

  private:
    std::shared_ptr<const workloads::Workload> w_;
  };
  struct NoPackProblem final : workloads::Problem {
    const workloads::Problem& p;
    explicit NoPackProblem(const workloads::Problem& inner) : p(inner) {}
    std::string name() const override { return p.name(); }
    std::string describe() const override { return p.describe(); }
    DType dtype() const override { return p.dtype(); }
    std::vector<workloads::BufferSpec> buffers() const override { return p.buffers(); }
    std::vector<workloads::Step> steps() const override {
      auto s = p.steps();
      s.front().args = {workloads::StepArg::of("Y"), workloads::StepArg::of("Y")}; // not P
      s.front().writes = {"P"}; // still poisoned first
      return s;
    }
    std::unique_ptr<workloads::ProblemData> make_data(uint64_t seed) const override {
      return p.make_data(seed);
    }
    workloads::FloorWork floor() const override { return p.floor(); }
    nlohmann::json shape_json() const override { return p.shape_json(); }
  };
  NoPackProblem broken(*p);
  workloads::Comparison c = run_problem_on_interpreter(WithoutPack(w), broken, *data);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.summary().find("NaN in S"), std::string::npos) << c.summary();
}

/// paged_sparse on the interpreter for a user's shape.
void check_paged_sparse_shape(const std::map<std::string, std::string>& items, DType t) {
  auto w = workloads::find_workload("paged_sparse");
  auto p = w->parse_shape(items, t);
  SCOPED_TRACE(p->describe());
  auto data = p->make_data(fresh_seed());
  workloads::Comparison c = run_problem_on_interpreter(*w, *p, *data);
  EXPECT_TRUE(c.ok) << c.summary();
}

// Group sizes real models use (Qwen2.5-7B: 28 query heads over 4 kv heads), more query heads
// per kv head than a tensor-core tile has rows minus padding, and D = 64 and 96; ragged
// sequences with empty, single and whole kept sets.
TEST(WorkloadInterface, PagedSparseGroupSizesAndHeadDimsOnTheInterpreter) {
  check_paged_sparse_shape({{"HQ", "14"},
                            {"HKV", "2"},
                            {"D", "96"},
                            {"PS", "32"},
                            {"SEQ", "300:77"},
                            {"KEPT", "0:45:1:77"}},
                           DType::BF16);
  for (const char* g : {"5", "6", "16"})
    check_paged_sparse_shape({{"G", g},
                              {"HKV", "2"},
                              {"D", "64"},
                              {"PS", "16"},
                              {"SEQ", "130:41"},
                              {"KEPT", "130:0:1:41"}},
                             DType::F16);
}

TEST(WorkloadInterface, PagedSparseEmptyBatch) {
  check_paged_sparse_shape(
      {{"B", "0"}, {"HQ", "8"}, {"HKV", "2"}, {"D", "64"}, {"CTX", "10"}, {"R", "0.5"}},
      DType::F16);
}

/// dequant_gemm on the interpreter for a user's shape: the one-time repack and the per-call
/// kernel (int4) or the int8 kernel, every element of y against the float64 reference.
void check_dequant_shape(const std::map<std::string, std::string>& items, DType t,
                         const Config& user = {}) {
  auto w = workloads::find_workload("dequant_gemm");
  auto p = w->parse_shape(items, t);
  SCOPED_TRACE(p->describe());
  auto data = p->make_data(fresh_seed());
  // Every plan (int4: repack + w4a16_tc, and w4a16_gemv on GPTQ's tensors), outputs poisoned.
  for (const workloads::Plan& plan : p->plans()) {
    workloads::Comparison c = run_problem_on_interpreter(*w, *p, *data, user, plan.name);
    EXPECT_TRUE(c.ok) << plan.name << ": " << c.summary();
  }
}

// Odd sizes beyond the grid: N not a multiple of the tile or of 8 (qzeros' last word padded),
// M not a multiple of 8, every group size with act-order, one group over several packed
// groups, bf16, and K split across programs (the split-K last arriver writes y).
TEST(WorkloadInterface, DequantShapesOnTheInterpreter) {
  check_dequant_shape({{"M", "3"}, {"N", "72"}, {"K", "256"}, {"G", "32"}, {"ACT", "1"}},
                      DType::F16);
  check_dequant_shape({{"M", "9"}, {"N", "33"}, {"K", "192"}, {"G", "64"}, {"ACT", "1"}},
                      DType::BF16);
  check_dequant_shape({{"M", "2"}, {"N", "40"}, {"K", "384"}, {"G", "-1"}}, DType::F16);
  check_dequant_shape({{"M", "1"}, {"N", "24"}, {"K", "512"}, {"G", "128"}}, DType::BF16,
                      {{"BK", "64"}, {"STEPS", "2"}, {"BN", "32"}, {"BM", "16"}});
  // SA = 1: the scales applied to the unpacked weights (rounded to T), summed in place; WG = 1
  // (wgmma on Hopper) means the same on the interpreter.
  check_dequant_shape({{"M", "11"}, {"N", "72"}, {"K", "256"}, {"G", "64"}}, DType::F16,
                      {{"SA", "1"}, {"WG", "1"}, {"BK", "64"}, {"BN", "64"}, {"BM", "16"}});
  // With 3+ stages the wgmma dot is left running into the next iteration and the ring's
  // producer runs one tile less ahead (expand-pipelines): whole K, and K split in two slices.
  check_dequant_shape({{"M", "11"}, {"N", "72"}, {"K", "320"}, {"G", "64"}}, DType::BF16,
                      {{"SA", "1"},
                       {"WG", "1"},
                       {"BK", "64"},
                       {"BN", "64"},
                       {"BM", "16"},
                       {"STAGES", "3"},
                       {"STEPS", "5"}});
  check_dequant_shape({{"M", "7"}, {"N", "40"}, {"K", "512"}, {"G", "64"}}, DType::F16,
                      {{"SA", "1"},
                       {"WG", "1"},
                       {"BK", "64"},
                       {"BN", "64"},
                       {"BM", "8"},
                       {"STAGES", "4"},
                       {"STEPS", "4"}});
  check_dequant_shape({{"M", "5"}, {"N", "33"}, {"K", "70"}, {"BITS", "8"}}, DType::BF16);
  check_dequant_shape({{"M", "17"}, {"N", "70"}, {"K", "300"}, {"BITS", "8"}}, DType::F16,
                      {{"BK", "64"}, {"STEPS", "1"}});
}

// dequant_gemm suggests the wgmma tiles that won on an H200 to the tuner for M >= 32 (measured
// first, then the rest of the space): every suggestion is a valid configuration of w4a16_tc for
// the shape (group sizes 64 and 128, both dtypes), none for decode or act-order.
TEST(WorkloadInterface, DequantSuggestionsAreValidConfigurations) {
  auto w = workloads::find_workload("dequant_gemm");
  LoadedModule m = load_embedded_tile("workloads/dequant_gemm.tile");
  for (DType t : {DType::F16, DType::BF16})
    for (const char* g : {"64", "128"})
      for (const char* act : {"0", "1"}) {
        std::optional<SearchSpace> space; // the same for every M (the generics are T, G, ACT)
        for (const char* mm : {"1", "64", "256", "2048"}) {
          auto p =
              w->parse_shape({{"M", mm}, {"N", "6144"}, {"K", "2560"}, {"G", g}, {"ACT", act}}, t);
          const workloads::Step linear = p->plans()[0].steps.at(1); // plans() is a value
          ASSERT_EQ(linear.kernel, "w4a16_tc");
          SCOPED_TRACE(p->name());
          EXPECT_EQ(linear.suggested.empty(), std::string(mm) == "1" || std::string(act) == "1");
          Bindings generics(linear.generics.begin(), linear.generics.end());
          generics["T"] = dtype_name(t);
          if (!space) space.emplace(m.kernel("w4a16_tc"), generics, 227 * 1024);
          std::vector<std::string> skipped;
          EXPECT_EQ(suggested_seeds(*space, linear.suggested, {}, &skipped).size(),
                    linear.suggested.size());
          EXPECT_TRUE(skipped.empty()) << skipped.front();
        }
      }
}

// attention's suggestions (the wgmma forms, measured first): valid configurations of their
// kernels for 16-bit shapes with D a multiple of 64, both plans, and the block-sparse backward
// (blocks of 128 and 64); none for f32 or other D, nor for the block-sparse forward.
TEST(WorkloadInterface, AttentionSuggestionsAreValidConfigurations) {
  auto w = workloads::find_workload("attention");
  LoadedModule m = load_embedded_tile("workloads/attention.tile");
  for (DType t : {DType::BF16, DType::F16, DType::F32})
    for (const char* d : {"64", "128", "40", "192"})
      for (const char* causal : {"0", "1"})
        for (const char* sparse : {"", "128", "64"}) {
          Bindings shape = {{"B", "2"}, {"H", "4"}, {"N", "1000"}, {"D", d}, {"CAUSAL", causal}};
          if (*sparse) {
            shape["DENSITY"] = "30";
            shape["BLOCK"] = sparse;
          }
          auto p = w->parse_shape(shape, t);
          SCOPED_TRACE(p->describe());
          // The measured Hopper tiles: 16-bit, widths 64 and 128 (wider ones do not fit them).
          const bool wgmma = t != DType::F32 && (std::string(d) == "64" || std::string(d) == "128");
          for (const workloads::Plan& plan : p->plans())
            for (const workloads::Step& step : plan.steps) {
              // attn_dq (the dq_kernel plan's last step) takes the forward's tiles; at block 64,
              // which they do not divide, attn_dq_sparse takes BM 64, BN 64.
              const bool dq_kernel = step.kernel == "attn_dq" || step.kernel == "attn_dq_sparse";
              if (step.label != "forward" && step.label != "backward" && !dq_kernel) {
                EXPECT_TRUE(step.suggested.empty()) << step.label;
                continue;
              }
              // Block-sparse kernels take tiles that divide the block: the forward's wide
              // tile (BM = BN = 128) only blocks of 128.
              const bool suggests = wgmma && (!*sparse || step.label == "backward" || dq_kernel ||
                                              std::string(sparse) == "128");
              EXPECT_EQ(step.suggested.empty(), !suggests) << plan.name << " " << step.label;
              Bindings generics(step.generics.begin(), step.generics.end());
              generics["T"] = dtype_name(t);
              SearchSpace space(m.kernel(step.kernel), generics, 227 * 1024);
              std::vector<std::string> skipped;
              EXPECT_EQ(suggested_seeds(space, step.suggested, {}, &skipped).size(),
                        step.suggested.size());
              EXPECT_TRUE(skipped.empty()) << skipped.front();
              // Untuned, the step launches the op's tile on Hopper: the first suggestion (none
              // for the forward at block 64, which has no Hopper tile), a valid configuration.
              if (step.fallback.empty()) {
                EXPECT_TRUE(!suggests || (step.label == "forward" && std::string(sparse) == "64"))
                    << plan.name << " " << step.label;
                continue;
              }
              EXPECT_EQ(step.fallback, step.suggested.front()) << plan.name << " " << step.label;
              EXPECT_EQ(step.fallback_cc_major, 9);
              EXPECT_EQ(suggested_seeds(space, {step.fallback}, {}, &skipped).size(), 1u);
            }
        }
}

// Act-order's permute_tc plan on the interpreter: x's columns permuted per call, then
// w4a16_tc without the gather, against the float64 reference (odd M and N, K past a tile,
// group sizes 64 and one group, both dtypes), and on an empty batch.
TEST(WorkloadInterface, DequantActOrderWithXPermuted) {
  auto w = workloads::find_workload("dequant_gemm");
  for (DType t : {DType::F16, DType::BF16})
    for (const char* g : {"64", "-1"}) {
      auto p = w->parse_shape({{"M", "11"}, {"N", "72"}, {"K", "320"}, {"G", g}, {"ACT", "1"}}, t);
      auto data = p->make_data(fresh_seed());
      workloads::Comparison c = run_problem_on_interpreter(
          *w, *p, *data,
          {{"permute_cols:BK", "128"}, {"permute_cols:BM", "4"}, {"linear:BK", "64"}},
          "permute_tc");
      EXPECT_TRUE(c.ok) << p->name() << ": " << c.summary();
    }
  // The defaults (one row per program, 512 columns: K = 704 ends inside a program), and M = 0.
  for (const char* m : {"3", "0"}) {
    auto p = w->parse_shape({{"M", m}, {"N", "40"}, {"K", "704"}, {"ACT", "1"}}, DType::F16);
    auto data = p->make_data(fresh_seed());
    workloads::Comparison c = run_problem_on_interpreter(*w, *p, *data, {}, "permute_tc");
    EXPECT_TRUE(c.ok) << p->name() << ": " << c.summary();
  }
}

TEST(WorkloadInterface, DequantEmptyBatch) {
  check_dequant_shape({{"M", "0"}, {"N", "40"}, {"K", "64"}}, DType::F16);
  check_dequant_shape({{"M", "0"}, {"N", "40"}, {"K", "64"}, {"BITS", "8"}}, DType::F16);
}

/// attention on the interpreter for a user's shape: forward and the three backward kernels,
/// o, lse, dq, dk and dv against float64.
void check_attention_shape(const std::map<std::string, std::string>& items, DType t,
                           const Config& user = {}) {
  auto w = workloads::find_workload("attention");
  auto p = w->parse_shape(items, t);
  SCOPED_TRACE(p->describe());
  auto data = p->make_data(fresh_seed());
  // Every plan (dq by atomics, or by attn_dq / attn_dq_sparse), each on outputs poisoned anew.
  for (const workloads::Plan& plan : p->plans()) {
    workloads::Comparison c = run_problem_on_interpreter(*w, *p, *data, user, plan.name);
    EXPECT_TRUE(c.ok) << plan.name << ": " << c.summary();
  }
}

TEST(WorkloadInterface, AttentionShapesOnTheInterpreter) {
  const Config small = {{"BM", "16"}, {"BN", "16"}, {"STAGES", "2"}, {"WARPS", "1"}};
  check_attention_shape({{"H", "4"}, {"HKV", "2"}, {"N", "37"}, {"D", "40"}}, DType::F16, small);
  check_attention_shape({{"B", "2"}, {"H", "2"}, {"N", "33"}, {"D", "16"}, {"CAUSAL", "1"}},
                        DType::BF16, small);
  check_attention_shape(
      {{"H", "2"}, {"HKV", "1"}, {"N", "20"}, {"D", "24"}, {"CAUSAL", "1"}, {"EXACT", "1"}},
      DType::F32, small);
  // Block-sparse: the sparse kernels over the workload's lists, N not a multiple of the block.
  check_attention_shape(
      {{"H", "2"}, {"HKV", "1"}, {"N", "150"}, {"D", "16"}, {"DENSITY", "50"}, {"BLOCK", "64"}},
      DType::F16, small);
  check_attention_shape(
      {{"H", "2"}, {"N", "130"}, {"D", "16"}, {"CAUSAL", "1"}, {"DENSITY", "40"}, {"BLOCK", "64"}},
      DType::BF16, small);
}

// gated_delta's linear attention: the forward and the backward (three launches of one kernel,
// operands exchanged, or dk and dv in one pass) against the float64 recurrence: Dk != Dv and not
// multiples of 16, T not a multiple of the chunk (one step too), several heads and batches, VH
// split over programs.
TEST(WorkloadInterface, GatedDeltaShapesOnTheInterpreter) {
  auto w = workloads::find_workload("gated_delta");
  const Config small = {{"C", "16"}, {"BV", "16"}, {"STAGES", "2"}, {"WARPS", "1"}};
  for (const auto& [items, t] : std::vector<std::pair<std::map<std::string, std::string>, DType>>{
           {{{"B", "2"}, {"T", "37"}, {"H", "3"}, {"DK", "24"}, {"DV", "40"}}, DType::F16},
           {{{"T", "1"}, {"D", "8"}}, DType::BF16},
           {{{"B", "1"}, {"T", "50"}, {"H", "2"}, {"D", "32"}, {"RULE", "linear"}}, DType::BF16}}) {
    auto p = w->parse_shape(items, t);
    SCOPED_TRACE(p->describe());
    // Both plans: the backward's dk and dv by two anti-causal launches, or in one reverse pass.
    for (const char* plan : {"separate", "fused_kv"}) {
      SCOPED_TRACE(plan);
      auto data = p->make_data(fresh_seed());
      workloads::Comparison c = run_problem_on_interpreter(*w, *p, *data, small, plan);
      EXPECT_TRUE(c.ok) << c.summary();
    }
  }
  // The gated delta rule (RULE=delta), both plans: chunked (the default; chunks of 16 and 32,
  // T past a chunk) and recurrent, with and without normalisation and an initial state, odd
  // sizes, one step, no steps (ht = h0).
  const Config rule_small = {{"BV", "16"}, {"WARPS", "1"}, {"forward:STAGES", "2"}};
  for (const auto& [items, t] : std::vector<std::pair<std::map<std::string, std::string>, DType>>{
           {{{"B", "2"},
             {"T", "23"},
             {"H", "3"},
             {"DK", "24"},
             {"DV", "40"},
             {"RULE", "delta"},
             {"CHUNK", "16"}},
            DType::F16},
           {{{"T", "40"},
             {"D", "32"},
             {"RULE", "delta"},
             {"NORM", "0"},
             {"H0", "1"},
             {"CHUNK", "32"}},
            DType::BF16},
           {{{"T", "1"}, {"D", "8"}, {"RULE", "delta"}, {"H0", "1"}, {"CHUNK", "16"}}, DType::F16},
           {{{"B", "2"}, {"T", "0"}, {"D", "16"}, {"RULE", "delta"}, {"H0", "1"}}, DType::BF16}}) {
    auto p = w->parse_shape(items, t);
    SCOPED_TRACE(p->describe());
    EXPECT_EQ(p->plans().front().name, "chunked");
    for (const char* plan : {"chunked", "recurrent"}) {
      SCOPED_TRACE(plan);
      auto data = p->make_data(fresh_seed());
      Config config = rule_small;
      if (std::string(plan) == "recurrent") config.erase("forward:STAGES");
      workloads::Comparison c = run_problem_on_interpreter(*w, *p, *data, config, plan);
      EXPECT_TRUE(c.ok) << c.summary();
    }
  }
  // The rule's backward (BWD=1, the chunked plan only): every gradient against the float64
  // reverse of the recurrence, normalised or not, h0 or not, T past a chunk, one step.
  for (const auto& [items, t] :
       std::vector<std::pair<std::map<std::string, std::string>, DType>>{{{{"B", "2"},
                                                                           {"T", "37"},
                                                                           {"H", "2"},
                                                                           {"DK", "24"},
                                                                           {"DV", "40"},
                                                                           {"RULE", "delta"},
                                                                           {"CHUNK", "16"},
                                                                           {"BWD", "1"}},
                                                                          DType::F16},
                                                                         {{{"T", "40"},
                                                                           {"D", "16"},
                                                                           {"RULE", "delta"},
                                                                           {"NORM", "0"},
                                                                           {"H0", "1"},
                                                                           {"CHUNK", "32"},
                                                                           {"BWD", "1"}},
                                                                          DType::BF16},
                                                                         {{{"B", "2"},
                                                                           {"T", "1"},
                                                                           {"H", "3"},
                                                                           {"D", "8"},
                                                                           {"RULE", "delta"},
                                                                           {"H0", "1"},
                                                                           {"CHUNK", "16"},
                                                                           {"BWD", "1"}},
                                                                          DType::F16}}) {
    auto p = w->parse_shape(items, t);
    SCOPED_TRACE(p->describe());
    ASSERT_EQ(p->plans().size(), 1u);
    EXPECT_EQ(p->variant(), "gated_delta_rule.fwd_bwd");
    EXPECT_EQ(p->steps().size(), 4u);
    auto data = p->make_data(fresh_seed());
    workloads::Comparison c =
        run_problem_on_interpreter(*w, *p, *data, {{"BV", "16"}, {"WARPS", "1"}}, "chunked");
    EXPECT_TRUE(c.ok) << c.summary();
    EXPECT_EQ(c.errors.size(), 8u);
  }
  // The forward and the backward's three launches, the anti-causal ones with REV = 1.
  auto p = w->parse_shape({{"T", "20"}, {"D", "16"}}, DType::F16);
  EXPECT_EQ(p->steps().size(), 4u);
  EXPECT_EQ(p->steps()[2].generics.at("REV"), "1");
}

TEST(GatedDeltaShape, ParsesAndRefusesShapes) {
  using workloads::parse_linear_attn_shape;
  auto s =
      parse_linear_attn_shape({{"b", "4"}, {"t", "2048"}, {"h", "16"}, {"d", "128"}}, DType::BF16);
  EXPECT_EQ(s.batch * s.heads, 64);
  EXPECT_EQ(s.key_dim, 128);
  EXPECT_EQ(s.value_dim, 128);
  auto odd = parse_linear_attn_shape({{"T", "9"}, {"DK", "24"}, {"DV", "40"}}, DType::F16);
  EXPECT_EQ(odd.key_tile(), 32);
  EXPECT_EQ(odd.value_tile(), 48);
  EXPECT_EQ(odd.heads, 1);
  auto err = [](std::map<std::string, std::string> items) {
    return error_of([&] { workloads::parse_linear_attn_shape(items, DType::F16); });
  };
  EXPECT_NE(err({{"D", "32"}}).find("needs T"), std::string::npos);
  EXPECT_NE(err({{"T", "8"}}).find("needs D, or DK and DV"), std::string::npos);
  EXPECT_NE(err({{"T", "8"}, {"DK", "8"}}).find("needs D, or DK and DV"), std::string::npos);
  EXPECT_NE(err({{"T", "8"}, {"D", "8"}, {"DV", "8"}}).find("give D (both head dims) or DK and DV"),
            std::string::npos);
  EXPECT_NE(err({{"T", "8"}, {"D", "300"}}).find("D=300 must be from 1 to 256"), std::string::npos);
  EXPECT_NE(err({{"T", "8"}, {"DK", "8"}, {"DV", "0"}}).find("DV=0 must be from 1 to 256"),
            std::string::npos);
  EXPECT_NE(err({{"T", "8"}, {"D", "8"}, {"H", "0"}}).find("H=0 must be at least 1"),
            std::string::npos);
  EXPECT_NE(err({{"T", "-8"}, {"D", "8"}}).find("T=-8: expected a non-negative"),
            std::string::npos);
  EXPECT_NE(err({{"T", "8"}, {"D", "8"}, {"RULE", "delta"}}).find("not a linear attention shape"),
            std::string::npos);
  EXPECT_NE(
      err({{"T", "8"}, {"D", "8"}, {"rule", "gated"}}).find("RULE=gated: expected linear or delta"),
      std::string::npos);
  EXPECT_NE(err({{"T", "8"}, {"D", "8"}, {"NORM", "1"}}).find("NORM: is for RULE=delta"),
            std::string::npos);
  // The delta rule's flags.
  using workloads::parse_gated_delta_rule_shape;
  auto d = parse_gated_delta_rule_shape({{"T", "9"}, {"D", "64"}, {"Rule", "delta"}}, DType::BF16);
  EXPECT_TRUE(d.normalize);
  EXPECT_FALSE(d.initial_state);
  d = parse_gated_delta_rule_shape(
      {{"T", "9"}, {"DK", "24"}, {"DV", "8"}, {"RULE", "delta"}, {"norm", "0"}, {"h0", "1"}},
      DType::F16);
  EXPECT_FALSE(d.normalize);
  EXPECT_TRUE(d.initial_state);
  EXPECT_EQ(d.key_tile(), 32);
  auto derr = [](std::map<std::string, std::string> items) {
    return error_of([&] { workloads::parse_gated_delta_rule_shape(items, DType::F16); });
  };
  EXPECT_NE(
      derr({{"T", "8"}, {"D", "8"}, {"RULE", "delta"}, {"H0", "2"}}).find("H0=2: expected 0 or 1"),
      std::string::npos);
  EXPECT_NE(derr({{"T", "8"}, {"D", "8"}}).find("not a gated delta rule shape"), std::string::npos);
  EXPECT_EQ(d.chunk, 64);
  EXPECT_EQ(parse_gated_delta_rule_shape(
                {{"T", "9"}, {"D", "8"}, {"RULE", "delta"}, {"chunk", "32"}}, DType::F16)
                .chunk,
            32);
  EXPECT_NE(derr({{"T", "8"}, {"D", "8"}, {"RULE", "delta"}, {"CHUNK", "48"}})
                .find("CHUNK=48: expected 16, 32 or 64"),
            std::string::npos);
  EXPECT_NE(derr({{"T", "8"}, {"D", "8"}, {"RULE", "delta"}, {"CHUNK", "x"}}).find("CHUNK"),
            std::string::npos);
  EXPECT_NE(err({{"T", "8"}, {"D", "8"}, {"CHUNK", "16"}}).find("CHUNK: is for RULE=delta"),
            std::string::npos);
  EXPECT_NE(derr({{"T", "8"}, {"D", "8"}, {"RULE", "delta"}, {"BWD", "2"}})
                .find("BWD=2: expected 0 or 1"),
            std::string::npos);
  EXPECT_NE(err({{"T", "8"}, {"D", "8"}, {"BWD", "1"}}).find("BWD: is for RULE=delta"),
            std::string::npos);
  EXPECT_TRUE(parse_gated_delta_rule_shape(
                  {{"T", "9"}, {"D", "8"}, {"RULE", "delta"}, {"bwd", "1"}}, DType::F16)
                  .backward);
  EXPECT_NE(err({{"T", "8"}, {"D", "8"}, {"N", "8"}}).find("gated_delta has no size 'N'"),
            std::string::npos);
  auto w = workloads::find_workload("gated_delta");
  EXPECT_EQ(w->cases(DType::BF16).size(), 5u);
  EXPECT_EQ(w->cases(DType::BF16).back()->name(), "linear/B4/T8192/H16/D128");
  EXPECT_EQ(w->cases(DType::BF16).front()->shape_json().dump(),
            R"({"B":128,"D":32,"H":4,"T":256})");
  EXPECT_EQ(w->cases(DType::BF16).front()->variant(), "linear_attn.fwd_bwd");
  auto delta = w->parse_shape(
      {{"T", "9"}, {"DK", "16"}, {"DV", "8"}, {"RULE", "delta"}, {"H0", "1"}}, DType::BF16);
  EXPECT_EQ(delta->variant(), "gated_delta_rule.fwd");
  EXPECT_EQ(delta->shape_json().dump(), R"({"B":1,"DK":16,"DV":8,"H":1,"T":9,"h0":true})");
}

// hbv: the forward, the gradients zeroed and the backward reverse mode derives, against the
// float64 forward and hand-written adjoint: odd B (a partial program), T not a multiple of CK,
// one day, no days, no basins.
TEST(WorkloadInterface, HbvShapesOnTheInterpreter) {
  auto w = workloads::find_workload("hbv");
  const Config small = {{"BB", "32"}, {"WARPS", "1"}, {"CK", "16"}, {"BT", "32"}};
  for (const auto& [b, t, nm] : std::vector<std::tuple<const char*, const char*, const char*>>{
           {"37", "50", "1"},
           {"5", "1", "1"},
           {"6", "0", "1"},
           {"0", "7", "1"},
           {"9", "40", "16"}, // components per basin in one kernel
           {"13", "70", "2"},
           {"3", "1", "4"},
           {"4", "0", "8"}}) {
    auto p = w->parse_shape({{"B", b}, {"T", t}, {"NMUL", nm}}, DType::F32);
    SCOPED_TRACE(p->describe());
    auto data = p->make_data(fresh_seed());
    // Every plan: the checkpointed kernel, the segment forms, and the reverse from the training
    // forward's checkpoints.
    for (const workloads::Plan& plan : p->plans()) {
      // (With components the derived kernels take their own block of basins: the plan's.)
      const Config config = std::string(nm) == "1" ? small : Config{{"CK", "16"}, {"BT", "32"}};
      workloads::Comparison c = run_problem_on_interpreter(*w, *p, *data, config, plan.name);
      EXPECT_TRUE(c.ok) << plan.name << ": " << c.summary();
    }
  }
}

// hbv's comparison leaves out the gradients of basins near a kink (where f32 may take another
// branch than float64), and only those: outputs equal to the reference pass; one clear basin's
// gradient off by 1% fails; a near basin's off by as much passes.
TEST(WorkloadInterface, HbvComparisonLeavesOutOnlyTheBasinsNearAKink) {
  auto w = workloads::find_workload("hbv");
  const int64_t b = 200, t = 1461;
  auto p = w->parse_shape({{"B", std::to_string(b)}, {"T", std::to_string(t)}}, DType::F32);
  auto data = p->make_data(fresh_seed());
  // The reference on the problem's own (f32-rounded) inputs, written as the outputs.
  workloads::HbvInputs in;
  in.b = b, in.t = t;
  auto values = [&](const char* name) {
    std::vector<double> v(size_t(data->buffer(name).numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = data->buffer(name).get(int64_t(i));
    return v;
  };
  in.p = values("P"), in.temp = values("TEMP"), in.pet = values("PET");
  in.params = values("params");
  std::vector<double> nearest;
  const std::vector<double> q = workloads::hbv_forward(in, nullptr, &nearest);
  const workloads::HbvGradients g = workloads::hbv_backward(in, values("d_Q"));
  auto write = [&](const char* name, const std::vector<double>& v) {
    for (size_t i = 0; i < v.size(); ++i) data->buffer(name).set(int64_t(i), v[i]);
  };
  write("Q", q), write("d_P", g.p), write("d_TEMP", g.temp), write("d_PET", g.pet);
  write("d_params", g.params);
  workloads::Comparison c = data->compare();
  EXPECT_TRUE(c.ok) << c.summary();
  int64_t clear = -1, near = -1;
  for (int64_t i = 0; i < b; ++i) (nearest[size_t(i)] < workloads::kHbvNearKink ? near : clear) = i;
  ASSERT_GE(clear, 0);
  ASSERT_GE(near, 0) << "200 random basins over 1461 days should have one near a tie";
  auto scaled_row = [&](int64_t basin, double f) {
    auto& d = data->buffer("d_params");
    for (int j = 0; j < workloads::kHbvParams; ++j)
      d.set(basin * workloads::kHbvParams + j,
            g.params[size_t(basin * workloads::kHbvParams + j)] * f);
  };
  // The check is on the whole tensor's norm: make the clear basin's error count.
  scaled_row(clear, 1 + 0.2 * std::sqrt(double(b)));
  EXPECT_FALSE(data->compare().ok) << "a clear basin's wrong gradient passed";
  scaled_row(clear, 1);
  scaled_row(near, 1 + 0.2 * std::sqrt(double(b)));
  c = data->compare();
  EXPECT_TRUE(c.ok) << "a basin near a kink is compared: " << c.summary();
}

TEST(HbvShape, ParsesAndRefusesShapes) {
  auto s = workloads::parse_hbv_shape({{"b", "1000"}, {"T", "1461"}});
  EXPECT_EQ(s.b, 1000);
  EXPECT_EQ(s.t, 1461);
  EXPECT_NE(error_of([] {
              workloads::parse_hbv_shape({{"B", "10"}});
            }).find("--shape for hbv needs T (it takes B, the basins, and T, the days)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              workloads::parse_hbv_shape({{"B", "-3"}, {"T", "5"}});
            }).find("B"),
            std::string::npos);
  const std::string unknown = error_of([] {
    workloads::parse_hbv_shape({{"B", "3"}, {"T", "5"}, {"N", "2"}});
  });
  EXPECT_NE(unknown.find("hbv has no size 'N'"), std::string::npos) << unknown;
  EXPECT_EQ(workloads::parse_hbv_shape({{"B", "10"}, {"T", "5"}, {"nmul", "16"}}).nm, 16);
  EXPECT_EQ(workloads::parse_hbv_shape({{"B", "10"}, {"T", "5"}}).nm, 1);
  const std::string three = error_of([] {
    workloads::parse_hbv_shape({{"B", "3"}, {"T", "5"}, {"NMUL", "3"}});
  });
  EXPECT_NE(three.find("--shape NMUL=3: components per basin run in one kernel for 2, 4, 8 or 16"),
            std::string::npos)
      << three;
  EXPECT_NE(error_of([] {
              workloads::parse_hbv_shape({{"B", "3"}, {"T", "5"}, {"NMUL", "0"}});
            }).find("NMUL"),
            std::string::npos);
  const std::string huge = error_of([] {
    workloads::parse_hbv_shape({{"B", "1000000"}, {"T", "100000"}});
  });
  EXPECT_NE(huge.find("is more than 2^34"), std::string::npos) << huge;
  const std::string days = error_of([] {
    workloads::parse_hbv_shape({{"B", "0"}, {"T", "3000000000"}});
  });
  EXPECT_NE(days.find("at most 2147483647 days"), std::string::npos) << days;
}

TEST(AttentionShape, ParsesAndRefusesShapes) {
  using workloads::parse_attention_shape;
  auto s = parse_attention_shape(
      {{"h", "16"}, {"hkv", "4"}, {"n", "1000"}, {"d", "128"}, {"causal", "1"}}, DType::BF16);
  EXPECT_EQ(s.batch, 1);
  EXPECT_EQ(s.heads_q / s.heads_kv, 4);
  EXPECT_TRUE(s.causal);
  EXPECT_EQ(s.tile_width(), 128);
  auto err = [](std::map<std::string, std::string> items, DType t = DType::F16) {
    return error_of([&] { workloads::parse_attention_shape(items, t); });
  };
  EXPECT_NE(err({{"H", "6"}, {"HKV", "4"}, {"N", "8"}, {"D", "64"}})
                .find("H=6 is not a multiple of HKV=4"),
            std::string::npos);
  EXPECT_NE(err({{"H", "6"}, {"N", "8"}, {"D", "60"}}).find("D=60 is not a multiple of 8"),
            std::string::npos);
  EXPECT_NE(err({{"H", "6"}, {"N", "8"}}).find("needs D"), std::string::npos);
  EXPECT_NE(err({{"H", "6"}, {"N", "8"}, {"D", "64"}, {"EXACT", "1"}}).find("EXACT=1 is for f32"),
            std::string::npos);
  EXPECT_NE(
      err({{"H", "6"}, {"N", "8"}, {"D", "64"}, {"CAUSAL", "2"}}).find("CAUSAL=2: expected 0 or 1"),
      std::string::npos);
  EXPECT_NE(err({{"H", "6"}, {"N", "-8"}, {"D", "64"}}).find("N=-8: expected a non-negative"),
            std::string::npos);
  EXPECT_NE(err({{"Q", "6"}}).find("attention has no size 'Q'"), std::string::npos);
  EXPECT_NE(err({{"H", "6"}, {"N", "8"}, {"D", "64"}, {"DENSITY", "0"}})
                .find("DENSITY=0: expected a percent of the key blocks from 1 to 100"),
            std::string::npos);
  EXPECT_NE(err({{"H", "6"}, {"N", "8"}, {"D", "64"}, {"DENSITY", "10"}, {"BLOCK", "96"}})
                .find("BLOCK=96: the block-sparse kernels take blocks of 64 or 128"),
            std::string::npos);
  EXPECT_NE(err({{"H", "6"}, {"N", "8"}, {"D", "64"}, {"BLOCK", "64"}})
                .find("BLOCK is for block-sparse shapes: give DENSITY too"),
            std::string::npos);
  auto sp = parse_attention_shape({{"H", "16"}, {"N", "8192"}, {"D", "128"}, {"DENSITY", "10"}},
                                  DType::BF16);
  EXPECT_TRUE(sp.sparse());
  EXPECT_EQ(sp.blocks(), 64);
  EXPECT_EQ(sp.kept_blocks(), 6); // round(6.4): the yardstick's 9.4%
  // The grid: f32 seed shapes, 16-bit long shapes.
  auto w = workloads::find_workload("attention");
  EXPECT_EQ(w->cases(DType::F32).size(), 16u);
  EXPECT_EQ(w->cases(DType::F32).back()->name(), "B2/H16/HKV4/N1024/D64");
  EXPECT_EQ(w->cases(DType::F32).back()->shape_json().dump(),
            R"({"B":2,"D":64,"H":16,"Hkv":4,"N":1024,"causal":false})");
  EXPECT_EQ(w->cases(DType::BF16).size(), 18u); // 12 dense, 6 block-sparse
  EXPECT_EQ(w->cases(DType::BF16).back()->name(), "B4/H16/N16384/D128/sparse50");
  EXPECT_EQ(w->cases(DType::BF16).front()->name(), "B4/H16/N2048/D64");
}

TEST(DequantShape, ParsesTheUsersShapes) {
  using workloads::parse_dequant_shape;
  auto s = parse_dequant_shape({{"m", "16"}, {"layer", "gate_up"}}, DType::BF16);
  EXPECT_EQ(s.m, 16);
  EXPECT_EQ(s.n, 19456);
  EXPECT_EQ(s.k, 2560);
  EXPECT_EQ(s.bits, 4);
  EXPECT_EQ(s.group, 128);
  EXPECT_FALSE(s.act_order);
  EXPECT_EQ(s.dtype, DType::BF16);
  auto t = parse_dequant_shape({{"N", "33"}, {"K", "64"}, {"G", "-1"}, {"ACT", "1"}}, DType::F16);
  EXPECT_EQ(t.m, 1);
  EXPECT_EQ(t.group, -1);
  EXPECT_EQ(t.kernel_group(), 128);
  EXPECT_TRUE(t.act_order);
  auto e = parse_dequant_shape({{"N", "33"}, {"K", "70"}, {"BITS", "8"}}, DType::F16);
  EXPECT_EQ(e.bits, 8);
  // The grid: 60 shapes, small M first, names that --case can pick.
  auto cases = workloads::find_workload("dequant_gemm")->cases(DType::F16);
  ASSERT_EQ(cases.size(), 60u);
  EXPECT_EQ(cases.front()->name(), "int4/M1/qkv");
  EXPECT_EQ(cases.back()->name(), "int8/M2048/lm_head");
  EXPECT_EQ(cases.front()->variant(), "int4");
  EXPECT_EQ(cases.front()->shape_json().dump(), R"({"G":128,"K":2560,"M":1,"N":6144})");
  // The floor: packed words, scales, zeros, x and y (qkv at M = 1: 7.9 MB).
  EXPECT_NEAR(cases.front()->floor().bytes,
              6144.0 * 2560 / 2 + 20 * 6144 * 2 + 20 * 768 * 4 + 2560 * 2 + 6144 * 2, 1);
}

TEST(DequantShape, BadShapesNameTheProblem) {
  auto err = [](std::map<std::string, std::string> items) {
    return error_of([&] { workloads::parse_dequant_shape(items, DType::F16); });
  };
  EXPECT_EQ(err({{"N", "64"}, {"K", "128"}}), "(no error)");
  EXPECT_NE(err({{"N", "64"}, {"K", "100"}}).find("K=100 is not a multiple of 8"),
            std::string::npos);
  EXPECT_NE(err({{"N", "64"}}).find("needs N and K"), std::string::npos);
  EXPECT_NE(err({{"LAYER", "qkv"}, {"N", "3"}}).find("LAYER (which sets N and K) or N and K"),
            std::string::npos);
  EXPECT_NE(err({{"LAYER", "mlp"}}).find("LAYER=mlp: expected qkv, o, gate_up, down or lm_head"),
            std::string::npos);
  EXPECT_NE(err({{"N", "64"}, {"K", "128"}, {"BITS", "3"}}).find("BITS=3"), std::string::npos);
  EXPECT_NE(err({{"N", "64"}, {"K", "128"}, {"G", "48"}}).find("G=48: expected a group size"),
            std::string::npos);
  EXPECT_NE(err({{"N", "64"}, {"K", "128"}, {"ACT", "2"}}).find("ACT=2: expected 0 or 1"),
            std::string::npos);
  EXPECT_NE(err({{"N", "64"}, {"K", "128"}, {"BITS", "8"}, {"ACT", "1"}}).find("int8 has one"),
            std::string::npos);
  EXPECT_NE(err({{"N", "0"}, {"K", "128"}}).find("must be at least 1"), std::string::npos);
  EXPECT_NE(err({{"N", "64"}, {"K", "128"}, {"M", "-1"}}).find("M=-1: expected 0..65536"),
            std::string::npos);
  EXPECT_NE(err({{"N", "999999999999"}, {"K", "999999999992"}}).find("over 2^32 weights"),
            std::string::npos);
  EXPECT_NE(err({{"N", "6x"}, {"K", "128"}}).find("N=6x: expected an integer"), std::string::npos);
  EXPECT_NE(err({{"Q", "1"}}).find("dequant_gemm has no size 'Q'"), std::string::npos);
}

TEST(PagedSparseShape, ParsesTheUsersShapes) {
  using workloads::parse_paged_sparse_shape;
  auto s = parse_paged_sparse_shape({{"b", "5"},
                                     {"hq", "28"},
                                     {"hkv", "4"},
                                     {"d", "128"},
                                     {"ps", "32"},
                                     {"seq", "1000:2000:77:5:3000"},
                                     {"r", "0.05"}},
                                    DType::BF16);
  EXPECT_EQ(s.batch, 5);
  EXPECT_EQ(s.heads_q / s.heads_kv, 7);
  EXPECT_EQ(s.seq_lens, (std::vector<int64_t>{1000, 2000, 77, 5, 3000}));
  ASSERT_EQ(s.kept_lens.size(), 20u);
  EXPECT_EQ(s.kept_lens[0], 50);
  EXPECT_EQ(s.kept_lens[2 * 4 + 3], 4); // round(0.05 * 77)
  EXPECT_EQ(s.dtype, DType::BF16);
  auto g = parse_paged_sparse_shape(
      {{"G", "6"}, {"HKV", "2"}, {"D", "64"}, {"CTX", "100"}, {"KEPT", "0:1:2:3"}, {"B", "2"}},
      DType::F16);
  EXPECT_EQ(g.heads_q, 12);
  EXPECT_EQ(g.page_size, 16);
  EXPECT_EQ(g.kept_lens, (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(PagedSparseShape, BadShapesNameTheProblem) {
  using workloads::parse_paged_sparse_shape;
  auto err = [](std::map<std::string, std::string> items) {
    return error_of([&] { workloads::parse_paged_sparse_shape(items, DType::F16); });
  };
  std::map<std::string, std::string> good = {
      {"HQ", "28"}, {"HKV", "4"}, {"D", "128"}, {"CTX", "100"}, {"R", "0.1"}};
  auto with = [&](std::map<std::string, std::string> change, std::vector<std::string> drop = {}) {
    auto m = good;
    for (const auto& d : drop) m.erase(d);
    for (const auto& [k, v] : change) m[k] = v;
    return err(m);
  };
  EXPECT_EQ(err(good), "(no error)");
  EXPECT_NE(with({{"HKV", "5"}}).find("HQ=28 is not a multiple of HKV=5"), std::string::npos);
  EXPECT_NE(with({}, {"HKV"}).find("needs the heads"), std::string::npos);
  EXPECT_NE(with({{"HKV", "1"}}).find("G = HQ/HKV = 28"), std::string::npos);
  EXPECT_NE(with({}, {"D"}).find("needs D"), std::string::npos);
  EXPECT_NE(with({{"D", "100"}}).find("D=100: paged_sparse supports head dims 64, 96, 128, 256"),
            std::string::npos);
  EXPECT_NE(with({{"PS", "12"}}).find("PS=12"), std::string::npos);
  EXPECT_NE(with({}, {"CTX"}).find("needs the sequence lengths"), std::string::npos);
  EXPECT_NE(with({{"SEQ", "1:2"}}).find("CTX"), std::string::npos); // both given
  EXPECT_NE(with({{"SEQ", "10:20"}, {"B", "3"}}, {"CTX"}).find("B=3 but SEQ lists 2"),
            std::string::npos);
  EXPECT_NE(with({}, {"R"}).find("needs the kept tokens"), std::string::npos);
  EXPECT_NE(with({{"KEPT", "3"}}).find("not both"), std::string::npos);
  EXPECT_NE(with({{"R", "2"}}).find("R=2: expected a share between 0 and 1"), std::string::npos);
  EXPECT_NE(with({{"KEPT", "101"}}, {"R"}).find("101 kept tokens for sequence 0"),
            std::string::npos);
  EXPECT_NE(with({{"KEPT", "1:2:3"}}, {"R"}).find("KEPT lists 3 counts"), std::string::npos);
  EXPECT_NE(with({{"CTX", "-4"}}).find("CTX=-4: expected a non-negative integer"),
            std::string::npos);
  EXPECT_NE(with({{"CTX", "99999999999999999999"}}).find("expected a non-negative integer"),
            std::string::npos);
  EXPECT_NE(with({{"FOO", "1"}}).find("no size 'FOO'"), std::string::npos);
  EXPECT_NE(with({{"G", "3"}}).find("HQ=28 is not HKV=4 times G=3"), std::string::npos);
  EXPECT_NE(with({{"B", "5000"}}).find("B=5000 is over 4096"), std::string::npos);
  // HKV times G past int64 (found by the mutation test below under UBSan).
  EXPECT_NE(with({{"HKV", "9999999994"}, {"G", "999999999997"}}, {"HQ"})
                .find("HKV=9999999994 times G=999999999997 query heads is too large"),
            std::string::npos);
  EXPECT_NE(with({{"HKV", "9999999994"}, {"G", "999999999997"}})
                .find("HKV=9999999994 times G=999999999997 query heads is too large"),
            std::string::npos);
}

/// "K=V,K=V" into items the way the CLI splits --shape.
std::map<std::string, std::string> items_of(const std::string& text) {
  std::map<std::string, std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string part =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = part.find('=');
    if (eq != std::string::npos) items[part.substr(0, eq)] = part.substr(eq + 1);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

// --shape is an input path: mutated shapes (the seeds in tests/workloads/seeds/, bytes
// deleted, duplicated, replaced by digits, separators and signs) are parsed; each must give a
// problem whose buffers can be described, or a tilejit::Error. Never a crash, a hang or another
// exception.
void check_mutated_shapes(const std::string& workload, const std::string& seeds_file,
                          const std::string& alphabet) {
  std::ifstream in(std::string(TILEJIT_SOURCE_DIR) + "/tests/workloads/seeds/" + seeds_file);
  std::vector<std::string> seeds;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) seeds.push_back(line);
  ASSERT_GE(seeds.size(), 5u);
  auto w = workloads::find_workload(workload);
  std::mt19937 rng(fresh_seed());
  int accepted = 0, refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string s = seeds[rng() % seeds.size()];
    for (int m = 0, n = 1 + rng() % 4; m < n && !s.empty(); ++m) {
      size_t at = rng() % s.size();
      switch (rng() % 4) {
      case 0:
        s.erase(at, 1 + rng() % 3);
        break;
      case 1:
        s.insert(at, s.substr(at, 1 + rng() % 6));
        break;
      case 2:
        s[at] = alphabet[rng() % alphabet.size()];
        break;
      default:
        s.insert(at, std::string(1 + rng() % 12, '9'));
        break;
      }
    }
    SCOPED_TRACE(s);
    try {
      auto p = w->parse_shape(items_of(s), DType::F16);
      int64_t elements = 0;
      for (const auto& b : p->buffers()) {
        int64_t n = 1;
        for (int64_t d : b.shape) {
          ASSERT_GE(d, 0);
          n = d == 0 ? 0 : std::min<int64_t>(n * d, int64_t(1) << 50);
        }
        elements += n;
      }
      EXPECT_GE(elements, 0);
      ++accepted;
    } catch (const Error&) {
      ++refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "'" << s << "': " << e.what();
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(refused, 0);
}

TEST(PagedSparseShape, MutatedShapesGiveAProblemOrAnError) {
  check_mutated_shapes("paged_sparse", "paged_sparse_shapes.txt",
                       "0123456789:=,-.eEHQKVDPSBGCTXRNAMF \x01");
}

TEST(AttentionShape, MutatedShapesGiveAProblemOrAnError) {
  check_mutated_shapes("attention", "attention_shapes.txt",
                       "0123456789=,-.eEBHKVNDCAUSLXTIYO \x01");
}

TEST(HbvShape, MutatedShapesGiveAProblemOrAnError) {
  check_mutated_shapes("hbv", "hbv_shapes.txt", "0123456789=,-.eEBTbtNMULnmul \x01");
}

TEST(GatedDeltaShape, MutatedShapesGiveAProblemOrAnError) {
  check_mutated_shapes("gated_delta", "gated_delta_shapes.txt",
                       "0123456789=,-.eEBTHDKVRULNOMinearldt \x01");
}

TEST(DequantShape, MutatedShapesGiveAProblemOrAnError) {
  check_mutated_shapes("dequant_gemm", "dequant_gemm_shapes.txt",
                       "0123456789=,-.eEMNKLAYERBITSGCTqkvo_updwnlm \x01");
}

} // namespace
} // namespace tilejit::test
