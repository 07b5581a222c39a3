// Device-side timing with HIP events on an AMD GPU: EventTimer's counterpart for the HIP target
// (the tuner measures a candidate between two events, without the host's launch overhead).
// There is no AMD GPU where tilejit is developed: constructing one says "no AMD GPU" there.
#pragma once

namespace tilejit {

/// Two events on `stream`: start() and stop() record them, elapsed_ms() waits for the stop
/// event and returns the GPU time between them. Reusable: start() again begins a new interval.
class HipEventTimer {
public:
  /// Creates the events on AMD device `device`; throws NoGpuError without one.
  explicit HipEventTimer(void* stream = nullptr, int device = 0);
  ~HipEventTimer();
  HipEventTimer(const HipEventTimer&) = delete;
  HipEventTimer& operator=(const HipEventTimer&) = delete;

  void start();
  void stop();
  /// Milliseconds between the last start() and stop(); blocks until stop() has happened on
  /// the GPU. Throws tilejit::Error when called before both were recorded.
  float elapsed_ms();

private:
  void* stream_;
  void* start_ = nullptr;
  void* stop_ = nullptr;
  bool started_ = false, stopped_ = false;
};

} // namespace tilejit
