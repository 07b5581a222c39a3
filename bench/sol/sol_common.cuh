// What bench/sol's speed-of-light programs share: error checks, memory whose content the host
// can recompute (a hash of each 16-byte word's index), and timing as the bench times tilejit
// and the peers (L2 flushed by a 256 MB memset before every call, CUDA events around the call
// alone, the median of `reps` after a warm-up).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));     \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

/// The content of word i: the host computes the expected checksum without a copy of the data.
__host__ __device__ inline uint32_t word_hash(uint64_t i) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return static_cast<uint32_t>(x);
}

/// p[i] = (h, 3h, 5h, 7h) with h = word_hash(i ^ salt).
__global__ void fill_words(uint4* p, uint64_t words, uint64_t salt) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < words;
       i += uint64_t(gridDim.x) * blockDim.x) {
    uint32_t h = word_hash(i ^ salt);
    p[i] = make_uint4(h, h * 3u, h * 5u, h * 7u);
  }
}

/// The XOR of a word's four lanes, as the readers fold what they read.
__host__ __device__ inline uint32_t fold(uint4 w) {
  return w.x ^ w.y ^ w.z ^ w.w;
}
/// fold() of the word fill_words writes at index i.
inline uint32_t expected_fold(uint64_t i, uint64_t salt) {
  uint32_t h = word_hash(i ^ salt);
  return h ^ (h * 3u) ^ (h * 5u) ^ (h * 7u);
}

__global__ void empty_kernel() {}

inline void*& flush_buffer() {
  static void* p = nullptr;
  return p;
}
constexpr size_t FLUSH_BYTES = 256u << 20;

/// Allocates the flush buffer (once, before any timing).
inline void init_flush() {
  if (!flush_buffer()) CHECK(cudaMalloc(&flush_buffer(), FLUSH_BYTES));
}

/// The median time of `launch` in microseconds, the L2 flushed before each call.
template <class Launch> double time_median_us(Launch launch, int reps = 30) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 10; ++i) launch();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    CHECK(cudaMemsetAsync(flush_buffer(), i & 0xff, FLUSH_BYTES));
    CHECK(cudaEventRecord(a));
    launch();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1e3);
  }
  CHECK(cudaGetLastError());
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// The floor's bandwidth, measured as the bench measures it: a 1 GiB device-to-device copy,
/// in GB/s (read + write).
inline double copy_gbps() {
  const size_t bytes = 1u << 30;
  void *src, *dst;
  CHECK(cudaMalloc(&src, bytes));
  CHECK(cudaMalloc(&dst, bytes));
  const double us = time_median_us(
      [&] { CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice)); }, 10);
  CHECK(cudaFree(src));
  CHECK(cudaFree(dst));
  return 2.0 * bytes / us / 1e3;
}
