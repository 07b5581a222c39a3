// End-to-end on a real GPU (label gpu): device query, NVRTC compile for the device's arch,
// module cache round trip, launch, and every output element checked against a CPU reference on
// fresh random inputs, with outputs poisoned (NaN) first.
#include "runtime/cuda_driver.h"
#include "runtime/cuda_module.h"
#include "runtime/device_buffer.h"
#include "runtime/device_info.h"
#include "runtime/gpu_timer.h"
#include "runtime/module_cache.h"
#include "runtime/resource_usage.h"
#include "support/error.h"
#include "support/text.h"

#include "nvrtc_test_support.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <gtest/gtest.h>
#include <random>
#include <regex>
#include <thread>
#include <unistd.h>

namespace tilejit {
namespace {

namespace fs = std::filesystem;

/// Every test here needs the driver and a device; their absence is a failure, not a skip,
/// because this binary only runs where a GPU is expected (ctest -L gpu).
#define TJ_REQUIRE_GPU()                                                                           \
  do {                                                                                             \
    ASSERT_TRUE(CudaDriver::available())                                                           \
        << "gpu tests need an NVIDIA GPU: " << CudaDriver::unavailable_reason();                   \
    TJ_REQUIRE_NVRTC();                                                                            \
  } while (0)

unsigned fresh_seed() {
  unsigned seed = std::random_device{}();
  std::cout << "[ seed     ] " << seed << "\n";
  return seed;
}

/// Compiles `source` for the device, going through a ModuleCache the way the runtime does: the
/// first cache misses and stores, a second instance on the same directory (another process)
/// hits on disk, and its bytes are what gets loaded.
std::string compile_through_cache(const std::string& source, const std::string& arch) {
  fs::path dir = fs::temp_directory_path() / ("tilejit-gpu-test-" + std::to_string(getpid()));
  fs::remove_all(dir);
  const Nvrtc& nvrtc = Nvrtc::get();
  NvrtcRequest req;
  req.source = source;
  req.program_name = "gpu_test.cu";
  req.arch = arch;
  std::string key =
      ModuleCache::make_key(req.source, req.headers, req.options, arch, nvrtc.version());
  std::vector<std::string> logs;
  auto log = [&](std::string line) { logs.push_back(line); };
  {
    ModuleCache first(dir.string(), log);
    EXPECT_TRUE(first.disk_enabled());
    EXPECT_FALSE(first.get(key).has_value());
    NvrtcOutput out = nvrtc.compile(req);
    EXPECT_TRUE(out.ok) << out.log;
    if (!out.ok) return "";
    first.put(key, out.cubin);
  }
  ModuleCache second(dir.string(), log);
  std::optional<std::string> cubin = second.get(key);
  EXPECT_TRUE(cubin.has_value());
  EXPECT_EQ(second.stats().hits_disk, 1);
  EXPECT_TRUE(logs.empty()) << join(logs, "\n");
  fs::remove_all(dir);
  return cubin.value_or("");
}

void launch(cu::CUfunction f, unsigned grid, unsigned block, void** args) {
  CudaDriver& d = CudaDriver::get();
  // kernelParams is an array of pointers, one per kernel parameter, each pointing at a host
  // copy of that argument with the parameter's exact size and layout.
  d.check(d.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, nullptr, args, nullptr),
          "cuLaunchKernel");
  d.check(d.cuCtxSynchronize(), "cuCtxSynchronize after launch");
}

TEST(GpuDriverTest, QueryDevice) {
  TJ_REQUIRE_GPU();
  DeviceInfo info = query_device(0);
  std::cout << "[ device   ] " << info.name << " cc " << info.cc_major << "." << info.cc_minor
            << " (" << info.arch() << "), " << info.sm_count << " SMs, " << (info.total_mem >> 20)
            << " MiB, smem/block " << info.smem_per_block << " (opt-in "
            << info.smem_per_block_optin << "), smem/SM " << info.smem_per_sm << ", L2 "
            << info.l2_bytes << ", driver " << info.driver_version << "\n";
  EXPECT_FALSE(info.name.empty());
  EXPECT_GE(info.cc_major, 7);
  EXPECT_GT(info.sm_count, 0);
  EXPECT_GT(info.total_mem, int64_t(1) << 30);
  EXPECT_EQ(info.warp_size, 32);
  EXPECT_GE(info.smem_per_block_optin, info.smem_per_block);
  EXPECT_GE(info.smem_per_sm, info.smem_per_block_optin);
  EXPECT_GT(info.regs_per_sm, 0);
  EXPECT_GT(info.regs_per_block, 0);
  EXPECT_GT(info.max_threads_per_sm, 0);
  EXPECT_GT(info.l2_bytes, 0);
  EXPECT_GE(info.driver_version, 12000);
  EXPECT_TRUE(std::regex_match(info.arch(), std::regex(R"(sm_\d+a?)"))) << info.arch();
  if (info.cc_major == 9 && info.cc_minor == 0) {
    EXPECT_EQ(info.arch(), "sm_90a");
  }
  EXPECT_THROW(query_device(CudaDriver::get().device_count()), Error);
}

const char* kSaxpy = R"(
extern "C" __global__ void saxpy(const float* __restrict__ x, const float* __restrict__ y,
                                 float* __restrict__ out, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __fmaf_rn(a, x[i], y[i]);
}
)";

