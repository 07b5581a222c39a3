// CUDA event timer (see gpu_timer.h).
#include "runtime/gpu_timer.h"

#include "runtime/cuda_driver.h"
#include "support/error.h"

namespace tilejit {

EventTimer::EventTimer(cu::CUstream stream, int device) : stream_(stream), device_(device) {
  CudaDriver& d = CudaDriver::get();
  d.ensure_context(device_);
  // CU_EVENT_DEFAULT keeps timing enabled (CU_EVENT_DISABLE_TIMING would make them useless).
  d.check(d.cuEventCreate(&start_, cu::CU_EVENT_DEFAULT), "cuEventCreate");
  if (cu::CUresult r = d.cuEventCreate(&stop_, cu::CU_EVENT_DEFAULT); r != cu::CUDA_SUCCESS) {
    d.cuEventDestroy(start_);
    d.check(r, "cuEventCreate");
  }
}

EventTimer::~EventTimer() {
  try {
    CudaDriver& d = CudaDriver::get();
    d.ensure_context(device_);
    d.cuEventDestroy(start_);
    d.cuEventDestroy(stop_);
  } catch (...) { // a destructor cannot report; the driver may already be shut down at exit
  }
}

void EventTimer::start() {
  CudaDriver& d = CudaDriver::get();
  d.ensure_context(device_);
  d.check(d.cuEventRecord(start_, stream_), "cuEventRecord(start)");
  started_ = true;
  stopped_ = false;
}

void EventTimer::stop() {
  if (!started_) throw Error("EventTimer::stop() called before start()");
  CudaDriver& d = CudaDriver::get();
  d.ensure_context(device_);
  d.check(d.cuEventRecord(stop_, stream_), "cuEventRecord(stop)");
  stopped_ = true;
}

float EventTimer::elapsed_ms() {
  if (!started_ || !stopped_)
    throw Error("EventTimer::elapsed_ms() called before start() and stop() were recorded");
  CudaDriver& d = CudaDriver::get();
  d.ensure_context(device_);
  d.check(d.cuEventSynchronize(stop_), "cuEventSynchronize");
  float ms = 0;
  d.check(d.cuEventElapsedTime(&ms, start_, stop_), "cuEventElapsedTime");
  return ms;
}

} // namespace tilejit
