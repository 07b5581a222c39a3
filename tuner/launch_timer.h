// The tuner's timer for a Runtime's launches, whichever GPU API they go through: KernelTimer
// on CUDA, HipKernelTimer on an AMD GPU (runtime/gpu_api.h chooses by the runtime's target).
// Both run the same protocol (tuner/timing_protocol.h); the launch gets the stream as a void*,
// which Runtime::launch's LaunchOptions::stream takes for either API.
#pragma once

#include "runtime/gpu_api.h"
#include "tuner/hip_kernel_timer.h"
#include "tuner/kernel_timer.h"

#include <functional>
#include <memory>

namespace tilejit {

class LaunchTimer {
public:
  using Launch = std::function<void(void* stream)>;
  /// On `rt`'s GPU, its default stream. Throws NoGpuError without a GPU of its API (an AMD
  /// target without an AMD GPU: "no AMD GPU: ..."), before anything is compiled or timed.
  explicit LaunchTimer(Runtime& rt);
  Timing time(const Launch& launch, const TimingOptions& options = {});
  GpuApi api() const { return api_; }

private:
  GpuApi api_;
  std::unique_ptr<KernelTimer> cuda_;
  std::unique_ptr<HipKernelTimer> hip_;
};

} // namespace tilejit
