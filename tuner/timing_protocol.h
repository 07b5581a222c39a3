// The timing protocol of tuner/kernel_timer.h, apart from any GPU API: warm-up calls (a count
// and a duration), then rounds of timed calls until two agree, the timed repeats (more within
// a budget), their median and percentiles, and further tries while a timing looks disturbed.
// CUDA's KernelTimer and HIP's HipKernelTimer drive one GPU stream each through it; the tests
// drive a scripted one, so the protocol itself is checked without a GPU.
#pragma once

#include "tuner/kernel_timer.h"

#include <functional>
#include <vector>

namespace tilejit {

/// One GPU stream as the protocol drives it.
class TimedStream {
public:
  virtual ~TimedStream() = default;
  /// Enqueues call `i`: its L2 flush first where the options flush (writing a value of its
  /// own, so that no write is skipped as unchanged), then the call.
  virtual void enqueue_call(unsigned i) = 0;
  /// Enqueues n calls, each after its flush and between two events of its own; waits for them
  /// and appends their GPU times in milliseconds to `times`.
  virtual void time_calls(int n, std::vector<float>& times) = 0;
  /// Waits until everything enqueued has run.
  virtual void synchronize() = 0;
  /// Wall-clock milliseconds (a steady clock; the tests script it).
  virtual double now_ms() const;
};

/// One timing of the calls `stream` enqueues, as TimingOptions says (tries aside).
Timing run_timing_protocol(TimedStream& stream, const TimingOptions& options);

/// `once` again, up to options.tries times in all, while its timing looks_disturbed(); the
/// timing with the lowest median.
Timing time_until_undisturbed(const std::function<Timing()>& once, const TimingOptions& options);

} // namespace tilejit
