// Speed of light for dequant_gemm at decode (M = 1..16) on this GPU: how fast can a linear's
// quantized weights be read at all, with no dequantization, no math and no reduction?
//
// At M = 1 a weight-only linear is a stream of its weight bytes. Its floor (bytes / copy
// bandwidth) assumes the stream runs at full speed from the first byte; a single call of a few
// MB does not: the launch, the first loads' latency and the tail are a large share of it. This
// program times, per WORKLOADS.md shape and format, in one process:
//   empty   an empty kernel (what a single launch costs when timed this way)
//   stream  reading the shape's bytes (packed weights + scales + zeros) contiguously, 16 bytes
//           per load, the fastest of a sweep of grid sizes and loads in flight per thread
// timed as the bench times tilejit and the peers: L2 flushed (256 MB memset) before each call,
// CUDA events around the call alone, median of 30 after a warm-up. Each variant XORs the words
// it read into a checksum the host compares with the expected one (a variant that skipped a
// word fails). "3x fp16" at M = 1 is then possible only where stream_us <= fp16_us / 3.
//
//   nvcc -O3 -arch=sm_90 -std=c++17 -o weight_sol weight_stream_sol.cu   (tools/build_sol.sh)
//   ./weight_sol > weight_sol.tsv
#include "sol_common.cuh"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

// Thread t of G reads words t, t + G, ..., U of them in flight at a time.
template <int U> __global__ void stream(const uint4* __restrict__ p, int64_t words, unsigned* sum) {
  const int64_t threads = int64_t(gridDim.x) * blockDim.x;
  uint32_t acc = 0;
  for (int64_t base = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; base < words;
       base += threads * U) {
    uint4 w[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      int64_t i = base + u * threads;
      w[u] = i < words ? __ldg(p + i) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= fold(w[u]);
  }
  for (int o = 16; o > 0; o /= 2) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x % 32 == 0) atomicXor(sum, acc);
}

struct Best {
  double us = 1e30;
  std::string config;
  bool checksum_ok = true;
};

template <int U>
void try_u(const uint4* p, int64_t words, unsigned* sum, uint32_t expect, int sms, Best& best) {
  for (int bps : {1, 2, 4, 8, 16}) {
    for (int threads : {128, 256, 512}) {
      const int grid = sms * bps;
      auto launch = [&] { stream<U><<<grid, threads>>>(p, words, sum); };
      CHECK(cudaMemset(sum, 0, 4));
      launch();
      CHECK(cudaDeviceSynchronize());
      unsigned got = 0;
      CHECK(cudaMemcpy(&got, sum, 4, cudaMemcpyDeviceToHost));
      if (got != expect) {
        best.checksum_ok = false;
        continue;
      }
      const double us = time_median_us(launch);
      if (us < best.us) {
        best.us = us;
        best.config = "grid=" + std::to_string(bps) + "xSM threads=" + std::to_string(threads) +
                      " U=" + std::to_string(U);
      }
    }
  }
}

struct Shape {
  const char* layer;
  int64_t n, k;
};

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  init_flush();
  const double copy_gbps = ::copy_gbps();
  const double empty_us = time_median_us([&] { empty_kernel<<<sms, 128>>>(); });
  std::printf("# device\t%s\tSMs %d\tcopy %.0f GB/s (read+write)\tempty kernel %.2f us\n",
              prop.name, sms, copy_gbps, empty_us);
  std::printf("format\tlayer\tbytes\tfloor_us\tstream_us\tstream_pct_floor\tbest\tchecks\n");
  const std::vector<Shape> shapes = {{"qkv", 6144, 2560},
                                     {"o", 2560, 4096},
                                     {"gate_up", 19456, 2560},
                                     {"down", 2560, 9728},
                                     {"lm_head", 151936, 2560}};
  for (int bits : {4, 8}) {
    for (const Shape& s : shapes) {
      // int4 GPTQ, groups of 128: packed nibbles, f16 scales, packed zeros. int8: the int8
      // weights and one f16 scale per row.
      const double bytes = bits == 4 ? s.n * s.k / 2.0 + (s.k / 128) * s.n * 2.0 +
                                           (s.k / 128) * ((s.n + 7) / 8) * 4.0
                                     : double(s.n) * s.k + s.n * 2.0;
      const int64_t words = int64_t(bytes + 15) / 16;
      uint4* p = nullptr;
      unsigned* sum = nullptr;
      CHECK(cudaMalloc(&p, words * 16));
      CHECK(cudaMalloc(&sum, 4));
      fill_words<<<sms * 8, 256>>>(p, words, 0);
      uint32_t expect = 0;
      for (int64_t i = 0; i < words; ++i) expect ^= expected_fold(i, 0);
      Best best;
      try_u<1>(p, words, sum, expect, sms, best);
      try_u<2>(p, words, sum, expect, sms, best);
      try_u<4>(p, words, sum, expect, sms, best);
      try_u<8>(p, words, sum, expect, sms, best);
      const double floor_us = bytes / copy_gbps / 1e3;
      std::printf("int%d\t%s\t%.0f\t%.2f\t%.2f\t%.0f%%\t%s\t%s\n", bits, s.layer, bytes, floor_us,
                  best.us, 100 * floor_us / best.us, best.config.c_str(),
                  best.checksum_ok ? "ok" : "CHECKSUM MISMATCH");
      std::fflush(stdout);
      CHECK(cudaFree(p));
      CHECK(cudaFree(sum));
    }
  }
  return 0;
}
