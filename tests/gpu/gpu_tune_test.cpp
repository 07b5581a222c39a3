// Tuning end to end on the GPU (label `gpu`): tune a real kernel into a fresh SQLite database,
// check that every trial and the winner landed there, that a second run answers from the
// database without compiling or timing anything, and that a fresh Runtime with the database
// selector launches the winner for that shape and computes the right answer (output poisoned,
// every element checked against a float64 reference on fresh random inputs), its binary
// loaded from the database rather than compiled again.
#include "gpu_runner.h"
#include "runtime/runtime_access.h"
#include "test_util.h"

#include "runtime/device_buffer.h"
#include "runtime/jit_compiler.h"
#include "tuner/db_binary_source.h"
#include "tuner/db_config_selector.h"
#include "tuner/kernel_timer.h"
#include "tuner/tune_database.h"
#include "tuner/tuner.h"

#include <gtest/gtest.h>

#include <tilejit/tilejit.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace tilejit::test {
namespace {

/// Row softmax (f32) on the GPU with its inputs, a poisoning step and a checker.
struct SoftmaxProblem {
  int64_t rows, cols;
  std::vector<float> x;
  std::vector<double> want;
  DeviceBuffer dx, dy;

  SoftmaxProblem(int64_t r, int64_t c, uint64_t seed)
      : rows(r), cols(c), x(static_cast<size_t>(r * c)), want(x.size()),
        dx(x.size() * sizeof(float)), dy(x.size() * sizeof(float)) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (float& v : x) v = normal(rng);
    for (int64_t i = 0; i < rows; ++i) {
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < cols; ++j) m = std::max(m, double(x[i * cols + j]));
      for (int64_t j = 0; j < cols; ++j) s += std::exp(double(x[i * cols + j]) - m);
      for (int64_t j = 0; j < cols; ++j)
        want[i * cols + j] = std::exp(double(x[i * cols + j]) - m) / s;
    }
    dx.upload(x.data(), x.size() * sizeof(float));
  }
  std::vector<Arg> args() {
    return {Arg::of(Tensor::contiguous(dx.data(), DType::F32, {rows, cols})),
            Arg::of(Tensor::contiguous(dy.data(), DType::F32, {rows, cols}))};
  }
  void poison() { dy.fill_byte(0xFF); } // NaN everywhere
  /// Every element within 1e-5 relative (+1e-7 absolute) of the float64 reference.
  bool correct(std::string* why) const {
    std::vector<float> got(x.size());
    dy.download(got.data(), got.size() * sizeof(float));
    for (size_t i = 0; i < got.size(); ++i)
      if (!(std::fabs(got[i] - want[i]) <= 1e-5 * std::fabs(want[i]) + 1e-7)) {
        if (why) *why = str("element ", i, ": got ", got[i], ", want ", want[i]);
        return false;
      }
    return true;
  }
};

TEST(GpuTune, TuneStoresEveryTrialAndTheRuntimeLaunchesTheWinner) {
  REQUIRE_GPU();
  ScratchDir dir;
  const std::string db_file = dir.path + "/tune.db";
  const uint64_t seed = fresh_seed();
  SoftmaxProblem p(37, 1000, seed); // odd sizes: partial row blocks and column tiles
  TuneIdentity identity = current_identity();

  RuntimeOptions ro;
  ro.cache_dir = dir.path + "/modules";
  Runtime rt(ro);
  KernelRef k = rt.load("embedded:examples/softmax.tile");
  TuneRequest r;
  r.runtime = &rt;
  r.kernel = k;
  r.args = p.args();
  r.prepare_check = [&] { p.poison(); };
  r.check = [&](std::string* why) { return p.correct(why); };
  r.budget = parse_budget("12");
  r.repeats = 5;
  r.seed = 3;

  TuneOutcome first;
  {
    TuneDatabase db(db_file);
    first = tune(r, db, identity);
    ASSERT_FALSE(first.winner.empty()) << "seed " << seed;
    EXPECT_FALSE(first.from_database);
    EXPECT_GT(first.measured, 0);
    EXPECT_GT(first.compiled, 0);
    EXPECT_GT(first.winner_ms, 0);
    // Every trial is in the database, and the winner is the one tune() reported.
    std::vector<TrialRecord> trials = db.trials_for(first.key);
    EXPECT_EQ(static_cast<int>(trials.size()), first.trials);
    auto w = db.winner(first.key);
    ASSERT_TRUE(w);
    for (const auto& [name, value] : w->config)
      EXPECT_EQ(first.winner.at(name), std::to_string(value));
    EXPECT_DOUBLE_EQ(*w->median_ms, first.winner_ms);
    // The winner's binary is stored with it.
    const CompiledVariant& wv = RuntimeAccess::compile(rt, k, first.winner, p.args());
    EXPECT_EQ(db.get_binary(wv.cache_key), wv.binary);
  }

  // A second run on the warm database compiles and times nothing.
  {
    TuneDatabase db(db_file);
    TuneOutcome again = tune(r, db, identity);
    EXPECT_TRUE(again.from_database);
    EXPECT_EQ(again.compiled, 0);
    EXPECT_EQ(again.measured, 0);
    EXPECT_EQ(again.winner, first.winner);
  }

  // A fresh runtime that consults the database launches the winner for this exact shape.
  std::vector<std::string> log;
  RuntimeOptions ro2;
  ro2.cache_dir = ""; // no module cache on disk: the winner's binary comes from the database
  ro2.log = [&](const std::string& m) { log.push_back(m); };
  Runtime rt2(ro2);
  auto db2 = std::make_shared<TuneDatabase>(db_file);
  rt2.set_config_selector(make_db_config_selector(db2, identity));
  rt2.set_binary_source(make_db_binary_source(db2));
  KernelRef k2 = rt2.load("embedded:examples/softmax.tile");
  p.poison();
  LaunchOptions lo;
  lo.synchronize = true;
  rt2.launch(k2, p.args(), lo);
  std::string why;
  EXPECT_TRUE(p.correct(&why)) << why << " (seed " << seed << ")";
  bool said_tuned = false;
  for (const std::string& m : log)
    if (m.find("tuned winner for the exact shape") != std::string::npos) said_tuned = true;
  EXPECT_TRUE(said_tuned) << "the launch did not take the tuned winner";
  bool from_db = false;
  for (const std::string& m : log)
    if (m.find("binary source hit for softmax") != std::string::npos) from_db = true;
  EXPECT_TRUE(from_db) << "the winner was compiled again instead of loaded from the database";
  Config chosen = rt2.resolve_config(k2, p.args(), {}, &why);
  for (const auto& [name, value] : first.winner)
    if (chosen.count(name)) {
      EXPECT_EQ(chosen.at(name), value) << name;
    }
}

