// Host-side helpers the workloads share for drawing inputs and computing float64 references on
// buffers of up to gigabytes: a counter-based random stream (any element drawn independently,
// so threads fill disjoint ranges and a seed gives the same data on any machine) and a simple
// split of a range over the cores.
#pragma once

#include "compiler/ref/run_tile.h"

#include <cstdint>
#include <functional>

namespace tilejit::workloads {

/// SplitMix64's finaliser: a well-mixed 64-bit value from a counter.
uint64_t splitmix(uint64_t x);

/// A value in [0, 1) for element `i` of the stream `seed`.
double random_unit(uint64_t seed, int64_t i);

/// Runs body(lo, hi) over [0, n) split into contiguous ranges, one per core (at most 16).
void parallel_ranges(int64_t n, const std::function<void(int64_t, int64_t)>& body);

/// Fills `b` with uniform values in [lo, hi), rounded to its dtype (floats; any dtype).
void fill_uniform(ref::HostBuffer& b, uint64_t seed, double lo, double hi);

/// ||out - ref|| / ||ref|| accumulated element by element (||out - ref|| when ref is all zero):
/// the relative L2 error the workloads' comparisons report.
struct RelativeL2 {
  double diff = 0, ref = 0;
  void add(double out, double r) {
    diff += (out - r) * (out - r);
    ref += r * r;
  }
  double value() const;
};

/// Fills `b`'s bytes at random (int32 words: eight uniform nibbles each; int8: uniform).
void fill_random_bytes(ref::HostBuffer& b, uint64_t seed);

} // namespace tilejit::workloads
