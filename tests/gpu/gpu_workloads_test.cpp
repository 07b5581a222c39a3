// Workloads through the interface on the GPU (label `gpu`): paged_sparse on the group sizes and
// head dims real models use (ragged sequences, empty and single kept sets), two streams
// running the same kernel and shape at once, a three-kernel toy workload tuned step by step,
// tuning on first use end to end, and a tune whose compiles time out. Every output is poisoned
// first and every element compared with a float64 reference on fresh random inputs.
#include "attention_checks.h"
#include "gpu_runner.h"
#include "test_util.h"
#include "toy_workload.h"

#include "runtime/cuda_driver.h"
#include "runtime/device_buffer.h"
#include "support/version.h"
#include "tuner/first_use_tuning.h"
#include "tuner/tuner.h"
#include "workloads/plan_choice.h"
#include "workloads/problem_on_gpu.h"
#include "workloads/workload_tuning.h"

#include <gtest/gtest.h>

#include <tilejit/ops.h>
#include <tilejit/tilejit.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>
#include <thread>

namespace tilejit::test {
namespace {

/// A database file in a directory removed at the end of the test.
struct TempDb {
  ScratchDir dir;
  std::string path = dir.path + "/t.db";
};

std::unique_ptr<Runtime> runtime(bool tune_on_first_use = false,
                                 std::vector<std::string>* log = nullptr) {
  RuntimeOptions o;
  o.tune_on_first_use = tune_on_first_use;
  if (log) o.log = [log](const std::string& m) { log->push_back(m); };
  return std::make_unique<Runtime>(o);
}

/// What a tuning test needs: a fresh database, this GPU's identity, a runtime and a small budget
/// (`budget` trials per step, 5 timed calls each).
struct QuickTune {
  TempDb db_file;
  std::shared_ptr<TuneDatabase> db = std::make_shared<TuneDatabase>(db_file.path);
  TuneIdentity id = current_identity();
  std::unique_ptr<Runtime> rt = runtime();
  workloads::WorkloadTuneOptions o;
  explicit QuickTune(const char* budget) {
    o.budget = parse_budget(budget);
    o.repeats = 5;
  }
};

/// Runs `problem` with `config` forced (poisoned outputs first) and checks it.
void check_problem(workloads::ProblemOnGpu& gpu, const Config& config) {
  gpu.poison_from(0);
  gpu.run(config, /*one_time=*/true);
  workloads::Comparison c = gpu.check();
  EXPECT_TRUE(c.ok) << config_text(config) << ": " << c.summary();
}

// Qwen2.5-7B's 28 query heads over 4 kv heads (G = 7), G = 5, 6 and 16, head dims 64 and 96
// (and 128 for G = 7); ragged sequences, kept sets of 0, 1 and whole sequences.
TEST(GpuWorkloads, PagedSparseGroupSizesAndHeadDims) {
  REQUIRE_GPU();
  auto rt = runtime();
  auto w = workloads::find_workload("paged_sparse");
  workloads::WorkloadKernels kernels(*rt, *w);
  struct Shape {
    const char* g;
    const char* d;
    DType t;
  };
  for (const Shape& s : std::vector<Shape>{{"7", "128", DType::BF16},
                                           {"7", "96", DType::F16},
                                           {"5", "64", DType::F16},
                                           {"6", "96", DType::BF16},
                                           {"16", "64", DType::F16},
                                           {"16", "96", DType::BF16}}) {
    // 5 sequences, 4 kv heads: kept per (sequence, kv head), with 0, 1 and a whole sequence.
    std::string kept;
    const int64_t seq[5] = {1000, 2000, 77, 5, 3001};
    for (int b = 0; b < 5; ++b)
      for (int h = 0; h < 4; ++h) {
        int64_t n = std::min<int64_t>(seq[b], 11 + 97 * h + 31 * b);
        if (b == 0 && h == 0) n = 0;
        if (b == 1 && h == 3) n = 1;
        if (b == 3) n = seq[b];
        kept += (kept.empty() ? "" : ":") + std::to_string(n);
      }
    auto p = w->parse_shape({{"G", s.g},
                             {"HKV", "4"},
                             {"D", s.d},
                             {"PS", "32"},
                             {"SEQ", "1000:2000:77:5:3001"},
                             {"KEPT", kept}},
                            s.t);
    SCOPED_TRACE(p->describe());
    auto data = p->make_data(fresh_seed());
    workloads::ProblemOnGpu gpu(kernels, *p, *data);
    for (const Config& c : std::vector<Config>{
             {},
             {{"CHUNK", "64"}, {"BN", "16"}, {"STAGES", "1"}, {"WARPS", "2"}, {"PF", "2"}},
             {{"CHUNK", "128"}, {"BN", "64"}, {"STAGES", "2"}, {"WARPS", "8"}, {"PF", "0"}},
             {{"CHUNK", "32"}, {"BN", "16"}, {"STAGES", "2"}, {"WARPS", "1"}, {"PF", "0"}},
             {{"CHUNK", "512"}, {"BN", "32"}, {"STAGES", "4"}, {"WARPS", "4"}, {"PF", "8"}}})
      check_problem(gpu, c);
  }
}

// Two streams launch the same kernel on the same shape at once, each on its own data: each
// stream has its own scratch (partials and arrival counters), so neither corrupts the other's
// merge. With shared scratch the interleaved merges mix partial results.
// dequant_gemm through the interface: grid shapes (int4 qkv at M = 1 and 16, int8 o at M = 16,
// lm_head at M = 4) and odd user shapes (N not a multiple of the tile or of 8, group sizes with
// act-order, one group, bf16, an empty batch), each with the defaults (or their stand-in when a
// default breaks a constraint: BK with groups of 32 and 64) and a forced configuration.
TEST(GpuWorkloads, DequantGemmGridAndOddShapes) {
  REQUIRE_GPU();
  auto rt = runtime();
  auto w = workloads::find_workload("dequant_gemm");
  workloads::WorkloadKernels kernels(*rt, *w);
  std::vector<std::unique_ptr<workloads::Problem>> problems;
  for (auto& p : w->cases(DType::F16))
    for (const char* name : {"int4/M1/qkv", "int4/M16/qkv", "int8/M16/o", "int4/M4/lm_head"})
      if (p->name() == name) {
        problems.push_back(std::move(p));
        break; // p is empty now
      }
  ASSERT_EQ(problems.size(), 4u);
  using Items = std::map<std::string, std::string>;
  for (const auto& [items, t] : std::vector<std::pair<Items, DType>>{
           {{{"M", "3"}, {"N", "72"}, {"K", "256"}, {"G", "32"}, {"ACT", "1"}}, DType::F16},
           {{{"M", "17"}, {"N", "4000"}, {"K", "1024"}, {"G", "64"}, {"ACT", "1"}}, DType::BF16},
           {{{"M", "2"}, {"N", "1000"}, {"K", "1280"}, {"G", "-1"}}, DType::F16},
           {{{"M", "70"}, {"N", "136"}, {"K", "4096"}}, DType::BF16},
           {{{"M", "0"}, {"N", "64"}, {"K", "128"}}, DType::F16},
           {{{"M", "5"}, {"N", "33"}, {"K", "70"}, {"BITS", "8"}}, DType::BF16},
           {{{"M", "9"}, {"N", "3000"}, {"K", "2000"}, {"BITS", "8"}}, DType::F16}})
    problems.push_back(w->parse_shape(items, t));
  for (const auto& p : problems) {
    SCOPED_TRACE(p->describe());
    std::fprintf(stderr, "  %s\n", p->describe().c_str()); // which one, should it crash
    auto data = p->make_data(fresh_seed());
    // Every plan (int4: repack + w4a16_tc, and w4a16_gemv on GPTQ's tensors as stored).
    for (const workloads::Plan& plan : p->plans()) {
      SCOPED_TRACE(plan.name);
      workloads::ProblemOnGpu gpu(kernels, *p, *data, plan);
      check_problem(gpu, {});
      check_problem(gpu, {{"BN", "32"}, {"BM", "16"}, {"STEPS", "2"}, {"STAGES", "3"}});
    }
  }
}

TEST(GpuWorkloads, TwoStreamsRunTheSameShapeConcurrently) {
  REQUIRE_GPU();
  auto rt = runtime();
  auto w = workloads::find_workload("paged_sparse");
  workloads::WorkloadKernels kernels(*rt, *w);
  auto p = w->parse_shape({{"HQ", "32"},
                           {"HKV", "8"},
                           {"D", "128"},
                           {"PS", "16"},
                           {"SEQ", "20000:9000:15000"},
                           {"R", "0.05"}},
                          DType::F16);
  auto data_a = p->make_data(fresh_seed()), data_b = p->make_data(fresh_seed());
  workloads::ProblemOnGpu a(kernels, *p, *data_a), b(kernels, *p, *data_b);
  CudaDriver& d = CudaDriver::get();
  d.ensure_context(0);
  cu::CUstream s1 = nullptr, s2 = nullptr;
  d.check(d.cuStreamCreate(&s1, 1), "cuStreamCreate"); // non-blocking streams
  d.check(d.cuStreamCreate(&s2, 1), "cuStreamCreate");
  // Small chunks: many blocks per (b, kv head) arrive at the counters of both launches.
  Config small = {{"CHUNK", "32"}, {"BN", "16"}, {"STAGES", "2"}, {"WARPS", "2"}, {"PF", "0"}};
  a.poison_from(0);
  b.poison_from(0);
  for (int i = 0; i < 50; ++i) {
    a.launch(0, small, s1);
    b.launch(0, small, s2);
  }
  d.check(d.cuStreamSynchronize(s1), "cuStreamSynchronize");
  d.check(d.cuStreamSynchronize(s2), "cuStreamSynchronize");
  workloads::Comparison ca = a.check(), cb = b.check();
  EXPECT_TRUE(ca.ok) << "stream 1: " << ca.summary();
  EXPECT_TRUE(cb.ok) << "stream 2: " << cb.summary();
  d.cuStreamDestroy(s1);
  d.cuStreamDestroy(s2);
}

// A workload of three kernels (a one-time pack, then two per-call kernels) tuned step by step:
// every step gets a winner on its real inputs, the sequence is timed end to end, a second tune
// answers from the database without data, and a runtime with the database computes the right
// answer with the winners.
TEST(GpuWorkloads, AThreeKernelWorkloadIsTunedStepByStep) {
  REQUIRE_GPU();
  auto w = make_toy_workload();
  workloads::register_workload(w);
  QuickTune q("8");
  auto& [db_file, db, id, rt, o] = q;
  (void)db_file;
  workloads::WorkloadKernels kernels(*rt, *w);
  for (const auto& p : w->cases(DType::F32)) {
    workloads::ProblemTuning t = workloads::tune_problem(kernels, *p, *db, id, o);
    ASSERT_EQ(t.steps.size(), 3u);
    EXPECT_FALSE(t.from_database);
    EXPECT_TRUE(t.steps[0].one_time);
    EXPECT_GT(t.end_to_end_ms, 0);
    for (const auto& s : t.steps) {
      EXPECT_GT(s.outcome.trials, 0) << s.label;
      EXPECT_GT(s.outcome.winner_ms, 0) << s.label;
    }
    workloads::ProblemTuning again = workloads::tune_problem(kernels, *p, *db, id, o);
    EXPECT_TRUE(again.from_database);
    EXPECT_EQ(again.end_to_end_ms, 0) << "a warm database runs nothing";
    for (size_t i = 0; i < 3; ++i)
      EXPECT_EQ(again.steps[i].outcome.winner, t.steps[i].outcome.winner);
  }
  auto rt2 = runtime();
  use_tuning_database(*rt2, db);
  workloads::WorkloadKernels kernels2(*rt2, *w);
  for (const auto& p : w->cases(DType::F32)) {
    auto data = p->make_data(fresh_seed());
    workloads::ProblemOnGpu gpu(kernels2, *p, *data);
    check_problem(gpu, {});
    for (size_t i = 0; i < gpu.steps().size(); ++i) {
      const PreparedLaunch& pl = rt2->prepare(gpu.kernel(i), gpu.args(i));
      EXPECT_NE(pl.why.find("tuned winner for the exact shape"), std::string::npos) << pl.why;
    }
  }
}

// hbv through the interface: forward, gradients zeroed, the derived backward (every plan: the
// checkpointed kernel and the segment form's lengths), every output against the float64
// forward and hand-written adjoint; odd B, no days, no basins.
TEST(GpuWorkloads, HbvForwardAndDerivedBackward) {
  REQUIRE_GPU();
  auto rt = runtime();
  auto w = workloads::find_workload("hbv");
  workloads::WorkloadKernels kernels(*rt, *w);
  for (const auto& [b, t] : std::vector<std::pair<const char*, const char*>>{
           {"1000", "365"}, {"37", "50"}, {"6", "0"}, {"0", "7"}}) {
    auto p = w->parse_shape({{"B", b}, {"T", t}}, DType::F32);
    SCOPED_TRACE(p->describe());
    auto data = p->make_data(fresh_seed());
    for (const workloads::Plan& plan : p->plans()) {
      SCOPED_TRACE(plan.name);
      workloads::ProblemOnGpu gpu(kernels, *p, *data, plan);
      check_problem(gpu, {});
      if (plan.name == "checkpoints")
        check_problem(gpu, {{"BB", "32"}, {"WARPS", "1"}, {"CK", "8"}, {"BT", "128"}});
    }
    // No basins or no days: nothing to segment or to checkpoint, the one-kernel plan only.
    if (std::string(b) != "0" && std::string(t) != "0") {
      EXPECT_GE(p->plans().size(), 5u) << "the segment form offered";
    } else {
      EXPECT_EQ(p->plans().size(), 1u);
    }
  }
}

// A shape with two plans (dense attention: dq by atomics or by attn_dq): both are tuned and
// timed, the faster kept in the database; a warm database answers with it; run follows it; a
// pinned plan stays the choice.
// gated_delta through the interface: linear attention on the grid's small shape and odd user
// shapes (Dk != Dv, T not a multiple of the chunk), the delta rule's recurrent forward, each
// with the defaults and a forced configuration.
TEST(GpuWorkloads, GatedDeltaLinearShapes) {
  REQUIRE_GPU();
  auto rt = runtime();
  auto w = workloads::find_workload("gated_delta");
  workloads::WorkloadKernels kernels(*rt, *w);
  std::vector<std::unique_ptr<workloads::Problem>> problems;
  problems.push_back(std::move(w->cases(DType::BF16).front()));
  problems.push_back(w->parse_shape(
      {{"B", "3"}, {"T", "333"}, {"H", "5"}, {"DK", "40"}, {"DV", "72"}}, DType::F16));
  problems.push_back(w->parse_shape({{"T", "1"}, {"D", "128"}}, DType::BF16));
  // The gated delta rule's recurrent forward: the long shapes' dims, and odd ones with h0.
  problems.push_back(w->parse_shape(
      {{"B", "2"}, {"T", "700"}, {"H", "4"}, {"D", "128"}, {"RULE", "delta"}}, DType::BF16));
  problems.push_back(w->parse_shape(
      {{"T", "99"}, {"H", "3"}, {"DK", "40"}, {"DV", "24"}, {"RULE", "delta"}, {"H0", "1"}},
      DType::F16));
  for (const auto& p : problems) {
    SCOPED_TRACE(p->describe());
    auto data = p->make_data(fresh_seed());
    workloads::ProblemOnGpu gpu(kernels, *p, *data);
    check_problem(gpu, {});
    if (p->plans().front().name == "recurrent")
      check_problem(gpu, {{"BV", "16"}, {"WARPS", "2"}});
    else
      check_problem(gpu, {{"C", "32"}, {"BV", "32"}, {"STAGES", "3"}, {"WARPS", "2"}});
  }
}

TEST(GpuWorkloads, AttentionPlansAreTunedAndTheFasterKept) {
  REQUIRE_GPU();
  auto w = workloads::find_workload("attention");
  QuickTune q("4");
  auto& [db_file, db, id, rt, o] = q;
  (void)db_file;
  workloads::WorkloadKernels kernels(*rt, *w);
  auto p = w->parse_shape({{"H", "4"}, {"HKV", "2"}, {"N", "333"}, {"D", "64"}, {"CAUSAL", "1"}},
                          DType::BF16);
  const std::vector<workloads::Plan> plans = p->plans();
  ASSERT_EQ(plans.size(), 2u);
  workloads::ProblemTuning t = workloads::tune_problem(kernels, *p, *db, id, o);
  ASSERT_EQ(t.plans.size(), 2u);
  for (const auto& pt : t.plans) {
    EXPECT_TRUE(pt.error.empty()) << pt.name << ": " << pt.error;
    EXPECT_GT(pt.end_to_end_ms, 0) << pt.name;
  }
  const size_t faster = t.plans[1].end_to_end_ms < t.plans[0].end_to_end_ms ? 1 : 0;
  EXPECT_EQ(t.plan, plans[faster].name);
  EXPECT_EQ(t.plan_why, "fastest of 2 plans");
  EXPECT_EQ(t.steps.size(), plans[faster].steps.size());
  const TuneKey key = workloads::plan_choice_key(kernels, *p, plans, id);
  ASSERT_TRUE(db->winner(key).has_value());
  EXPECT_EQ(db->winner(key)->config.at(plan_tunable), static_cast<int64_t>(faster));
  EXPECT_EQ(db->trials_for(key).size(), 2u) << "one trial per plan";
  // Warm: the database answers, nothing runs.
  workloads::ProblemTuning again = workloads::tune_problem(kernels, *p, *db, id, o);
  EXPECT_EQ(again.plan, t.plan);
  EXPECT_EQ(again.plan_why, "database");
  EXPECT_EQ(again.end_to_end_ms, 0);
  // Each plan runs right on fresh data with the tuned configurations.
  auto rt2 = runtime();
  use_tuning_database(*rt2, db);
  workloads::WorkloadKernels kernels2(*rt2, *w);
  auto data = p->make_data(fresh_seed());
  workloads::ChosenPlan chosen = workloads::choose_plan(kernels2, *p, plans, db.get(), id, "");
  EXPECT_EQ(chosen.index, faster);
  EXPECT_EQ(chosen.why, "tuned");
  for (const auto& plan : plans) {
    SCOPED_TRACE(plan.name);
    workloads::ProblemOnGpu gpu(kernels2, *p, *data, plan);
    check_problem(gpu, {});
    // What bench reports as device_bytes: q, o, dout, dq (bf16 [1, 4, 333, 64]), k, v, dk,
    // dv (bf16 [1, 2, 333, 64]), lse and delta (f32 [1, 4, 333]), dq_acc (f32 [1, 4, 333, 64]).
    EXPECT_EQ(gpu.per_call_bytes(), 4u * 85248 * 2 + 4u * 42624 * 2 + 2u * 1332 * 4 + 85248u * 4);
  }
  // A pinned plan stays the choice through a retune.
  db->pin(key, {{plan_tunable, static_cast<int64_t>(1 - faster)}});
  o.retune = true;
  workloads::ProblemTuning pinned = workloads::tune_problem(kernels, *p, *db, id, o);
  EXPECT_EQ(pinned.plan, plans[1 - faster].name);
  EXPECT_EQ(pinned.plan_why, "pinned in the database");
}

// The attention op reads the plan choice through its Runtime's database: dq by attn_dq where
// dq_kernel was stored for its shape (or the nearest tuned one), by atomics and attn_bwd_dq
// where atomic_dq was; right either way (float64 reference, outputs poisoned), and a forced
// ATOMIC_DQ still wins.
TEST(GpuWorkloads, TheAttentionOpTakesThePlanStoredForItsShape) {
  REQUIRE_GPU();
  auto w = workloads::find_workload("attention");
  QuickTune q("1");
  auto p = w->parse_shape({{"H", "4"}, {"HKV", "2"}, {"N", "301"}, {"D", "64"}}, DType::F16);
  std::vector<std::string> log;
  auto rt = runtime(false, &log);
  const TuneKey key =
      workloads::plan_choice_key(workloads::WorkloadKernels(*rt, *w), *p, p->plans(), q.id);
  use_tuning_database(*rt, q.db);
  auto launched = [&](const std::string& kernel) {
    for (const std::string& m : log)
      if (m.rfind("launch " + kernel + ":", 0) == 0) return true;
    return false;
  };
  auto run_op = [&](int64_t n, const Config& config, const char* what) {
    log.clear();
    check_attention_ops(*rt, DType::F16, 1, 4, 2, n, 64, false, what,
                        [&](const AttentionOpTensors& x) {
                          ops::AttentionForwardArgs fa;
                          fa.q = x.q, fa.k = x.k, fa.v = x.v, fa.o = x.o, fa.lse = x.lse;
                          ops::attention_forward(*rt, fa);
                          ops::AttentionBackwardArgs ba;
                          ba.q = x.q, ba.k = x.k, ba.v = x.v, ba.o = x.o, ba.lse = x.lse;
                          ba.dout = x.dout, ba.dq = x.dq, ba.dk = x.dk, ba.dv = x.dv;
                          ba.config = config;
                          ops::attention_backward(*rt, ba);
                        });
    rt->forget_prepared(); // every launch logs where its configuration came from again
  };
  for (int64_t plan : {1, 0}) {
    q.db->set_winner(key, {{plan_tunable, plan}}, 1.0);
    rt->forget_prepared();
    for (int64_t n : {301, 257}) { // the exact shape, and one whose nearest tuned shape it is
      run_op(n, {}, plan ? "op, dq_kernel stored" : "op, atomic_dq stored");
      EXPECT_EQ(launched("attn_dq"), plan == 1) << "N=" << n;
      EXPECT_EQ(launched("attn_bwd_dq"), plan == 0) << "N=" << n;
    }
  }
  run_op(301, {{"ATOMIC_DQ", "0"}}, "op, ATOMIC_DQ=0 forced over atomic_dq stored");
  EXPECT_TRUE(launched("attn_dq"));
  EXPECT_FALSE(launched("attn_bwd_dq"));
}

// Untuned, a workload's steps launch what its op launches: attention's Hopper tiles on a GPU
// of compute capability 9 (Step::fallback), the kernels' defaults elsewhere; right either way.
TEST(GpuWorkloads, UntunedStepsTakeTheOpsFallbackWhereItWasMeasured) {
  REQUIRE_GPU();
  auto w = workloads::find_workload("attention");
  auto rt = runtime();
  workloads::WorkloadKernels kernels(*rt, *w);
  auto p = w->parse_shape({{"H", "2"}, {"N", "301"}, {"D", "128"}, {"CAUSAL", "1"}}, DType::BF16);
  auto data = p->make_data(fresh_seed());
  workloads::ProblemOnGpu gpu(kernels, *p, *data);
  const bool hopper = rt->device().cc_major == 9;
  for (size_t i = 0; i < gpu.steps().size(); ++i) {
    const workloads::Step& s = gpu.steps()[i];
    SCOPED_TRACE(s.label);
    const workloads::ProblemOnGpu::ResolvedStep r = gpu.resolve(i, {});
    const bool expect = hopper && !s.fallback.empty();
    EXPECT_EQ(r.why.find("fallback") != std::string::npos, expect) << r.why;
    if (expect) {
      for (const auto& [name, value] : s.fallback)
        EXPECT_NE(r.tunables.find(name + "=" + value), std::string::npos) << r.tunables;
    }
  }
  EXPECT_EQ(!gpu.steps()[0].fallback.empty(), true) << "attn_fwd has Hopper tiles at D = 128";
  check_problem(gpu, {});
  // The plan too: at D = 64 the op takes dq by attn_dq on Hopper, and so does an untuned run.
  auto p64 = w->parse_shape({{"H", "2"}, {"N", "301"}, {"D", "64"}}, DType::BF16);
  const std::vector<workloads::Plan> plans = p64->plans();
  const workloads::ChosenPlan chosen =
      workloads::choose_plan(kernels, *p64, plans, nullptr, current_identity(), "");
  EXPECT_EQ(plans[chosen.index].name, hopper ? "dq_kernel" : "atomic_dq") << chosen.why;
  auto data64 = p64->make_data(fresh_seed());
  workloads::ProblemOnGpu gpu64(kernels, *p64, *data64, plans[chosen.index]);
  check_problem(gpu64, {});
}

// Tuning on first use: a launch of a shape the database does not know is tuned there, its
// winner stored and launched, the output right; a new runtime then finds the exact winner.
TEST(GpuWorkloads, TuningOnFirstUse) {
  REQUIRE_GPU();
  TempDb db_file;
  auto db = std::make_shared<TuneDatabase>(db_file.path);
  auto w = workloads::find_workload("paged_sparse");
  auto p = w->parse_shape({{"HQ", "28"},
                           {"HKV", "4"},
                           {"D", "128"},
                           {"PS", "32"},
                           {"SEQ", "5003:77:1999"},
                           {"R", "0.05"}},
                          DType::BF16);
  FirstUseTuningOptions fo;
  fo.budget = parse_budget("6");
  fo.repeats = 5;
  {
    std::vector<std::string> log;
    auto rt = runtime(/*tune_on_first_use=*/true, &log);
    EXPECT_TRUE(rt->tunes_on_first_use());
    use_tuning_database(*rt, db, fo);
    workloads::WorkloadKernels kernels(*rt, *w);
    auto data = p->make_data(fresh_seed());
    workloads::ProblemOnGpu gpu(kernels, *p, *data);
    check_problem(gpu, {});
    const PreparedLaunch& pl = rt->prepare(gpu.kernel(0), gpu.args(0), [&] {
      LaunchOptions lo;
      lo.config = gpu.config(0, {});
      return lo;
    }());
    EXPECT_NE(pl.why.find("tuned on first use"), std::string::npos) << pl.why;
    // A second launch of the shape tunes nothing more.
    size_t lines = log.size();
    check_problem(gpu, {});
    for (size_t i = lines; i < log.size(); ++i)
      EXPECT_EQ(log[i].find("tuned on first use"), std::string::npos) << log[i];
  }
  EXPECT_FALSE(db->list().empty());
  auto rt = runtime(/*tune_on_first_use=*/true);
  use_tuning_database(*rt, db, fo);
  workloads::WorkloadKernels kernels(*rt, *w);
  auto data = p->make_data(fresh_seed());
  workloads::ProblemOnGpu gpu(kernels, *p, *data);
  check_problem(gpu, {});
  LaunchOptions lo;
  lo.config = gpu.config(0, {});
  const PreparedLaunch& pl = rt->prepare(gpu.kernel(0), gpu.args(0), lo);
  EXPECT_NE(pl.why.find("tuned winner for the exact shape"), std::string::npos) << pl.why;
}

// A tune whose every compile times out gives up with an error; the compiles it left running
// own what they use, so destroying the request, the arguments and the runtime right away is
// safe (before the fix the detached compiles read the destroyed request).
TEST(GpuWorkloads, ATuneWhoseCompilesTimeOutLeavesNothingDangling) {
  REQUIRE_GPU();
  TempDb db_file;
  TuneDatabase db(db_file.path);
  {
    RuntimeOptions o;
    o.cache_dir = ""; // nothing cached: every compile really runs
    o.tune_on_first_use = false;
    Runtime rt(o);
    KernelRef k = rt.load("embedded:examples/gemm.tile");
    DeviceBuffer a(64 * 64 * 2), b(64 * 64 * 2), c(64 * 64 * 2);
    auto t = [](DeviceBuffer& d) {
      return Arg::of(Tensor::contiguous(d.data(), DType::F16, {64, 64}));
    };
    TuneRequest r;
    r.runtime = &rt;
    r.kernel = k;
    r.args = {t(a), t(b), t(c)};
    r.budget = parse_budget("4");
    r.compile_timeout_s = 1e-4;
    r.prepare_check = [] {};
    r.check = [](std::string*) { return true; };
    EXPECT_THROW(tune(r, db, current_identity()), Error);
  }
  // The abandoned compiles finish on their own threads, with nothing of the above alive.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  SUCCEED();
}

// Tuning keys carry the build's version (the project's, with the commit for a development
// build), not a constant: a winner tuned by one build is not reused by another.
TEST(GpuWorkloads, TuningKeysCarryTheBuildsVersion) {
  REQUIRE_GPU();
  TuneIdentity id = current_identity();
  EXPECT_EQ(id.tilejit_version, tilejit_version());
  EXPECT_EQ(id.tilejit_version.rfind("0.1.0", 0), 0u) << id.tilejit_version;
}

} // namespace
} // namespace tilejit::test
