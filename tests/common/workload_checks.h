// Runs a workload's problem on the reference interpreter: its steps in order on the problem's
// host buffers, as ProblemOnGpu runs them on the GPU. What CPU tests of workloads use.
#pragma once

#include "workloads/workload.h"

namespace tilejit::test {

/// Runs every step of `problem` (one-time steps included) on `data`'s buffers with the
/// interpreter, the outputs poisoned first, then compares them with the reference. `plan`:
/// one of problem.plans() by name (empty: the default steps).
workloads::Comparison run_problem_on_interpreter(const workloads::Workload& w,
                                                 const workloads::Problem& problem,
                                                 workloads::ProblemData& data,
                                                 const Config& user = {},
                                                 const std::string& plan = "");

} // namespace tilejit::test
