// A kernel run on the GPU compared with the same kernel run on the reference interpreter, on the
// same fresh random inputs: every element of every output, outputs poisoned first on both.
#pragma once

#include "kernel_runner.h"

#include <vector>

namespace tilejit::test {

/// A buffer for expect_matches_interpreter: an input (drawn at random) or an output (poisoned).
struct CompareBuffer {
  ref::HostBuffer buffer;
  bool output = false;
  /// An output the kernel adds into (atomic_add): it starts drawn at random like an input.
  bool accumulate = false;
  /// A counter the kernel's protocol starts from 0 (arrivals), not drawn at random.
  bool zeroed = false;
};

/// Runs `source` with `config` through `run` and through the interpreter on copies of
/// `buffers` (inputs uniform in [-1, 1) for floats, [0, 16) for integers) and expects every
/// output element to agree within `tol` (relative norm; NaN only where both have it).
void expect_matches_interpreter(const KernelRunner& run, const std::string& source,
                                const Bindings& config, std::vector<CompareBuffer> buffers,
                                double tol);

} // namespace tilejit::test
