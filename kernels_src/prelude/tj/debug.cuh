// Debug mode (TILEJIT_DEBUG=1, CompileOptions::debug_bounds): point and gather subscripts are
// checked at run time, and the first one out of range is recorded for the runtime, which
// reports it after the launch. Not used by kernels compiled without the debug mode.
#pragma once

#include "tj/types.cuh"

namespace tj {

/// Where a debug-mode kernel records its first out-of-range subscript. Zeroed by the runtime;
/// `site` is the 1-based number of the check that failed (0: none did).
struct BoundsRecord {
  unsigned site;
  unsigned program[3];
  long long index;
  long long size;
};

/// Records the failure unless an earlier one was recorded (the first wins).
__device__ __noinline__ static void report_index(BoundsRecord* r, int site, long long index,
                                                 long long size) {
  if (atomicCAS(&r->site, 0u, static_cast<unsigned>(site)) == 0u) {
    r->program[0] = blockIdx.x;
    r->program[1] = blockIdx.y;
    r->program[2] = blockIdx.z;
    r->index = index;
    r->size = size;
  }
}

/// Check number `site`: `index` must lie in [0, size).
TJ_DEVICE void check_index(BoundsRecord* r, int site, long long index, long long size) {
  if (index < 0 || index >= size) report_index(r, site, index, size);
}

} // namespace tj
