// Plans (Problem::plans) and the plan choice kept in the tuning database, on the CPU: the key
// names what the choice depends on, a stored choice is read back for its shape and the nearest
// one, --plan overrides it, and bad names and stale choices are refused or ignored.
#include "kernel_runner.h"
#include "support/error.h"
#include "tests/tuner/tune_test_util.h"
#include "tuner/tune_database.h"
#include "workloads/attention_op_common.h"
#include "workloads/op_plan.h"
#include "workloads/plan_choice.h"
#include "workloads/problem_on_gpu.h"

#include <gtest/gtest.h>

#include <tilejit/ops.h>

#include <limits>

namespace tilejit::test {
namespace {

using tune_test::TempDir;
using workloads::find_workload;

TuneIdentity h100() {
  return {"NVIDIA H100 80GB HBM3", "9.0", 132, "13000", "13.0", "0.1.0"};
}

struct AttentionPlans {
  RuntimeOptions options = [] {
    RuntimeOptions o;
    o.arch = "sm_90a";
    o.cache_dir = "";
    o.tune_on_first_use = false;
    return o;
  }();
  Runtime rt{options};
  std::shared_ptr<const workloads::Workload> w = find_workload("attention");
  workloads::WorkloadKernels kernels{rt, *w};

  std::unique_ptr<workloads::Problem> problem(const std::string& n, const std::string& causal) {
    return w->parse_shape({{"H", "4"}, {"N", n}, {"D", "64"}, {"CAUSAL", causal}}, DType::F16);
  }
};

// Dense and block-sparse shapes alike: dq by atomics or by a kernel of its own (block-sparse:
// attn_dq_sparse over the forward's lists, after attn_bwd_sparse without atomics).
TEST(PlanChoice, AttentionOffersTwoPlansDenseAndBlockSparse) {
  AttentionPlans a;
  auto dense = a.problem("1000", "0");
  auto plans = dense->plans();
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[0].name, "atomic_dq");
  EXPECT_EQ(plans[1].name, "dq_kernel");
  EXPECT_EQ(plans[1].steps.back().kernel, "attn_dq");
  auto sparse = a.w->parse_shape(
      {{"H", "2"}, {"N", "256"}, {"D", "64"}, {"DENSITY", "50"}, {"BLOCK", "64"}}, DType::F16);
  auto sparse_plans = sparse->plans();
  ASSERT_EQ(sparse_plans.size(), 2u);
  EXPECT_EQ(sparse_plans[0].steps[2].kernel, "attn_bwd_sparse");
  EXPECT_EQ(sparse_plans[0].steps[2].generics.count("ATOMIC_DQ"), 0u); // the kernel's default, 1
  EXPECT_EQ(sparse_plans[1].name, "dq_kernel");
  EXPECT_EQ(sparse_plans[1].steps[2].generics.at("ATOMIC_DQ"), "0");
  EXPECT_EQ(sparse_plans[1].steps.back().kernel, "attn_dq_sparse");
  EXPECT_EQ(sparse_plans[1].steps.back().generics.at("BLK"), "64");
  // Untuned, block-sparse shapes take attn_dq_sparse on Hopper (the op's plan, given the
  // forward's lists; measured faster at 10-50% density), the atomics elsewhere.
  EXPECT_EQ(sparse->untuned_plan(9), 1u);
  EXPECT_EQ(sparse->untuned_plan(8), 0u);
}

TEST(PlanChoice, Int4DequantOffersTheGptqGemvPlan) {
  auto w = find_workload("dequant_gemm");
  auto p = w->parse_shape({{"N", "64"}, {"K", "128"}, {"ACT", "1"}}, DType::F16);
  auto plans = p->plans();
  ASSERT_EQ(plans.size(), 3u);
  EXPECT_EQ(plans[0].name, "repack_tc");
  EXPECT_EQ(plans[0].steps.size(), 2u);
  // Act-order: x permuted per call, then the kernel without its gather (ACT = 0) reads it.
  EXPECT_EQ(plans[1].name, "permute_tc");
  ASSERT_EQ(plans[1].steps.size(), 3u);
  EXPECT_EQ(plans[1].steps[1].kernel, "permute_cols");
  EXPECT_FALSE(plans[1].steps[1].one_time);
  EXPECT_EQ(plans[1].steps[2].generics.at("ACT"), "0");
  EXPECT_EQ(plans[1].steps[2].args[0].buffer, "xp");
  EXPECT_EQ(plans[2].name, "gptq_gemv");
  ASSERT_EQ(plans[2].steps.size(), 1u);
  EXPECT_EQ(plans[2].steps[0].kernel, "w4a16_gemv");
  // Without act-order there is nothing to permute.
  auto q = w->parse_shape({{"N", "64"}, {"K", "128"}}, DType::F16);
  ASSERT_EQ(q->plans().size(), 2u);
  EXPECT_EQ(q->plans()[1].name, "gptq_gemv");
}

TEST(PlanChoice, TheKeyNamesTheWorkloadShapeAndGenerics) {
  AttentionPlans a;
  auto p = a.problem("1000", "0");
  const TuneKey key = workloads::plan_choice_key(a.kernels, *p, p->plans(), h100());
  EXPECT_EQ(key.kernel, "plan:attention");
  EXPECT_EQ(key.shape.at("N"), 1000);
  EXPECT_EQ(key.shape.at("HQ"), 4);
  EXPECT_EQ(key.generics.at("CAUSAL"), "0");
  EXPECT_EQ(key.generics.count("ATOMIC_DQ"), 0u) << "the plans differ in it";
  EXPECT_EQ(key.device_name, "NVIDIA H100 80GB HBM3");
  // Same shape, same key; another shape or causal, another key.
  EXPECT_EQ(workloads::plan_choice_key(a.kernels, *p, p->plans(), h100()).hash(), key.hash());
  auto q = a.problem("2000", "0");
  const TuneKey other = workloads::plan_choice_key(a.kernels, *q, q->plans(), h100());
  EXPECT_NE(other.hash(), key.hash());
  EXPECT_EQ(other.shapeless_hash(), key.shapeless_hash()) << "nearest-shape lookups share it";
  auto c = a.problem("1000", "1");
  EXPECT_NE(workloads::plan_choice_key(a.kernels, *c, c->plans(), h100()).shapeless_hash(),
            key.shapeless_hash());
  // Fewer plans (another build's list) is another choice.
  std::vector<workloads::Plan> one = {p->plans()[0]};
  EXPECT_NE(workloads::plan_choice_key(a.kernels, *p, one, h100()).source_hash, key.source_hash);
}

TEST(PlanChoice, TheDatabaseChoiceIsReadBackAndPlanOverridesIt) {
  AttentionPlans a;
  TempDir dir;
  TuneDatabase db(dir.file("t.db"));
  auto p = a.problem("1000", "0");
  const auto plans = p->plans();
  auto chosen = workloads::choose_plan(a.kernels, *p, plans, &db, h100(), "");
  EXPECT_EQ(chosen.index, 0u);
  EXPECT_EQ(chosen.why, "default (not tuned)");
  const TuneKey key = workloads::plan_choice_key(a.kernels, *p, plans, h100());
  db.set_winner(key, {{plan_tunable, 1}}, 0.5);
  chosen = workloads::choose_plan(a.kernels, *p, plans, &db, h100(), "");
  EXPECT_EQ(chosen.index, 1u);
  EXPECT_EQ(chosen.why, "tuned");
  // A shape never tuned takes the nearest tuned shape's choice, and says so.
  auto q = a.problem("1500", "0");
  chosen = workloads::choose_plan(a.kernels, *q, q->plans(), &db, h100(), "");
  EXPECT_EQ(chosen.index, 1u);
  EXPECT_NE(chosen.why.find("nearest tuned shape"), std::string::npos) << chosen.why;
  EXPECT_NE(chosen.why.find("N=1000"), std::string::npos) << chosen.why;
  // --plan wins over the database; another device does not see this one's choice.
  chosen = workloads::choose_plan(a.kernels, *p, plans, &db, h100(), "atomic_dq");
  EXPECT_EQ(chosen.index, 0u);
  EXPECT_EQ(chosen.why, "--plan");
  TuneIdentity other = h100();
  other.device_name = "NVIDIA H200";
  EXPECT_EQ(workloads::choose_plan(a.kernels, *p, plans, &db, other, "").index, 0u);
}

// Untuned, a shape takes the plan its op would launch on that GPU: attention's dq by attn_dq on
// Hopper where the op takes it (16-bit widths 64 and 128, dense or block-sparse), atomics
// elsewhere (other widths, f32 shapes, other GPUs). Without a GPU (here), the first plan.
TEST(PlanChoice, UntunedShapesTakeTheOpsPlanOnItsGpu) {
  AttentionPlans a;
  auto p = a.problem("1000", "0"); // f16, D = 64
  EXPECT_EQ(p->plans()[1].name, "dq_kernel");
  EXPECT_EQ(p->untuned_plan(9), 1u);
  EXPECT_EQ(p->untuned_plan(8), 0u);
  EXPECT_EQ(p->untuned_plan(0), 0u);
  auto shape = [&](Bindings s, DType t) {
    s["H"] = "4";
    return a.w->parse_shape(s, t)->untuned_plan(9);
  };
  EXPECT_EQ(shape({{"N", "8192"}, {"D", "128"}}, DType::BF16), 1u);
  EXPECT_EQ(shape({{"N", "8192"}, {"D", "128"}, {"CAUSAL", "1"}}, DType::BF16), 1u);
  EXPECT_EQ(shape({{"N", "2048"}, {"D", "128"}}, DType::BF16), 1u);
  EXPECT_EQ(shape({{"N", "2048"}, {"D", "96"}}, DType::BF16), 0u); // no Hopper tile at width 96
  EXPECT_EQ(shape({{"N", "1000"}, {"D", "64"}, {"DENSITY", "30"}}, DType::BF16), 1u);
  EXPECT_EQ(shape({{"N", "1000"}, {"D", "128"}, {"DENSITY", "10"}, {"CAUSAL", "1"}}, DType::BF16),
            1u);
  EXPECT_EQ(shape({{"N", "1000"}, {"D", "64"}, {"DENSITY", "30"}}, DType::F32), 0u);
  EXPECT_EQ(shape({{"N", "1000"}, {"D", "64"}}, DType::F32), 0u);
  // No GPU here: choose_plan asks the plan for cc 0, the first.
  const auto chosen = workloads::choose_plan(a.kernels, *p, p->plans(), nullptr, h100(), "");
  EXPECT_EQ(chosen.index, 0u);
  EXPECT_EQ(chosen.why, "default (not tuned)");
}

TEST(PlanChoice, AStaleOrForeignChoiceIsIgnored) {
  AttentionPlans a;
  TempDir dir;
  TuneDatabase db(dir.file("t.db"));
  auto p = a.problem("1000", "0");
  const auto plans = p->plans();
  const TuneKey key = workloads::plan_choice_key(a.kernels, *p, plans, h100());
  // A plan index past the list (a build with more plans) or a config of another kind.
  db.set_winner(key, {{plan_tunable, 7}}, 0.5);
  EXPECT_EQ(workloads::choose_plan(a.kernels, *p, plans, &db, h100(), "").index, 0u);
  db.set_winner(key, {{"BM", 64}}, 0.4);
  EXPECT_EQ(workloads::choose_plan(a.kernels, *p, plans, &db, h100(), "").index, 0u);
}

// The ops read the plan choice through their Runtime's selector (the tuning database):
// attention_backward takes dq by attn_dq where `tune` stored dq_kernel for its shape (or the
// nearest tuned one), and ignores what names none of the plans.
TEST(PlanChoice, TheOpsReadTheDatabasesChoiceThroughTheirRuntime) {
  AttentionPlans a;
  TempDir dir;
  auto db = std::make_shared<TuneDatabase>(dir.file("t.db"));
  const Tensor q = Tensor::contiguous(nullptr, DType::F16, {1, 4, 1000, 64});
  const Tensor k = Tensor::contiguous(nullptr, DType::F16, {1, 4, 1000, 64});
  // No selector: no choice, the op keeps its own.
  EXPECT_FALSE(ops::attention_detail::tuned_plan(a.rt, q, k, false, false));
  EXPECT_FALSE(a.rt.has_config_selector());
  a.rt.set_config_selector(make_db_config_selector(db, h100()));
  EXPECT_TRUE(a.rt.has_config_selector());
  EXPECT_FALSE(ops::attention_detail::tuned_plan(a.rt, q, k, false, false)) << "nothing tuned";
  auto p = a.problem("1000", "0"); // the same shape as q and k: B=1 H=4 N=1000 D=64 f16
  const TuneKey key = workloads::plan_choice_key(a.kernels, *p, p->plans(), h100());
  db->set_winner(key, {{plan_tunable, 1}}, 0.5);
  // The runtime remembers its answer until the database is said to have changed.
  EXPECT_FALSE(ops::attention_detail::tuned_plan(a.rt, q, k, false, false));
  a.rt.forget_prepared();
  auto chosen = ops::attention_detail::tuned_plan(a.rt, q, k, false, false);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->name, "dq_kernel");
  EXPECT_NE(chosen->why.find("exact shape"), std::string::npos) << chosen->why;
  // Another N: the nearest tuned shape's choice. Causal: another problem, nothing tuned.
  const Tensor q2 = Tensor::contiguous(nullptr, DType::F16, {1, 4, 1500, 64});
  const Tensor k2 = Tensor::contiguous(nullptr, DType::F16, {1, 4, 1500, 64});
  chosen = ops::attention_detail::tuned_plan(a.rt, q2, k2, false, false);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->name, "dq_kernel");
  EXPECT_NE(chosen->why.find("nearest"), std::string::npos) << chosen->why;
  EXPECT_FALSE(ops::attention_detail::tuned_plan(a.rt, q, k, true, false));
  // atomic_dq stored: read back by name.
  db->set_winner(key, {{plan_tunable, 0}}, 0.4);
  a.rt.forget_prepared();
  chosen = ops::attention_detail::tuned_plan(a.rt, q, k, false, false);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->name, "atomic_dq");
  // A plan index past the list (another build's) or a config of another kind: no choice.
  db->set_winner(key, {{plan_tunable, 7}}, 0.3);
  a.rt.forget_prepared();
  EXPECT_FALSE(ops::attention_detail::tuned_plan(a.rt, q, k, false, false));
  db->set_winner(key, {{"BM", 64}}, 0.2);
  a.rt.set_config_selector(make_db_config_selector(db, h100())); // also forgets the answers
  EXPECT_FALSE(ops::attention_detail::tuned_plan(a.rt, q, k, false, false));
  // A shape the workload cannot describe: no choice (the op takes its own), never an error.
  for (int i = 0; i < 2; ++i) // the second time from the remembered (empty) query
    EXPECT_FALSE(workloads::tuned_plan(
        a.rt, "attention", "an impossible shape",
        []() -> std::unique_ptr<workloads::Problem> { throw Error("no problem of this shape"); }));
  // Another GPU's database entries are not this one's.
  db->set_winner(key, {{plan_tunable, 1}}, 0.1);
  TuneIdentity h200 = h100();
  h200.device_name = "NVIDIA H200";
  a.rt.set_config_selector(make_db_config_selector(db, h200));
  EXPECT_FALSE(ops::attention_detail::tuned_plan(a.rt, q, k, false, false));
}

