#include "runtime/hip_event_timer.h"

#include "runtime/hip_runtime.h"
#include "support/error.h"

namespace tilejit {

HipEventTimer::HipEventTimer(void* stream, int device) : stream_(stream) {
  const HipRuntime& hip = HipRuntime::get(); // NoGpuError: "no AMD GPU ..."
  start_ = hip.event_create(device);
  try {
    stop_ = hip.event_create(device);
  } catch (...) {
    hip.event_destroy(start_);
    throw;
  }
}

HipEventTimer::~HipEventTimer() {
  const HipRuntime& hip = HipRuntime::get();
  hip.event_destroy(start_);
  hip.event_destroy(stop_);
}

void HipEventTimer::start() {
  HipRuntime::get().event_record(start_, stream_);
  started_ = true;
  stopped_ = false;
}

void HipEventTimer::stop() {
  if (!started_) throw Error("HipEventTimer::stop() before start()");
  HipRuntime::get().event_record(stop_, stream_);
  stopped_ = true;
}

float HipEventTimer::elapsed_ms() {
  if (!started_ || !stopped_)
    throw Error("HipEventTimer::elapsed_ms() needs start() and stop() first");
  return HipRuntime::get().event_elapsed_ms(start_, stop_);
}

} // namespace tilejit
