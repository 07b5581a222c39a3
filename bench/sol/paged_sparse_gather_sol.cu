// Speed of light for paged_sparse on this GPU: how fast can the kept K/V rows of each
// WORKLOADS.md shape be read at all, with no attention math, no partials and no merge?
//
// paged_sparse's floor (kept K/V bytes / copy bandwidth) assumes the rows stream like a copy.
// They do not: each kept token is a random 256 B (D=128) or 512 B (D=256) row, found through
// kept_idx -> block_table. This program times, per shape, in one process:
//   empty   an empty kernel (what a single launch costs when timed this way)
//   stream  reading the same number of bytes contiguously
//   flat    gathering the kept rows from precomputed row numbers (one index load per row)
//   chain   gathering them through kept_idx -> block_table, as the kernel must
// each the fastest of a sweep of grid sizes and loads in flight per thread, timed as the bench
// times tilejit and the peers: L2 flushed (256 MB memset) before each call, CUDA events around
// the call alone, median of 30 after a warm-up. Every variant XORs the words it read into a
// checksum that the host compares with the expected one, so a variant that skipped a row fails.
//
//   nvcc -O3 -arch=sm_90 -std=c++17 -o gather_sol paged_sparse_gather_sol.cu
//   ./gather_sol [--quick] > sol.tsv
//   ./gather_sol --profile 256,16,32768,0.04   # one chain launch (grid 4 x SMs, 1 row in flight
//                                              # per thread) of one shape, for ncu
#include "sol_common.cuh"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

constexpr int B = 3, HKV = 8;

// Items are (pair, j) flattened: item / kept is the (b, kv head) pair, item % kept the kept
// entry. A group of LPR lanes reads one row, 16 bytes per lane; each thread has U rows in
// flight. Groups take items round-robin so a warp's kept_idx reads are contiguous.
enum class Mode { stream, flat, chain };

template <int LPR, int U, Mode M>
__global__ void gather(const uint4* __restrict__ k, const uint4* __restrict__ v,
                       const int* __restrict__ block_table, const int* __restrict__ kept_idx,
                       const int* __restrict__ rows, int kept, int max_pages, int ps, int items,
                       unsigned* checksum) {
  const int lane = threadIdx.x % LPR;
  const int group = (blockIdx.x * blockDim.x + threadIdx.x) / LPR;
  const int groups = gridDim.x * blockDim.x / LPR;
  uint32_t acc = 0;
  for (int base = group; base < items; base += groups * U) {
    int row[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      int it = base + u * groups;
      bool ok = it < items;
      if (M == Mode::stream) row[u] = ok ? it : -1;
      if (M == Mode::flat) row[u] = ok ? rows[it] : -1;
      if (M == Mode::chain) row[u] = ok ? kept_idx[it] : -1; // kept_idx is [pairs, kept]
    }
    if (M == Mode::chain) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (row[u] < 0) continue;
        int it = base + u * groups, pair = it / kept, b = pair / HKV, h = pair % HKV, pos = row[u];
        int page = block_table[b * max_pages + pos / ps];
        row[u] = (page * ps + pos % ps) * HKV + h;
      }
    }
    uint4 kw[U], vw[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (row[u] >= 0) {
        kw[u] = __ldg(k + int64_t(row[u]) * LPR + lane);
        vw[u] = __ldg(v + int64_t(row[u]) * LPR + lane);
      }
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (row[u] >= 0) acc ^= fold(kw[u]) ^ fold(vw[u]);
  }
  for (int o = 16; o > 0; o /= 2) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x % 32 == 0) atomicXor(checksum, acc);
}

struct Shape {
  int D, ps, ctx;
  double r;
};

struct Timing {
  double us = 1e30;
  std::string config;
  bool checksum_ok = true;
};

struct Device {
  uint4 *k = nullptr, *v = nullptr;
  int *block_table = nullptr, *kept_idx = nullptr, *rows = nullptr, *stream_rows = nullptr;
  unsigned* checksum = nullptr;
};