// The timer's warm-up runs until the kernel's own timings are steady: after the GPU idled (as
// it does while a benchmark prepares inputs for seconds) a median taken right away must match
// one taken on a GPU kept busy. On an H100 a fixed 25 ms warm-up let a 30 us call measure
// 114-683 us after such a pause.
TEST(GpuTune, TimerWarmsUpToASteadyStateAfterAnIdlePause) {
  REQUIRE_GPU();
  ScratchDir dir;
  SoftmaxProblem p(4099, 1000, fresh_seed()); // ~33 MB moved per call: tens of microseconds
  RuntimeOptions ro;
  ro.cache_dir = dir.path + "/modules";
  Runtime rt(ro);
  KernelRef k = rt.load("embedded:examples/softmax.tile");
  std::vector<Arg> args = p.args();
  p.poison();
  LaunchOptions sync;
  sync.synchronize = true;
  rt.launch(k, args, sync); // compiled and loaded before timing
  std::string why;
  ASSERT_TRUE(p.correct(&why)) << why;

  KernelTimer timer;
  TimingOptions o;
  o.repeats = 30;
  auto launch = [&](cu::CUstream) { rt.launch(k, args); };
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  Timing after_idle = timer.time(launch, o);
  Timing busy = timer.time(launch, o);
  EXPECT_TRUE(after_idle.steady) << "warm-up ran " << after_idle.warmup_ms << " ms";
  EXPECT_GE(after_idle.warmup_ms, o.warmup_ms);
  EXPECT_LE(after_idle.warmup_ms, o.warmup_cap_ms + 500);
  EXPECT_NEAR(after_idle.median_ms, busy.median_ms, 0.15 * busy.median_ms)
      << "after an idle pause " << after_idle.median_ms * 1e3 << " us, busy "
      << busy.median_ms * 1e3 << " us";
}

// Graph mode captures the call once and replays it: the replays must compute the same result
// (the output is poisoned before timing and checked after) and take about as long as direct
// launches of a call this size (launch overhead is a small part of tens of microseconds).
TEST(GpuTune, TimerGraphReplaysAndKernelFlushesTimeLikeDirectLaunchesAfterAMemset) {
  REQUIRE_GPU();
  ScratchDir dir;
  SoftmaxProblem p(4099, 1000, fresh_seed());
  RuntimeOptions ro;
  ro.cache_dir = dir.path + "/modules";
  Runtime rt(ro);
  KernelRef k = rt.load("embedded:examples/softmax.tile");
  std::vector<Arg> args = p.args();
  Config config = rt.resolve_config(k, args, {});
  auto launch = [&](cu::CUstream s) { rt.launch_config(k, config, args, s); };
  KernelTimer timer;
  TimingOptions o;
  o.repeats = 30;
  Timing direct = timer.time(launch, o);
  p.poison();
  o.graph = true;
  Timing graphed = timer.time(launch, o);
  std::string why;
  EXPECT_TRUE(p.correct(&why)) << "after graph replays: " << why;
  EXPECT_GT(graphed.median_ms, 0.0);
  EXPECT_NEAR(graphed.median_ms, direct.median_ms, 0.15 * direct.median_ms)
      << "graph " << graphed.median_ms * 1e3 << " us, direct " << direct.median_ms * 1e3 << " us";
  // The fill-kernel flush evicts as the memset does: both flushed timings are slower than
  // unflushed ones (the ~33 MB the call touches then stay in the 50 MB L2) and close together.
  o.graph = false;
  o.flush = FlushKind::kernel;
  Timing kernel_flushed = timer.time(launch, o);
  o.flush_l2 = false;
  Timing unflushed = timer.time(launch, o);
  EXPECT_GT(kernel_flushed.median_ms, 1.05 * unflushed.median_ms)
      << "kernel-flushed " << kernel_flushed.median_ms * 1e3 << " us, unflushed "
      << unflushed.median_ms * 1e3 << " us";
  EXPECT_NEAR(kernel_flushed.median_ms, direct.median_ms, 0.25 * direct.median_ms);
  o.flush_l2 = true;
  o.flush = FlushKind::memset;
  o.graph = true;
  // A second graph timing reuses the timer's stream and captures afresh.
  Timing again = timer.time(launch, o);
  EXPECT_NEAR(again.median_ms, graphed.median_ms, 0.15 * graphed.median_ms);
}

} // namespace
} // namespace tilejit::test
