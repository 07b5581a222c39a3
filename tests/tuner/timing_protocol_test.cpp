// The timing protocol (tuner/timing_protocol.h) on a scripted stream, no GPU: the warm-up's
// count and duration, the rounds until two agree, one flush before every call with a value of
// its own, the repeats and the budget's extra ones, the median and percentiles, the tries while
// a timing looks disturbed; and the HIP timer (the protocol's AMD user) refusing without an
// AMD GPU and refusing CUDA-only options by name.
#include "tuner/hip_kernel_timer.h"
#include "tuner/timing_protocol.h"

#include <tilejit/errors.h>

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace tilejit {
namespace {

/// A GPU whose n-th call takes call_ms(n): a clock that the calls advance when the stream
/// runs them (at synchronize() and time_calls()), and a log of what was enqueued.
class ScriptedStream final : public TimedStream {
public:
  explicit ScriptedStream(std::function<double(int)> call_ms) : call_ms_(std::move(call_ms)) {}

  void enqueue_call(unsigned i) override {
    log.push_back("flush " + std::to_string(i));
    log.push_back("call");
    ++queued_;
  }
  void time_calls(int n, std::vector<float>& times) override {
    synchronize();
    for (int i = 0; i < n; ++i) {
      log.push_back("flush " + std::to_string(i));
      log.push_back("start");
      log.push_back("call");
      log.push_back("stop");
      const double ms = call_ms_(calls_++);
      clock_ += ms;
      times.push_back(static_cast<float>(ms));
    }
    ++timed_batches;
  }
  void synchronize() override {
    for (; queued_ > 0; --queued_) clock_ += call_ms_(calls_++);
  }
  double now_ms() const override { return clock_; }

  std::vector<std::string> log;
  int timed_batches = 0;
  int calls() const { return calls_; }

private:
  std::function<double(int)> call_ms_;
  double clock_ = 0;
  int calls_ = 0, queued_ = 0;
};

TEST(TimingProtocol, WarmsUpForItsCountAndDurationThenUntilTwoRoundsAgree) {
  // A clock ramp: each call faster than the last (3 ms down to about 1) for 60 calls, then 1 ms.
  ScriptedStream s([](int n) { return n < 60 ? 3.0 - n / 30.0 : 1.0; });
  TimingOptions o;
  o.warmup = 3;
  o.warmup_ms = 25;
  o.repeats = 20;
  Timing t = run_timing_protocol(s, o);
  EXPECT_TRUE(t.steady);
  EXPECT_GE(t.warmup_ms, 25);
  EXPECT_DOUBLE_EQ(t.median_ms, 1.0); // no timed call from the ramp
  EXPECT_DOUBLE_EQ(t.p90_ms, 1.0);
  EXPECT_EQ(t.repeats, 20);
  // The warm-up checks its clock after 3 + 8 k calls: 11 calls (31 ms) are the first past 25.
  EXPECT_EQ(s.calls() - 20 - 8 * (s.timed_batches - 1), 11);
  EXPECT_GE(s.timed_batches - 1, 7); // the ramp's rounds, then two that agree
}

TEST(TimingProtocol, EveryCallFollowsAFlushAndTimedCallsSitBetweenTheirEvents) {
  ScriptedStream s([](int) { return 1.0; });
  TimingOptions o;
  o.warmup = 2;
  o.warmup_ms = 0;
  o.warmup_steady = false;
  o.repeats = 3;
  run_timing_protocol(s, o);
  const std::vector<std::string> want = {"flush 0", "call",  "flush 1", "call",  "flush 0", "start",
                                         "call",    "stop",  "flush 1", "start", "call",    "stop",
                                         "flush 2", "start", "call",    "stop"};
  EXPECT_EQ(s.log, want);
}

TEST(TimingProtocol, ABudgetAddsRepeatsUpToTwoHundred) {
  ScriptedStream s([](int) { return 0.5; });
  TimingOptions o;
  o.warmup_ms = 0;
  o.warmup_steady = false;
  o.repeats = 10;
  o.budget_ms = 20; // 40 calls of 0.5 ms
  EXPECT_EQ(run_timing_protocol(s, o).repeats, 40);
  o.budget_ms = 1000; // 2000 calls: capped
  EXPECT_EQ(run_timing_protocol(s, o).repeats, 200);
}

TEST(TimingProtocol, PercentilesAndMinimumOfTheTimedCalls) {
  int n = 0;
  ScriptedStream s([&](int) { return 1.0 + (n++ % 10); }); // 1..10 ms, ten of each in 100
  TimingOptions o;
  o.warmup = 0;
  o.warmup_ms = 0;
  o.warmup_steady = false;
  o.repeats = 100;
  Timing t = run_timing_protocol(s, o);
  EXPECT_DOUBLE_EQ(t.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(t.median_ms, 5.5);
  EXPECT_DOUBLE_EQ(t.p10_ms, 1.0); // sorted[9]
  EXPECT_DOUBLE_EQ(t.p90_ms, 9.0); // sorted[89]
}

TEST(TimingProtocol, ADisturbedTimingIsTriedAgainAndTheLowestMedianKept) {
  TimingOptions o;
  o.tries = 3;
  std::vector<Timing> results(3);
  results[0].p10_ms = 1, results[0].median_ms = 3, results[0].p90_ms = 4; // disturbed
  results[1].p10_ms = 1, results[1].median_ms = 2, results[1].p90_ms = 3; // disturbed
  results[2].p10_ms = 1, results[2].median_ms = 1.1, results[2].p90_ms = 1.2;
  int calls = 0;
  Timing t = time_until_undisturbed([&] { return results[calls++]; }, o);
  EXPECT_EQ(calls, 3);
  EXPECT_DOUBLE_EQ(t.median_ms, 1.1);
  calls = 0;
  o.tries = 2; // gives up after two, keeping the lower median
  EXPECT_DOUBLE_EQ(time_until_undisturbed([&] { return results[calls++]; }, o).median_ms, 2);
  o.tries = 5; // an undisturbed first timing is the answer
  EXPECT_DOUBLE_EQ(time_until_undisturbed([&] { return results[2]; }, o).median_ms, 1.1);
}

TEST(HipKernelTimer, WithoutAnAmdGpuItSaysSoAndNamesCudaOnlyOptions) {
  try {
    HipKernelTimer timer;
    ADD_FAILURE() << "an AMD GPU is here: time a HIP kernel with this timer";
  } catch (const NoGpuError& e) {
    EXPECT_NE(std::string(e.what()).find("no AMD GPU"), std::string::npos) << e.what();
  }
  TimingOptions o;
  EXPECT_EQ(HipKernelTimer::unsupported(o), "");
  o.graph = true;
  EXPECT_NE(HipKernelTimer::unsupported(o).find("graph replay"), std::string::npos);
  o.graph = false;
  o.flush = FlushKind::kernel;
  EXPECT_NE(HipKernelTimer::unsupported(o).find("--flush kernel"), std::string::npos);
  o.flush_l2 = false; // no flush at all: nothing CUDA-only asked
  EXPECT_EQ(HipKernelTimer::unsupported(o), "");
}

} // namespace
} // namespace tilejit
