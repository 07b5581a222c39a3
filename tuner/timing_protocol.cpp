#include "tuner/timing_protocol.h"

#include <algorithm>
#include <chrono>

namespace tilejit {

double TimedStream::now_ms() const {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Timing time_until_undisturbed(const std::function<Timing()>& once, const TimingOptions& o) {
  Timing best = once();
  for (int i = 1; i < o.tries && looks_disturbed(best, o.disturbed_spread); ++i) {
    Timing again = once();
    if (again.median_ms < best.median_ms) best = again;
    if (!looks_disturbed(again, o.disturbed_spread)) break;
  }
  return best;
}

Timing run_timing_protocol(TimedStream& s, const TimingOptions& o) {
  // Warm-up: the calls themselves, each after a flush as when timed, until both the count and
  // the duration are reached (the GPU back at its working clock; see kernel_timer.h).
  const double warm_start = s.now_ms();
  auto warm_ms = [&] { return s.now_ms() - warm_start; };
  for (int i = 0;; ++i) {
    if (i >= o.warmup && (i - o.warmup) % 8 == 0) { // keep a few calls queued between checks
      s.synchronize();
      if (warm_ms() >= o.warmup_ms || i >= 100000) break;
    }
    s.enqueue_call(static_cast<unsigned>(i));
  }
  s.synchronize();
  Timing t;
  if (o.warmup_steady) {
    // Rounds of timed calls until two in a row agree: the clock ramp after a long idle can
    // outlast any fixed warm-up.
    t.steady = false;
    WarmupRounds rounds(o.steady_tolerance);
    while (!t.steady && warm_ms() < o.warmup_cap_ms) {
      std::vector<float> round;
      s.time_calls(8, round);
      t.steady = rounds.add(median_of(round));
    }
  }
  t.warmup_ms = warm_ms();
  std::vector<float> times;
  s.time_calls(std::max(1, o.repeats), times);
  if (o.budget_ms > 0) {
    double total = 0;
    for (float x : times) total += x;
    int more =
        static_cast<int>(std::min(200.0, o.budget_ms / std::max(1e-3, total / times.size()))) -
        static_cast<int>(times.size());
    if (more > 0) s.time_calls(more, times);
  }
  std::sort(times.begin(), times.end());
  auto pct = [&](double p) {
    return static_cast<double>(times[static_cast<size_t>(p * (times.size() - 1))]);
  };
  t.repeats = static_cast<int>(times.size());
  t.min_ms = times.front();
  t.median_ms = median_of(times);
  t.p10_ms = pct(0.1);
  t.p90_ms = pct(0.9);
  return t;
}

} // namespace tilejit
