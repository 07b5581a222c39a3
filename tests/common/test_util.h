// Helpers shared by the reference-interpreter tests: fresh random seeds (printed on failure,
// overridable with TILEJIT_TEST_SEED to reproduce a run) and error norms.
#pragma once

#include "compiler/ref/run_tile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

namespace tilejit::test {

using ref::HostBuffer;

/// A seed from std::random_device, or from $TILEJIT_TEST_SEED when set: one number for every
/// seed of the process, or a comma-separated list, taken in order (the last repeats), which
/// replays a run whose tests drew several.
inline uint32_t fresh_seed() {
  static size_t next = 0; // the next entry of TILEJIT_TEST_SEED's list
  if (const char* s = std::getenv("TILEJIT_TEST_SEED")) {
    const std::string list = s;
    size_t at = 0;
    for (size_t k = 0; k < next; ++k) {
      const size_t comma = list.find(',', at);
      if (comma == std::string::npos) break; // past the end: the last one again
      at = comma + 1;
    }
    ++next;
    return static_cast<uint32_t>(std::strtoul(list.c_str() + at, nullptr, 10));
  }
  // Printed now, not only on failure: a sanitizer that stops the process (UBSan's
  // halt_on_error) leaves no failure message, and the seeds are the only way back to the input.
  // One short line per seed (the whole list on every line grew with the square of the draws).
  const uint32_t seed = std::random_device{}();
  static int draws = 0;
  if (draws++ == 0)
    std::fprintf(stderr, "[random seeds follow, one per draw: TILEJIT_TEST_SEED=s1,s2,... (in "
                         "draw order) replays this process's]\n");
  std::fprintf(stderr, "[random seed #%d: %u]\n", draws, seed);
  return seed;
}

/// Fills `b` with uniform values in [lo, hi) (rounded to its dtype by HostBuffer::set).
inline void fill_uniform(HostBuffer& b, std::mt19937& rng, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t k = 0; k < b.numel(); ++k) b.set(k, dist(rng));
}

/// Compares every element of `out` with `ref`: no NaN (poisoned elements left unwritten show up
/// here) and ||out - ref|| / max(||ref||, norm_floor) <= tol. `norm_floor`: where `ref` is a
/// difference of larger terms (f32 cancels them with an error of their size, not of ref's), the
/// norm of those terms scaled down to what tol should still resolve.
inline void expect_close(const HostBuffer& out, const std::vector<double>& ref, double tol,
                         double norm_floor = 0) {
  ASSERT_EQ(out.numel(), static_cast<int64_t>(ref.size()));
  double diff = 0, norm = 0;
  int64_t nans = 0, first_nan = -1;
  for (int64_t k = 0; k < out.numel(); ++k) {
    double o = out.get(k);
    if (std::isnan(o)) {
      if (nans++ == 0) first_nan = k;
      continue;
    }
    diff += (o - ref[k]) * (o - ref[k]);
    norm += ref[k] * ref[k];
  }
  EXPECT_EQ(nans, 0) << "first NaN at element " << first_nan;
  ASSERT_GT(norm, 0);
  double rel = std::sqrt(diff) / std::max(std::sqrt(norm), norm_floor);
  EXPECT_LE(rel, tol) << "relative error " << rel;
}

} // namespace tilejit::test