// The hbv ops take the form `tune` stored for their shape (the segment forms and the reverse
// from 64-day states; a plan the ops do not run leaves the untuned choice), through the
// runtime's database; a given segment wins, bad values are named.
TEST(PlanChoice, TheHbvOpsTakeTheFormStoredForTheirShape) {
  AttentionPlans a; // its runtime (sm_90a, no GPU needed)
  TempDir dir;
  auto db = std::make_shared<TuneDatabase>(dir.file("t.db"));
  auto w = find_workload("hbv");
  workloads::WorkloadKernels kernels(a.rt, *w);
  auto p = w->parse_shape({{"B", "1024"}, {"T", "1461"}}, DType::F32);
  const std::vector<workloads::Plan> plans = p->plans();
  const TuneKey key = workloads::plan_choice_key(kernels, *p, plans, h100());
  auto store = [&](const std::string& name) {
    db->set_winner(
        key, {{plan_tunable, static_cast<int64_t>(workloads::find_plan(plans, name, ""))}}, 1.0);
    a.rt.forget_prepared();
  };
  const int64_t untuned = ops::hbv_backward_form(1024, 1461, -1);
  EXPECT_EQ(untuned, 32);
  EXPECT_EQ(ops::hbv_op_form(a.rt, 1024, 1461, 1, -1), untuned) << "no database";
  a.rt.set_config_selector(make_db_config_selector(db, h100()));
  EXPECT_EQ(ops::hbv_op_form(a.rt, 1024, 1461, 1, -1), untuned) << "nothing tuned";
  store("segments128");
  EXPECT_EQ(ops::hbv_op_form(a.rt, 1024, 1461, 1, -1), 128);
  EXPECT_EQ(ops::hbv_op_form(a.rt, 1000, 1461, 1, -1), 128) << "the nearest tuned shape's";
  EXPECT_EQ(ops::hbv_op_form(a.rt, 1024, 1461, 1, 16), 16) << "a given segment wins";
  EXPECT_EQ(ops::hbv_op_form(a.rt, 1024, 1461, 4, -1), ops::hbv_backward_form(4096, 1461, -1))
      << "another problem (components): nothing tuned";
  store("forward_checkpoints64");
  EXPECT_EQ(ops::hbv_op_form(a.rt, 1024, 1461, 1, -1), 0);
  for (const char* not_the_ops : {"checkpoints", "forward_checkpoints128"}) {
    store(not_the_ops);
    EXPECT_EQ(ops::hbv_op_form(a.rt, 1024, 1461, 1, -1), untuned) << not_the_ops;
  }
  EXPECT_EQ(ops::hbv_op_form(a.rt, 0, 1461, 1, -1), ops::hbv_backward_form(0, 1461, -1));
  auto error = [&](int64_t b, int64_t t, int64_t nm, int64_t seg) {
    try {
      ops::hbv_op_form(a.rt, b, t, nm, seg);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error(-1, 5, 1, -1).find("must not be negative"), std::string::npos);
  EXPECT_NE(error(5, 5, 3, -1).find("3 components per basin"), std::string::npos);
  EXPECT_NE(error(5, 5, 1, 12).find("segment = 12 is not"), std::string::npos);
  EXPECT_EQ(error(std::numeric_limits<int64_t>::max(), 5, 16, -1), "") << "absurd, not overflowed";
}

// Runtime::select_config asks the selector once per key and remembers the answer and its why.
TEST(PlanChoice, SelectConfigAsksTheSelectorOncePerKey) {
  AttentionPlans a;
  std::string why;
  EXPECT_FALSE(a.rt.select_config("plan:x", "h", {}, {{"N", 1}}, &why));
  EXPECT_EQ(why, "no tuning database");
  int calls = 0;
  a.rt.set_config_selector([&](const std::string& kernel, const std::string&, const Config&,
                               const std::map<std::string, int64_t>& sizes,
                               std::string* w) -> std::optional<Config> {
    ++calls;
    *w = "asked about " + kernel;
    if (sizes.at("N") == 2) return std::nullopt;
    return Config{{"PLAN", "1"}};
  });
  for (int i = 0; i < 3; ++i) {
    auto c = a.rt.select_config("plan:x", "h", {{"T", "f16"}}, {{"N", 1}}, &why);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->at("PLAN"), "1");
    EXPECT_EQ(why, "asked about plan:x");
    EXPECT_FALSE(a.rt.select_config("plan:x", "h", {{"T", "f16"}}, {{"N", 2}}));
  }
  EXPECT_EQ(calls, 2);
  a.rt.select_config("plan:x", "h", {{"T", "bf16"}}, {{"N", 1}}); // another generic: another key
  EXPECT_EQ(calls, 3);
  a.rt.forget_prepared();
  a.rt.select_config("plan:x", "h", {{"T", "f16"}}, {{"N", 1}});
  EXPECT_EQ(calls, 4);
}

