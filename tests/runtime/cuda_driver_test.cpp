// The driver layer on a machine without a GPU: everything loads, nothing aborts, and each
// GPU-only call says why it cannot run. On a GPU machine these assertions are skipped.
#include "runtime/cuda_driver.h"
#include "runtime/cuda_module.h"
#include "runtime/device_buffer.h"
#include "runtime/device_info.h"
#include "runtime/gpu_timer.h"
#include "support/error.h"

#include <gtest/gtest.h>
#include <thread>
#include <vector>

namespace tilejit {
namespace {

#define SKIP_IF_GPU()                                                                              \
  if (CudaDriver::available()) GTEST_SKIP() << "a CUDA device is present; covered by gpu tests"

TEST(CudaDriverTest, UnavailableWithOneLineReason) {
  SKIP_IF_GPU();
  EXPECT_FALSE(CudaDriver::available());
  const std::string& reason = CudaDriver::unavailable_reason();
  EXPECT_FALSE(reason.empty());
  EXPECT_EQ(reason.find('\n'), std::string::npos) << reason;
  // Either no driver library at all, or a driver that finds no device.
  EXPECT_TRUE(reason.find("libcuda.so.1") != std::string::npos ||
              reason.find("cuInit failed") != std::string::npos ||
              reason.find("no CUDA device") != std::string::npos)
      << reason;
}

TEST(CudaDriverTest, GetThrowsNoGpuErrorWithTheReason) {
  SKIP_IF_GPU();
  try {
    CudaDriver::get();
    FAIL() << "CudaDriver::get() returned without a GPU";
  } catch (const NoGpuError& e) {
    EXPECT_EQ(std::string(e.what()), CudaDriver::unavailable_reason());
  }
  EXPECT_THROW(CudaDriver::require(), NoGpuError);
}

TEST(CudaDriverTest, ConcurrentFirstUseAgrees) {
  // The one-time load races safely: every thread sees the same answer.
  std::vector<std::thread> threads;
  std::vector<int> seen(8, -1);
  for (size_t i = 0; i < seen.size(); ++i)
    threads.emplace_back([&, i] { seen[i] = CudaDriver::available() ? 1 : 0; });
  for (auto& t : threads) t.join();
  for (int s : seen) EXPECT_EQ(s, seen[0]);
}

TEST(CudaDriverTest, GpuOnlyObjectsThrowNoGpuError) {
  SKIP_IF_GPU();
  EXPECT_THROW(query_device(0), NoGpuError);
  EXPECT_THROW(DeviceBuffer(16), NoGpuError);
  EXPECT_THROW(EventTimer(), NoGpuError);
  EXPECT_THROW(CudaModule::load("not a cubin"), NoGpuError);
}

TEST(CudaDriverTest, EmptyObjectsNeedNoDriver) {
  // Default-constructed RAII holders own nothing, so creating, moving and destroying them must
  // not touch the driver (they live in structs built on machines without a GPU).
  DeviceBuffer a;
  DeviceBuffer b(std::move(a));
  a = std::move(b);
  EXPECT_EQ(a.ptr(), 0u);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(a.data(), nullptr);
  CudaModule m;
  CudaModule n(std::move(m));
  EXPECT_EQ(n.handle(), nullptr);
}

} // namespace
} // namespace tilejit
