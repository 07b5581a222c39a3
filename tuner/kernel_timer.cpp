#include "tuner/kernel_timer.h"

#include "tuner/timing_protocol.h"

#include "runtime/cuda_driver.h"
#include "runtime/device_buffer.h"
#include "support/error.h"

#include <algorithm>
#include <cmath>

namespace tilejit {

bool WarmupRounds::add(double round_median_ms) {
  bool settled = previous_ > 0 && std::abs(round_median_ms - previous_) <= tolerance_ * previous_;
  previous_ = round_median_ms;
  return settled;
}

bool looks_disturbed(const Timing& t, double spread) {
  return t.p90_ms > spread * t.p10_ms;
}

double median_of(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (double(v[n / 2 - 1]) + double(v[n / 2]));
}

KernelTimer::KernelTimer(cu::CUstream stream) : stream_(stream) {
  CudaDriver::get().ensure_context();
}

KernelTimer::~KernelTimer() {
  if (capture_stream_) CudaDriver::get().cuStreamDestroy(capture_stream_);
}

namespace {

/// One call captured into an instantiated CUDA graph; destroyed with it.
class CapturedCall {
public:
  CapturedCall(const KernelTimer::Launch& launch, cu::CUstream stream) {
    CudaDriver& d = CudaDriver::get();
    d.check(d.cuStreamBeginCapture(stream, cu::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
            "cuStreamBeginCapture");
    try {
      launch(stream);
    } catch (...) {
      cu::CUgraph broken = nullptr;
      d.cuStreamEndCapture(stream, &broken); // ends the capture; its error is the one thrown
      if (broken) d.cuGraphDestroy(broken);
      throw;
    }
    d.check(d.cuStreamEndCapture(stream, &graph_), "cuStreamEndCapture");
    d.check(d.cuGraphInstantiateWithFlags(&exec_, graph_, 0), "cuGraphInstantiateWithFlags");
  }
  ~CapturedCall() {
    CudaDriver& d = CudaDriver::get();
    if (exec_) d.cuGraphExecDestroy(exec_);
    if (graph_) d.cuGraphDestroy(graph_);
  }
  CapturedCall(const CapturedCall&) = delete;
  CapturedCall& operator=(const CapturedCall&) = delete;
  void replay(cu::CUstream stream) const {
    CudaDriver& d = CudaDriver::get();
    d.check(d.cuGraphLaunch(exec_, stream), "cuGraphLaunch");
  }

private:
  cu::CUgraph graph_ = nullptr;
  cu::CUgraphExec exec_ = nullptr;
};

/// The CUDA stream the protocol drives: the call (direct or replayed from its graph), each
/// after its flush, timed between CUDA events.
class CudaTimedStream final : public TimedStream {
public:
  CudaTimedStream(cu::CUstream stream, L2Flush* flush, std::function<void()> launch)
      : stream_(stream), flush_(flush), launch_(std::move(launch)) {}

  void enqueue_call(unsigned i) override {
    if (flush_) flush_->enqueue(stream_, i);
    launch_();
  }

  void time_calls(int n, std::vector<float>& times) override {
    CudaDriver& d = CudaDriver::get();
    std::vector<cu::CUevent> start(n), stop(n);
    for (int i = 0; i < n; ++i) {
      d.check(d.cuEventCreate(&start[i], 0), "cuEventCreate");
      d.check(d.cuEventCreate(&stop[i], 0), "cuEventCreate");
    }
    for (int i = 0; i < n; ++i) {
      if (flush_) flush_->enqueue(stream_, static_cast<unsigned>(i));
      d.check(d.cuEventRecord(start[i], stream_), "cuEventRecord");
      launch_();
      d.check(d.cuEventRecord(stop[i], stream_), "cuEventRecord");
    }
    d.check(d.cuStreamSynchronize(stream_), "cuStreamSynchronize (timing)");
    for (int i = 0; i < n; ++i) {
      float ms = 0;
      d.check(d.cuEventElapsedTime(&ms, start[i], stop[i]), "cuEventElapsedTime");
      times.push_back(ms);
      d.cuEventDestroy(start[i]);
      d.cuEventDestroy(stop[i]);
    }
  }

  void synchronize() override {
    CudaDriver& d = CudaDriver::get();
    d.check(d.cuStreamSynchronize(stream_), "cuStreamSynchronize (warm-up)");
  }

private:
  cu::CUstream stream_;
  L2Flush* flush_;
  std::function<void()> launch_;
};

} // namespace

Timing KernelTimer::time(const Launch& launch, const TimingOptions& o) {
  return time_until_undisturbed([&] { return time_once(launch, o); }, o);
}

Timing KernelTimer::time_once(const Launch& direct_launch, const TimingOptions& o) {
  CudaDriver& d = CudaDriver::get();
  cu::CUstream stream = stream_; // graph mode: the timer's own stream (see the header)
  std::unique_ptr<CapturedCall> captured;
  if (o.graph) {
    if (!capture_stream_)
      d.check(d.cuStreamCreate(&capture_stream_, cu::CU_STREAM_DEFAULT), "cuStreamCreate");
    stream = capture_stream_;
    // One direct call first: a first launch may load modules or allocate scratch, which a
    // capture does not allow.
    direct_launch(stream);
    d.check(d.cuStreamSynchronize(stream), "cuStreamSynchronize (before capture)");
    captured = std::make_unique<CapturedCall>(direct_launch, stream);
  }
  L2Flush* flush = nullptr;
  if (o.flush_l2) {
    auto& slot = o.flush == FlushKind::kernel ? kernel_flush_ : memset_flush_;
    if (!slot) slot = std::make_unique<L2Flush>(o.flush);
    flush = slot.get();
  }
  CudaTimedStream timed(stream, flush, [&] {
    if (captured)
      captured->replay(stream);
    else
      direct_launch(stream);
  });
  return run_timing_protocol(timed, o);
}

double measure_copy_bandwidth() {
  CudaDriver& d = CudaDriver::get();
  d.ensure_context();
  const size_t bytes = size_t(1) << 30;
  DeviceBuffer a(bytes), b(bytes);
  a.fill_byte(1);
  KernelTimer timer;
  TimingOptions o;
  o.flush_l2 = false;
  o.repeats = 10;
  o.warmup_ms = 0;
  Timing t = timer.time(
      [&](cu::CUstream) { d.check(d.cuMemcpyDtoD(b.ptr(), a.ptr(), bytes), "cuMemcpyDtoD"); }, o);
  return 2.0 * static_cast<double>(bytes) / (t.median_ms * 1e-3);
}

} // namespace tilejit