TEST(GpuDriverTest, SaxpyMatchesCpuReference) {
  TJ_REQUIRE_GPU();
  DeviceInfo info = query_device(0);
  std::string cubin = compile_through_cache(kSaxpy, info.arch());
  ASSERT_FALSE(cubin.empty());
  CudaModule module = CudaModule::load(cubin);
  cu::CUfunction f = module.function("saxpy");

  const int n = 1000003; // odd: the last block is partial
  std::mt19937 rng(fresh_seed());
  std::uniform_real_distribution<float> dist(-10.f, 10.f);
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = dist(rng), y[i] = dist(rng);
  float a = dist(rng);

  DeviceBuffer dx(n * sizeof(float)), dy(n * sizeof(float)), dout(n * sizeof(float));
  dx.upload(x.data(), n * sizeof(float));
  dy.upload(y.data(), n * sizeof(float));
  dout.fill_byte(0xff); // all-ones floats are NaN: any element the kernel misses shows

  cu::CUdeviceptr px = dx.ptr(), py = dy.ptr(), pout = dout.ptr();
  int count = n;
  void* args[] = {&px, &py, &pout, &a, &count};
  const unsigned block = 256;
  launch(f, (n + block - 1) / block, block, args);

  std::vector<float> out(n);
  dout.download(out.data(), n * sizeof(float));
  int mismatches = 0;
  for (int i = 0; i < n; ++i) {
    float ref = std::fmaf(a, x[i], y[i]); // the kernel's __fmaf_rn, correctly rounded
    if (std::memcmp(&ref, &out[i], sizeof ref) != 0 && mismatches++ < 10)
      ADD_FAILURE() << "out[" << i << "] = " << out[i] << ", expected " << ref;
  }
  EXPECT_EQ(mismatches, 0) << "of " << n << " elements";
}

// f16 through a self-declared struct and PTX conversions (no cuda_fp16.h in generated code).
const char* kHalfScaleAdd = R"(
struct half_t { unsigned short bits; };
__device__ __forceinline__ float to_float(half_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
  return f;
}
__device__ __forceinline__ half_t to_half(float f) {
  half_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
  return h;
}
extern "C" __global__ void scale_add_f16(const half_t* x, const half_t* y, half_t* out,
                                         float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = to_half(__fadd_rn(__fmul_rn(to_float(x[i]), scale), to_float(y[i])));
}
)";

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  int exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    float v = std::ldexp(float(mant), -24);
    return sign ? -v : v;
  }
  uint32_t bits = exp == 31 ? sign | 0x7f800000u | (mant << 13)
                            : sign | (uint32_t(exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// IEEE round-to-nearest-even float -> half, subnormals and overflow included.
uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return sign | 0x7e00;  // NaN
  if (absx >= 0x477ff000u) return sign | 0x7c00; // >= 65520 rounds to infinity
  int exp = int(absx >> 23) - 127 + 15;
  uint32_t mant = absx & 0x7fffff;
  if (exp >= 1) {
    uint32_t h = (uint32_t(exp) << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
    return uint16_t(sign | h);
  }
  int shift = 14 - exp; // subnormal half: units of 2^-24
  if (shift > 24) return sign;
  mant |= 0x800000;
  uint32_t h = mant >> shift;
  uint32_t rest = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (h & 1))) ++h;
  return uint16_t(sign | h);
}

