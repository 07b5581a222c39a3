// Timing a launch the way the peers are timed (METHOD.md, triton.testing.do_bench): warm-up
// calls, then for every timed call the L2 flushed by an asynchronous 256 MB memset on the same
// stream, CUDA events around the call alone, and the median of the repeats.
//
// The warm-up lasts at least `warmup_ms` of back-to-back work (flushes and calls) and then goes
// on, in rounds of timed calls, until two rounds in a row agree on the median: a GPU that sat
// idle (the tuner compiling its next batch, a benchmark preparing inputs for seconds) runs
// below its boost clock for a while. A latency-bound call of ~15 us measured up to 1.4x slower
// after a short pause, and on an H100 a 30 us call measured 114-683 us (median of 30) right
// after a benchmark's seconds of input generation, while a fixed 25 ms warm-up had passed. The
// peers' timing loops run on a GPU kept busy (a spin queued ahead of the loop), so without
// this the comparison was unfair to whichever side had just paused.
//
// With `graph`, the call is captured once into a CUDA graph and every warm-up and timed call
// replays it: how a serving engine runs its decode step, and how our Triton peer's `ms` is
// timed (its two launches replayed from a graph), so both sides are measured the same way.
//
// The protocol itself (warm-up, rounds, repeats, percentiles, tries) is tuner/timing_protocol.h,
// shared with the HIP timer (tuner/hip_kernel_timer.h); this file is its CUDA stream.
#pragma once

#include "runtime/cuda_abi.h"
#include "tuner/l2_flush.h"

#include <functional>
#include <memory>
#include <vector>

namespace tilejit {

struct TimingOptions {
  int warmup = 3;            ///< at least this many warm-up calls...
  double warmup_ms = 25.0;   ///< ...and at least this long (wall clock) of back-to-back work...
  bool warmup_steady = true; ///< ...then rounds until two agree within `steady_tolerance`
  double steady_tolerance = 0.05;
  double warmup_cap_ms = 1000; ///< the steady-state search gives up after this long
  int repeats = 20;            ///< at least this many timed calls
  double budget_ms = 0;        ///< if > 0, more repeats until this much GPU time (capped at 200)
  bool flush_l2 = true;
  FlushKind flush = FlushKind::memset; ///< how the L2 is flushed (tuner/l2_flush.h)
  bool graph = false; ///< replay the call from a CUDA graph captured once (see above)
  /// Up to this many timings while each looks_disturbed(); the lowest median is returned.
  int tries = 1;
  double disturbed_spread = 1.5; ///< looks_disturbed()'s p90 / p10 limit
};

struct Timing {
  double median_ms = 0, min_ms = 0, p10_ms = 0, p90_ms = 0;
  int repeats = 0;
  double warmup_ms = 0; ///< wall-clock time the warm-up took
  bool steady = true;   ///< false when the warm-up hit its cap before two rounds agreed
  double spread_ms() const { return p90_ms - p10_ms; }
};

/// When the warm-up's rounds of timed calls have settled: as soon as a round's median agrees
/// with the previous round's within `tolerance` (relative). A GPU ramping its clock up gives
/// medians that keep falling by more than that; noise alone rarely moves two medians of 8 apart.
class WarmupRounds {
public:
  explicit WarmupRounds(double tolerance) : tolerance_(tolerance) {}
  /// Adds one round's median; returns whether the warm-up has settled.
  bool add(double round_median_ms);

private:
  double tolerance_;
  double previous_ = -1;
};

/// Whether a timing looks disturbed, something else holding the GPU part of the time: its p90
/// over `spread` times its p10. On an H100 a peer's final timing had p10 42.5 us, median 158 us
/// and p90 225 us for a call its search had timed at 44 us.
bool looks_disturbed(const Timing& t, double spread);

/// The median of `v` (the mean of the middle two for an even count); v must not be empty.
double median_of(std::vector<float> v);

/// Times `launch`, which enqueues one call on the stream it is given. Throws tilejit::Error on
/// CUDA errors. Direct calls go to the timer's stream (default: the legacy default stream);
/// graph mode captures and replays on a stream of the timer's own, since the legacy stream
/// cannot be captured.
class KernelTimer {
public:
  using Launch = std::function<void(cu::CUstream)>;
  explicit KernelTimer(cu::CUstream stream = nullptr);
  ~KernelTimer();
  Timing time(const Launch& launch, const TimingOptions& options = {});

private:
  Timing time_once(const Launch& launch, const TimingOptions& options);
  cu::CUstream stream_;
  cu::CUstream capture_stream_ = nullptr;                ///< created on first use of graph mode
  std::unique_ptr<L2Flush> memset_flush_, kernel_flush_; ///< each made on first use
};

/// Device-to-device copy bandwidth in bytes/s, counting bytes read plus written (the ceiling
/// floors are computed against), from a 1 GiB copy.
double measure_copy_bandwidth();

} // namespace tilejit
