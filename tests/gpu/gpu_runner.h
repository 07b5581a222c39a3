// Runs .tile kernels on the GPU for tests: uploads host buffers, launches through the public
// Runtime with the configuration forced, and copies results back.
#pragma once

#include "kernel_runner.h"

#include <tilejit/tilejit.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

namespace tilejit {
class DeviceBuffer;
}

namespace tilejit::test {

class GpuRunner {
public:
  explicit GpuRunner(RuntimeOptions options = {});
  ~GpuRunner();
  /// A runner bound to this object (valid while it lives).
  KernelRunner runner();
  /// Drops device copies of constant inputs (call after changing such a buffer).
  void forget_inputs();
  Runtime& runtime() { return *runtime_; }

private:
  std::unique_ptr<Runtime> runtime_;
  std::map<std::string, KernelRef> kernels_;
  std::map<const void*, std::unique_ptr<DeviceBuffer>> constant_inputs_;
};

/// Whether this machine can run GPU tests; when false, the reason is printed by GTEST_SKIP.
bool gpu_available(std::string* why);

/// Skips the test (saying why) on a machine without a usable GPU.
#define REQUIRE_GPU()                                                                              \
  do {                                                                                             \
    std::string why_no_gpu_;                                                                       \
    if (!::tilejit::test::gpu_available(&why_no_gpu_)) GTEST_SKIP() << "no GPU: " << why_no_gpu_;  \
  } while (0)

/// A directory removed with its contents at the end of the test.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    std::string pattern =
        std::filesystem::temp_directory_path().string() + "/tilejit-gpu-test-XXXXXX";
    path = ::mkdtemp(pattern.data());
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

} // namespace tilejit::test
