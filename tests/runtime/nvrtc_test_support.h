// Shared by the runtime tests that compile with NVRTC: the rule for when NVRTC may be missing,
// and small kernels whose resource usage is known.
#pragma once

#include "runtime/nvrtc.h"

#include <cstdlib>
#include <gtest/gtest.h>
#include <string>

/// NVRTC is part of the CI image, so its absence is a failure unless the environment opts out
/// with TILEJIT_SKIP_NVRTC_TESTS=1 (a machine with no CUDA toolkit at all).
#define TJ_REQUIRE_NVRTC()                                                                         \
  do {                                                                                             \
    if (!::tilejit::Nvrtc::available()) {                                                          \
      const char* skip_ = std::getenv("TILEJIT_SKIP_NVRTC_TESTS");                                 \
      if (skip_ && std::string(skip_) == "1")                                                      \
        GTEST_SKIP() << "NVRTC unavailable: " << ::tilejit::Nvrtc::unavailable_reason();           \
      FAIL() << "NVRTC is required for this test: " << ::tilejit::Nvrtc::unavailable_reason()      \
             << " (set TILEJIT_SKIP_NVRTC_TESTS=1 on machines without the CUDA toolkit)";          \
    }                                                                                              \
  } while (0)

namespace tilejit::test_kernels {

/// Four kernels with distinct resource profiles:
///  - spill: __launch_bounds__(1024, 2) caps it at 32 registers, so 48 live floats spill;
///  - smem: 33*32 floats + 5 doubles of static shared memory (4264 bytes before padding);
///  - calls_helper: a non-inlined callee with its own stack frame (its report must not be
///    mistaken for the kernel's);
///  - dyn_smem: dynamic shared memory only, which is not part of the static size.
inline const char* kResourceKernels = R"(
extern "C" __global__ void __launch_bounds__(1024, 2) spill(float* out, const float* in) {
  float a[48];
  #pragma unroll
  for (int i = 0; i < 48; ++i) a[i] = in[threadIdx.x + i * 1024];
  #pragma unroll
  for (int r = 0; r < 4; ++r) {
    #pragma unroll
    for (int i = 0; i < 48; ++i) a[i] = a[i] * a[(i + 7) % 48] + a[(i + 13) % 48];
  }
  float s = 0;
  #pragma unroll
  for (int i = 0; i < 48; ++i) s += a[i] * (float)i;
  out[threadIdx.x] = s;
}

extern "C" __global__ void smem(float* out, const float* in) {
  __shared__ float tile[33 * 32];
  __shared__ double extra[5];
  tile[threadIdx.x] = in[threadIdx.x];
  if (threadIdx.x < 5) extra[threadIdx.x] = 1.0;
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x * 33) % 1056] + extra[threadIdx.x % 5];
}

__device__ __noinline__ float helper(const float* p, int n) {
  float a[40];
  for (int i = 0; i < 40; ++i) a[i] = p[i * n];
  float s = 0;
  for (int i = 0; i < n; ++i) s += a[(i * 7) % 40];
  return s;
}

extern "C" __global__ void calls_helper(float* out, int n) { out[threadIdx.x] = helper(out, n); }

extern "C" __global__ void dyn_smem(float* out, int n) {
  extern __shared__ float dyn[];
  dyn[threadIdx.x] = n;
  __syncthreads();
  out[threadIdx.x] = dyn[(threadIdx.x + 1) % blockDim.x];
}
)";

} // namespace tilejit::test_kernels