TEST(GpuDriverTest, HalfPrecisionMatchesCpuReference) {
  TJ_REQUIRE_GPU();
  // The reference conversions agree with known encodings before they judge the GPU.
  ASSERT_EQ(float_to_half(1.0f), 0x3c00);
  ASSERT_EQ(float_to_half(-2.5f), 0xc100);
  ASSERT_EQ(float_to_half(65504.f), 0x7bff);
  ASSERT_EQ(float_to_half(65520.f), 0x7c00);
  ASSERT_EQ(float_to_half(std::ldexp(1.f, -24)), 0x0001);
  ASSERT_EQ(float_to_half(std::ldexp(1.f, -25)), 0x0000); // tie to even
  ASSERT_EQ(half_to_float(0x3555), 0.333251953125f);

  DeviceInfo info = query_device(0);
  std::string cubin = compile_through_cache(kHalfScaleAdd, info.arch());
  ASSERT_FALSE(cubin.empty());
  CudaModule module = CudaModule::load(cubin);
  cu::CUfunction f = module.function("scale_add_f16");

  const int n = 1000003;
  std::mt19937 rng(fresh_seed());
  std::uniform_real_distribution<float> dist(-4.f, 4.f);
  std::vector<uint16_t> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = float_to_half(dist(rng)), y[i] = float_to_half(dist(rng));
  x[0] = float_to_half(std::ldexp(1.f, -20)); // a few small values reach half subnormals
  y[0] = 0;
  float scale = std::uniform_real_distribution<float>(0.5f, 2.f)(rng);

  DeviceBuffer dx(n * 2), dy(n * 2), dout(n * 2);
  dx.upload(x.data(), n * 2);
  dy.upload(y.data(), n * 2);
  dout.fill_byte(0xff); // 0xffff is a half NaN

  cu::CUdeviceptr px = dx.ptr(), py = dy.ptr(), pout = dout.ptr();
  int count = n;
  void* args[] = {&px, &py, &pout, &scale, &count};
  launch(f, (n + 127) / 128, 128, args);

  std::vector<uint16_t> out(n);
  dout.download(out.data(), n * 2);
  int mismatches = 0;
  for (int i = 0; i < n; ++i) {
    float product = half_to_float(x[i]) * scale; // ISO C++ mode: no contraction into an FMA
    uint16_t ref = float_to_half(product + half_to_float(y[i]));
    if (ref != out[i] && mismatches++ < 10)
      ADD_FAILURE() << "out[" << i << "] = 0x" << std::hex << out[i] << ", expected 0x" << ref
                    << std::dec;
  }
  EXPECT_EQ(mismatches, 0) << "of " << n << " elements";
}

TEST(GpuDriverTest, CubinResourcesMatchTheDriver) {
  TJ_REQUIRE_GPU();
  DeviceInfo info = query_device(0);
  NvrtcRequest req;
  req.source = test_kernels::kResourceKernels;
  req.arch = info.arch();
  NvrtcOutput out = Nvrtc::get().compile(req);
  ASSERT_TRUE(out.ok) << out.log;
  CudaModule module = CudaModule::load(out.cubin);
  CudaDriver& d = CudaDriver::get();
  for (const char* kernel : {"spill", "smem", "calls_helper", "dyn_smem"}) {
    SCOPED_TRACE(kernel);
    std::optional<ResourceUsage> from_cubin = read_cubin_resources(out.cubin, kernel);
    std::optional<ResourceUsage> from_log = parse_ptxas_report(out.log, kernel);
    ASSERT_TRUE(from_cubin.has_value());
    ASSERT_TRUE(from_log.has_value()) << out.log;
    cu::CUfunction f = module.function(kernel);
    int regs = -1, shared = -1, local = -1;
    d.check(d.cuFuncGetAttribute(&regs, cu::CU_FUNC_ATTRIBUTE_NUM_REGS, f), "NUM_REGS");
    d.check(d.cuFuncGetAttribute(&shared, cu::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f), "SHARED");
    d.check(d.cuFuncGetAttribute(&local, cu::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f), "LOCAL");
    EXPECT_GT(from_cubin->registers, 0);
    EXPECT_EQ(from_cubin->registers, regs);
    EXPECT_EQ(from_cubin->shared_bytes, shared);
    EXPECT_EQ(from_cubin->stack_bytes, local);
    EXPECT_EQ(from_log->registers, regs);
    EXPECT_EQ(from_log->shared_bytes, shared);
    int blocks = 0;
    d.check(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 256, 1024),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    EXPECT_GT(blocks, 0);
  }
}