TEST(PlanChoice, AnUnknownPlanNamesTheProblemsPlans) {
  AttentionPlans a;
  auto p = a.problem("100", "1");
  try {
    workloads::choose_plan(a.kernels, *p, p->plans(), nullptr, h100(), "fastest");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--plan fastest"), std::string::npos) << m;
    EXPECT_NE(m.find("has no plan 'fastest'"), std::string::npos) << m;
    EXPECT_NE(m.find("atomic_dq, dq_kernel"), std::string::npos) << m;
  }
  // One plan: the only one, whatever the database says; dequant's int8 problems have one.
  auto d = find_workload("dequant_gemm")
               ->parse_shape({{"N", "64"}, {"K", "128"}, {"BITS", "8"}}, DType::F16);
  auto one = workloads::choose_plan(a.kernels, *d, d->plans(), nullptr, h100(), "");
  EXPECT_EQ(one.index, 0u);
  EXPECT_EQ(one.why, "the only plan");
}

// --set STEP:NAME (a step's label or kernel) addresses one step of a plan and wins over a plain
// NAME; one that names no step is refused, listing the steps.
TEST(StepSettings, AQualifiedNameAddressesOneStep) {
  auto w = find_workload("dequant_gemm");
  auto p = w->parse_shape({{"N", "64"}, {"K", "128"}}, DType::F16);
  const std::vector<workloads::Step> steps = p->plans()[0].steps; // repack, linear
  ASSERT_EQ(steps.size(), 2u);
  LoadedModule m = load_source("embedded:workloads/dequant_gemm.tile");
  const Config user = {{"WARPS", "8"}, {"linear:WARPS", "3"}, {"w4a16_tc:BN", "96"}};
  const Config repack = workloads::step_config(m.kernel("w4_repack"), steps[0], user);
  const Config linear = workloads::step_config(m.kernel("w4a16_tc"), steps[1], user);
  EXPECT_EQ(repack.at("WARPS"), "8");
  EXPECT_EQ(repack.count("BN"), 0u);
  EXPECT_EQ(linear.at("WARPS"), "3");
  EXPECT_EQ(linear.at("BN"), "96");
  EXPECT_EQ(linear.count("linear:WARPS"), 0u);
  // What each kernel declares: a name no addressed kernel declares is refused too.
  std::map<std::string, std::set<std::string>> declared;
  for (const char* k : {"w4_repack", "w4a16_tc"}) {
    for (const auto& g : m.kernel(k).generics) declared[k].insert(g.name);
    for (const auto& t : m.kernel(k).tunables) declared[k].insert(t.name);
  }
  EXPECT_NO_THROW(workloads::check_step_names(steps, user, "--set", declared));
  auto refused = [&](const Config& bad, const std::string& message) {
    try {
      workloads::check_step_names(steps, bad, "--set", declared);
      ADD_FAILURE() << "accepted: " << message;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  refused({{"lin:WARPS", "3"}}, "--set lin:WARPS=3: no step or kernel 'lin' here; the steps are "
                                "repack (w4_repack), linear (w4a16_tc)");
  refused({{"repack:BN", "64"}},
          "--set repack:BN=64: step 'repack' has no generic or tunable 'BN' (its: BW, WARPS)");
  refused({{"BNN", "64"}}, "--set BNN=64: no kernel of the steps (repack (w4_repack), linear "
                           "(w4a16_tc)) has a generic or tunable 'BNN' (theirs: ");
}

} // namespace
} // namespace tilejit::test