template <int LPR, int U, Mode M>
void try_variant(const Device& d, int kept, int max_pages, int ps, int items, unsigned expect,
                 int sms, Timing& best, const char* mode_name,
                 const std::vector<int>& blocks_per_sm) {
  for (int bps : blocks_per_sm) {
    int grid = sms * bps;
    auto launch = [&] {
      gather<LPR, U, M><<<grid, 256>>>(d.k, d.v, d.block_table, d.kept_idx, d.rows, kept, max_pages,
                                       ps, items, d.checksum);
    };
    CHECK(cudaMemset(d.checksum, 0, 4));
    launch();
    CHECK(cudaDeviceSynchronize());
    unsigned got = 0;
    CHECK(cudaMemcpy(&got, d.checksum, 4, cudaMemcpyDeviceToHost));
    // The XOR of an even number of launches is 0: check the first one alone.
    bool ok = M == Mode::stream || got == expect;
    double us = time_median_us(launch);
    if (!ok) best.checksum_ok = false;
    if (ok && us < best.us) {
      best.us = us;
      best.config =
          std::string(mode_name) + " grid=" + std::to_string(bps) + "xSM U=" + std::to_string(U);
    }
  }
}

template <int LPR, Mode M>
Timing sweep(const Device& d, int kept, int max_pages, int ps, int items, unsigned expect, int sms,
             const char* name, bool quick) {
  Timing best;
  std::vector<int> bps = quick ? std::vector<int>{2, 8} : std::vector<int>{1, 2, 4, 8, 16};
  try_variant<LPR, 1, M>(d, kept, max_pages, ps, items, expect, sms, best, name, bps);
  try_variant<LPR, 2, M>(d, kept, max_pages, ps, items, expect, sms, best, name, bps);
  try_variant<LPR, 4, M>(d, kept, max_pages, ps, items, expect, sms, best, name, bps);
  if (!quick) try_variant<LPR, 8, M>(d, kept, max_pages, ps, items, expect, sms, best, name, bps);
  return best;
}

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  bool profile = argc > 2 && std::strcmp(argv[1], "--profile") == 0;
  Shape profiled{};
  if (profile && std::sscanf(argv[2], "%d,%d,%d,%lf", &profiled.D, &profiled.ps, &profiled.ctx,
                             &profiled.r) != 4) {
    std::fprintf(stderr, "--profile D,ps,ctx,r: e.g. 256,16,32768,0.04\n");
    return 2;
  }
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  init_flush();
  const double copy_gbps = ::copy_gbps();
  double empty_us = time_median_us([&] { empty_kernel<<<sms, 128>>>(); });
  std::printf("# device\t%s\tSMs %d\tcopy %.0f GB/s (read+write)\tempty kernel %.2f us\n",
              prop.name, sms, copy_gbps, empty_us);
  std::printf(
      "shape\tkept\tfloor_us\tstream_us\tflat_us\tchain_us\tchain_pct_floor\tbest_chain\tchecks\n");

  std::vector<Shape> shapes;
  for (int ctx : {131072, 32768})
    for (int D : {128, 256})
      for (int ps : {16, 64})
        for (double r : {0.02, 0.04, 0.05}) shapes.push_back({D, ps, ctx, r});
  if (quick) shapes = {{128, 16, 131072, 0.05}, {256, 16, 131072, 0.02}, {256, 64, 32768, 0.04}};
  if (profile) shapes = {profiled};

  std::mt19937_64 rng(12345);
  for (const Shape& s : shapes) {
    const int kept = std::max(1, int(s.r * s.ctx + 0.5));
    const int lpr = s.D * 2 / 16;
    const int max_pages = (s.ctx + s.ps - 1) / s.ps;
    const int num_pages = B * max_pages + 3;
    const uint64_t row_words = uint64_t(lpr);
    const uint64_t cache_words = uint64_t(num_pages) * s.ps * HKV * row_words;
    Device d;
    CHECK(cudaMalloc(&d.k, cache_words * 16));
    CHECK(cudaMalloc(&d.v, cache_words * 16));
    fill_words<<<sms * 8, 256>>>(d.k, cache_words, 0x1111);
    fill_words<<<sms * 8, 256>>>(d.v, cache_words, 0x2222);
    std::vector<int> perm(num_pages);
    for (int i = 0; i < num_pages; ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int> bt(B * max_pages);
    for (int i = 0; i < B * max_pages; ++i) bt[i] = perm[i];
    const int pairs = B * HKV, items = pairs * kept;
    std::vector<int> kidx(items), rows(items);
    uint32_t expect = 0;
    for (int pair = 0; pair < pairs; ++pair) {
      std::vector<char> taken(s.ctx, 0);
      std::vector<int> pos;
      std::uniform_int_distribution<int> pick(0, s.ctx - 1);
      while (int(pos.size()) < kept) {
        int p = pick(rng);
        if (!taken[p]) taken[p] = 1, pos.push_back(p);
      }
      std::sort(pos.begin(), pos.end());
      int b = pair / HKV, h = pair % HKV;
      for (int j = 0; j < kept; ++j) {
        int p = pos[j], page = bt[b * max_pages + p / s.ps];
        int row = (page * s.ps + p % s.ps) * HKV + h;
        kidx[pair * kept + j] = p;
        rows[pair * kept + j] = row;
        for (int l = 0; l < lpr; ++l) {
          uint64_t w = uint64_t(row) * row_words + l;
          for (uint64_t salt : {0x1111ull, 0x2222ull}) {
            uint32_t hh = word_hash(w ^ salt);
            expect ^= hh ^ (hh * 3u) ^ (hh * 5u) ^ (hh * 7u);
          }
        }
      }
    }
    CHECK(cudaMalloc(&d.block_table, bt.size() * 4));
    CHECK(cudaMalloc(&d.kept_idx, kidx.size() * 4));
    CHECK(cudaMalloc(&d.rows, rows.size() * 4));
    CHECK(cudaMalloc(&d.checksum, 4));
    CHECK(cudaMemcpy(d.block_table, bt.data(), bt.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d.kept_idx, kidx.data(), kidx.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d.rows, rows.data(), rows.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaDeviceSynchronize());

    if (profile) {
      CHECK(cudaMemset(d.checksum, 0, 4));
      if (lpr == 16)
        gather<16, 1, Mode::chain><<<sms * 4, 256>>>(d.k, d.v, d.block_table, d.kept_idx, d.rows,
                                                     kept, max_pages, s.ps, items, d.checksum);
      else
        gather<32, 1, Mode::chain><<<sms * 4, 256>>>(d.k, d.v, d.block_table, d.kept_idx, d.rows,
                                                     kept, max_pages, s.ps, items, d.checksum);
      CHECK(cudaDeviceSynchronize());
      unsigned got = 0;
      CHECK(cudaMemcpy(&got, d.checksum, 4, cudaMemcpyDeviceToHost));
      std::printf("profiled one chain launch: checksum %s\n", got == expect ? "ok" : "MISMATCH");
      return got == expect ? 0 : 1;
    }
    Timing st, fl, ch;
    if (lpr == 16) {
      st = sweep<16, Mode::stream>(d, kept, max_pages, s.ps, items, expect, sms, "stream", quick);
      fl = sweep<16, Mode::flat>(d, kept, max_pages, s.ps, items, expect, sms, "flat", quick);
      ch = sweep<16, Mode::chain>(d, kept, max_pages, s.ps, items, expect, sms, "chain", quick);
    } else {
      st = sweep<32, Mode::stream>(d, kept, max_pages, s.ps, items, expect, sms, "stream", quick);
      fl = sweep<32, Mode::flat>(d, kept, max_pages, s.ps, items, expect, sms, "flat", quick);
      ch = sweep<32, Mode::chain>(d, kept, max_pages, s.ps, items, expect, sms, "chain", quick);
    }
    const double bytes = double(items) * 2 * s.D * 2;
    const double floor_us = bytes / copy_gbps / 1e3;
    char name[96];
    std::snprintf(name, sizeof name, "D=%d ps=%d ctx=%d r=%.2f", s.D, s.ps, s.ctx, s.r);
    std::printf("%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f%%\t%s\t%s\n", name, kept, floor_us, st.us,
                fl.us, ch.us, 100 * floor_us / ch.us, ch.config.c_str(),
                fl.checksum_ok && ch.checksum_ok ? "ok" : "CHECKSUM MISMATCH");
    std::fflush(stdout);
    CHECK(cudaFree(d.k));
    CHECK(cudaFree(d.v));
    CHECK(cudaFree(d.block_table));
    CHECK(cudaFree(d.kept_idx));
    CHECK(cudaFree(d.rows));
    CHECK(cudaFree(d.checksum));
  }
  return 0;
}
