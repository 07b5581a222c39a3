#include "tuner/launch_timer.h"

namespace tilejit {

LaunchTimer::LaunchTimer(Runtime& rt) : api_(gpu_api(rt)) {
  if (api_ == GpuApi::hip)
    hip_ = std::make_unique<HipKernelTimer>(nullptr, rt.device_ordinal());
  else
    cuda_ = std::make_unique<KernelTimer>();
}

Timing LaunchTimer::time(const Launch& launch, const TimingOptions& options) {
  if (hip_) return hip_->time(launch, options);
  return cuda_->time([&](cu::CUstream s) { launch(s); }, options);
}

} // namespace tilejit