TEST(GpuDriverTest, DeviceBufferRoundTrip) {
  TJ_REQUIRE_GPU();
  std::vector<uint8_t> pattern(1000);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = uint8_t(i * 7);
  DeviceBuffer buf(1000);
  EXPECT_EQ(buf.size(), 1000u);
  EXPECT_NE(buf.ptr(), 0u);
  buf.upload(pattern.data(), pattern.size());
  std::vector<uint8_t> back(1000);
  buf.download(back.data(), back.size());
  EXPECT_EQ(back, pattern);

  buf.fill_byte(0xab);
  buf.upload(pattern.data(), 10, 500);
  buf.download(back.data(), back.size());
  for (size_t i = 0; i < back.size(); ++i)
    ASSERT_EQ(back[i], i >= 500 && i < 510 ? pattern[i - 500] : 0xab) << i;

  EXPECT_THROW(buf.upload(pattern.data(), 10, 995), Error);
  EXPECT_THROW(buf.download(back.data(), 1001), Error);

  cu::CUdeviceptr p = buf.ptr();
  DeviceBuffer moved = std::move(buf);
  EXPECT_EQ(moved.ptr(), p);
  EXPECT_EQ(buf.ptr(), 0u);
  DeviceBuffer empty(0);
  EXPECT_EQ(empty.ptr(), 0u);
}

TEST(GpuDriverTest, EventTimerMeasuresGpuWork) {
  TJ_REQUIRE_GPU();
  EventTimer timer;
  EXPECT_THROW(timer.elapsed_ms(), Error);
  DeviceBuffer buf(size_t(256) << 20);
  timer.start();
  for (int i = 0; i < 4; ++i) {
    CudaDriver& d = CudaDriver::get();
    d.check(d.cuMemsetD32(buf.ptr(), 0x3f800000u, buf.size() / 4), "cuMemsetD32");
  }
  timer.stop();
  float ms = timer.elapsed_ms();
  std::cout << "[ timing   ] 4 x 256 MiB memset: " << ms << " ms\n";
  EXPECT_GT(ms, 0.f);
  EXPECT_LT(ms, 10000.f);
}

TEST(GpuDriverTest, ModuleErrorsAreNamed) {
  TJ_REQUIRE_GPU();
  try {
    CudaModule::load("this is not a cubin");
    FAIL() << "loading garbage succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA error"), std::string::npos) << e.what();
  }
  NvrtcRequest req;
  req.source = kSaxpy;
  req.arch = query_device(0).arch();
  NvrtcOutput out = Nvrtc::get().compile(req);
  ASSERT_TRUE(out.ok) << out.log;
  CudaModule module = CudaModule::load(out.cubin);
  try {
    module.function("not_a_kernel");
    FAIL() << "found a kernel that does not exist";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'not_a_kernel'"), std::string::npos) << e.what();
  }
  // The PTX loads too (the driver JIT-compiles it).
  CudaModule from_ptx = CudaModule::load(out.ptx);
  EXPECT_NE(from_ptx.function("saxpy"), nullptr);
}

TEST(GpuDriverTest, PrimaryContextOnEveryThread) {
  TJ_REQUIRE_GPU();
  cu::CUcontext main_ctx = CudaDriver::get().ensure_context(0);
  cu::CUcontext other_ctx = nullptr;
  std::thread t([&] {
    other_ctx = CudaDriver::get().ensure_context(0);
    DeviceBuffer buf(64); // usable from a fresh thread
    buf.fill_byte(1);
  });
  t.join();
  EXPECT_EQ(main_ctx, other_ctx);
}

} // namespace
} // namespace tilejit
