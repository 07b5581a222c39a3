// A toy workload of three kernels (tests/data/toy_chain.tile), registered by tests to check
// that the workload interface, the CLI and the tuner handle several kernels, a one-time step
// and an intermediate buffer: S[r] = sum_c (2 X[r, c])^2 + bias.
#pragma once

#include "workloads/workload.h"

#include <memory>

namespace tilejit::test {

/// The toy workload ("toy_chain"); its cases are 37x300 and 64x1000, its --shape R=..,C=...
std::shared_ptr<const workloads::Workload> make_toy_workload();

} // namespace tilejit::test
