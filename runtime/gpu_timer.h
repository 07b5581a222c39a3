// Device-side timing with CUDA events, which measure GPU time between two points of a stream
// without the host's launch overhead (the tuner's timing method builds on it).
#pragma once

#include "runtime/cuda_abi.h"

namespace tilejit {

/// Two events on `stream`: start() and stop() record them, elapsed_ms() waits for the stop
/// event and returns the GPU time between them. Reusable: start() again begins a new interval.
class EventTimer {
public:
  /// Creates the events on device `device` (throws NoGpuError without a GPU). The null stream
  /// is the legacy default stream.
  explicit EventTimer(cu::CUstream stream = nullptr, int device = 0);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  void start();
  void stop();
  /// Milliseconds between the last start() and stop(); blocks until stop() has happened on
  /// the GPU. Throws tilejit::Error when called before both were recorded.
  float elapsed_ms();

private:
  cu::CUstream stream_;
  int device_;
  cu::CUevent start_ = nullptr;
  cu::CUevent stop_ = nullptr;
  bool started_ = false, stopped_ = false;
};

} // namespace tilejit
