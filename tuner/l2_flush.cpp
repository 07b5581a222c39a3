#include "tuner/l2_flush.h"

#include "runtime/cuda_driver.h"
#include "runtime/device_buffer.h"
#include "runtime/device_info.h"
#include "runtime/nvrtc.h"
#include "support/error.h"

namespace tilejit {

namespace {

// 16-byte stores, grid-stride: the whole buffer in one launch of a few blocks per SM.
constexpr const char* kFillSource = R"(
extern "C" __global__ void tj_l2_flush_fill(uint4* p, unsigned long long n, unsigned v) {
  const uint4 x = make_uint4(v, v, v, v);
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    p[i] = x;
}
)";
constexpr int kFillThreads = 512;

} // namespace

L2Flush::L2Flush(FlushKind kind, size_t bytes)
    : kind_(kind), buffer_(std::make_unique<DeviceBuffer>(bytes)) {
  if (kind_ != FlushKind::kernel) return;
  DeviceInfo dev = query_device();
  NvrtcRequest req;
  req.source = kFillSource;
  req.program_name = "l2_flush.cu";
  req.arch = dev.arch();
  req.want_ptx = false;
  req.resource_report = false;
  NvrtcOutput out = Nvrtc::get().compile(req);
  if (!out.ok) throw Error(str("the L2 flush kernel did not compile:\n", out.log));
  module_ = CudaModule::load(out.cubin);
  fill_ = module_.function("tj_l2_flush_fill");
  blocks_ = 4 * dev.sm_count;
}

L2Flush::~L2Flush() = default;

void L2Flush::enqueue(cu::CUstream stream, unsigned value) {
  CudaDriver& d = CudaDriver::get();
  if (kind_ == FlushKind::memset) {
    d.check(d.cuMemsetD32Async(buffer_->ptr(), value, buffer_->size() / 4, stream),
            "cuMemsetD32Async (L2 flush)");
    return;
  }
  cu::CUdeviceptr p = buffer_->ptr();
  unsigned long long n = buffer_->size() / 16;
  void* params[] = {&p, &n, &value};
  d.check(d.cuLaunchKernel(fill_, static_cast<unsigned>(blocks_), 1, 1, kFillThreads, 1, 1, 0,
                           stream, params, nullptr),
          "cuLaunchKernel (L2 flush)");
}

} // namespace tilejit
