// The HIP runtime's module API (libamdhip64, loaded with dlopen like libcuda): what loading a
// code object and launching its kernel on an AMD GPU takes. There is no AMD GPU where tilejit is
// developed: this path is exercised up to "no AMD GPU" (the device count), and said so in the
// README.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

namespace tilejit {

class HipRuntime {
public:
  /// The runtime with at least one AMD GPU; throws NoGpuError naming why not (no library, no
  /// device) otherwise.
  static const HipRuntime& get();

  HipRuntime(const HipRuntime&) = delete;
  HipRuntime& operator=(const HipRuntime&) = delete;
  ~HipRuntime();

  /// Loads `code_object` on `device` and finds `entry`: an opaque (module, function) pair.
  struct Function {
    void* module = nullptr;
    void* function = nullptr;
  };
  Function load(const std::string& code_object, const std::string& entry, int device) const;

  /// What the tuning key says of an AMD GPU (hipGetDeviceProperties, hipRuntimeGetVersion,
  /// hipDriverGetVersion).
  struct DeviceIdentity {
    std::string name;      ///< "AMD Instinct MI250X"
    std::string gfx;       ///< the ISA with its features, "gfx90a:sramecc+:xnack-"
    int compute_units = 0; ///< multiProcessorCount
    int runtime_version = 0, driver_version = 0;
  };
  DeviceIdentity identity(int device) const;

  /// HIP events (hipEventCreate ... hipEventElapsedTime), for HipEventTimer.
  void* event_create(int device) const;
  void event_destroy(void* event) const;
  void event_record(void* event, void* stream) const;
  /// Waits for `stop`, then the milliseconds between the two.
  float event_elapsed_ms(void* start, void* stop) const;
  /// Device memory and the stream calls the timer's L2 flush takes (hipMalloc, hipFree,
  /// hipMemsetD32Async, hipStreamSynchronize).
  void* allocate(size_t bytes, int device) const;
  void release(void* p) const;
  void memset_d32_async(void* p, unsigned value, size_t count, void* stream) const;
  void stream_synchronize(void* stream) const;
  /// Synchronous copies and fills of device memory on `device` (hipMemcpy, hipMemset then a
  /// device-wide wait), for the tuner's and the workloads' buffers (DeviceBuffer on HIP).
  void copy_to_device(void* device_ptr, const void* host, size_t bytes, int device) const;
  void copy_to_host(void* host, const void* device_ptr, size_t bytes, int device) const;
  void fill_bytes(void* device_ptr, uint8_t value, size_t bytes, int device) const;
  void copy_on_device(void* dst, const void* src, size_t bytes, int device) const;
  /// Waits for all work on `device` (hipDeviceSynchronize).
  void device_synchronize(int device) const;
  /// The device's shared memory (LDS) per block in bytes: the tuner's limit on AMD.
  int shared_memory_per_block(int device) const;
  /// AMD GPUs the HIP runtime found (at least one: get() throws otherwise).
  int device_count() const { return device_count_; }
  void unload(const Function& f) const;
  void launch(const Function& f, const std::array<int64_t, 3>& grid, int threads,
              int64_t smem_bytes, void* stream, void** args, const std::string& name) const;

private:
  struct Api;
  friend struct HipRuntimeLoader;
  HipRuntime() = default;
  void check(int result, const std::string& what) const;
  std::unique_ptr<Api> api_;
  int device_count_ = 0;
};

} // namespace tilejit
