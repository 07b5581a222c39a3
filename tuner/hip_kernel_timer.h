// The tuner's measuring loop on an AMD GPU: KernelTimer's protocol (tuner/timing_protocol.h:
// warm-up until steady, the L2 flushed by a 256 MB memset before every timed call, events
// around the call alone, the median) through the HIP runtime (runtime/hip_runtime.h). There is
// no AMD GPU where tilejit is developed: constructing one says "no AMD GPU" there, and the
// protocol it drives is tested with a scripted stream.
#pragma once

#include "tuner/kernel_timer.h"

#include <functional>

namespace tilejit {

class HipKernelTimer {
public:
  /// Enqueues one call on the HIP stream it is given.
  using Launch = std::function<void(void* stream)>;
  /// On AMD device `device`, stream `stream` (null: the default stream). Throws NoGpuError
  /// ("no AMD GPU: ...") without one.
  explicit HipKernelTimer(void* stream = nullptr, int device = 0);
  ~HipKernelTimer();
  HipKernelTimer(const HipKernelTimer&) = delete;
  HipKernelTimer& operator=(const HipKernelTimer&) = delete;

  /// Times `launch` as KernelTimer::time does. CUDA-only options are refused by name: `graph`
  /// (graph replay) and FlushKind::kernel (the fill kernel is NVRTC's; HIP flushes by memset).
  Timing time(const Launch& launch, const TimingOptions& options = {});

  /// The options' CUDA-only choices, as the error time() throws; empty when HIP takes them.
  static std::string unsupported(const TimingOptions& options);

private:
  void* stream_;
  int device_;
  void* flush_buffer_ = nullptr; ///< allocated on the first flushed timing
};

} // namespace tilejit
