#include "tuner/hip_kernel_timer.h"

#include "runtime/hip_runtime.h"
#include "support/error.h"
#include "tuner/timing_protocol.h"

#include <vector>

namespace tilejit {

namespace {

constexpr size_t kFlushBytes = size_t(256) << 20; // as the CUDA timer's memset flush

/// The HIP stream the protocol drives: each call after its flush (a memset of the flush
/// buffer with the call's own value), timed between HIP events.
class HipTimedStream final : public TimedStream {
public:
  HipTimedStream(void* stream, int device, void* flush, const HipKernelTimer::Launch& launch)
      : hip_(HipRuntime::get()), stream_(stream), device_(device), flush_(flush), launch_(launch) {}

  void enqueue_call(unsigned i) override {
    if (flush_) hip_.memset_d32_async(flush_, i, kFlushBytes / 4, stream_);
    launch_(stream_);
  }

  void time_calls(int n, std::vector<float>& times) override {
    std::vector<void*> start(n, nullptr), stop(n, nullptr);
    auto destroy = [&] {
      for (void* e : start) hip_.event_destroy(e);
      for (void* e : stop) hip_.event_destroy(e);
    };
    try {
      for (int i = 0; i < n; ++i) {
        start[i] = hip_.event_create(device_);
        stop[i] = hip_.event_create(device_);
      }
      for (int i = 0; i < n; ++i) {
        if (flush_)
          hip_.memset_d32_async(flush_, static_cast<unsigned>(i), kFlushBytes / 4, stream_);
        hip_.event_record(start[i], stream_);
        launch_(stream_);
        hip_.event_record(stop[i], stream_);
      }
      for (int i = 0; i < n; ++i) times.push_back(hip_.event_elapsed_ms(start[i], stop[i]));
    } catch (...) {
      destroy();
      throw;
    }
    destroy();
  }

  void synchronize() override { hip_.stream_synchronize(stream_); }

private:
  const HipRuntime& hip_;
  void* stream_;
  int device_;
  void* flush_;
  const HipKernelTimer::Launch& launch_;
};

} // namespace

HipKernelTimer::HipKernelTimer(void* stream, int device) : stream_(stream), device_(device) {
  HipRuntime::get(); // NoGpuError: "no AMD GPU: ..."
}

HipKernelTimer::~HipKernelTimer() {
  if (flush_buffer_) HipRuntime::get().release(flush_buffer_);
}

std::string HipKernelTimer::unsupported(const TimingOptions& o) {
  if (o.graph)
    return "graph replay (TimingOptions::graph, --launch graph) is CUDA's only: HIP times "
           "direct launches";
  if (o.flush_l2 && o.flush == FlushKind::kernel)
    return "the fill-kernel L2 flush (FlushKind::kernel, --flush kernel) is CUDA's only: HIP "
           "flushes by memset";
  return "";
}

Timing HipKernelTimer::time(const Launch& launch, const TimingOptions& o) {
  if (std::string why = unsupported(o); !why.empty()) throw Error(why);
  if (o.flush_l2 && !flush_buffer_)
    flush_buffer_ = HipRuntime::get().allocate(kFlushBytes, device_);
  HipTimedStream timed(stream_, device_, o.flush_l2 ? flush_buffer_ : nullptr, launch);
  return time_until_undisturbed([&] { return run_timing_protocol(timed, o); }, o);
}

} // namespace tilejit
