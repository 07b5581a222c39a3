// Tuning a workload's problem: every step's kernel in order, each on the inputs it really gets
// (the earlier steps run first with their winners), each candidate checked end to end (the
// later steps run after it and the workload's outputs are compared with the float64
// reference), then the whole per-call sequence timed once with the winners.
#pragma once

#include "tuner/tuner.h"
#include "workloads/problem_on_gpu.h"

#include <functional>
#include <string>
#include <vector>

namespace tilejit::workloads {

struct WorkloadTuneOptions {
  std::string strategy = "auto";
  Budget budget;
  uint64_t seed = 1;
  int repeats = 20;
  bool retune = false;
  int warm_start = 8;
  /// Progress of one step's tuning (label: "<problem> <step>").
  std::function<void(const std::string& label, const TuneProgress&)> progress;
  std::function<void(const std::string&)> log;
};

struct StepTuning {
  std::string label, kernel;
  bool one_time = false;
  TuneOutcome outcome;
};

struct ProblemTuning {
  std::vector<StepTuning> steps;
  /// The per-call steps with their winners, timed as one sequence (L2 flushed before it);
  /// 0 when every step came from the database (nothing was run).
  double end_to_end_ms = 0;
  int compiled = 0;
  bool from_database = true; ///< every step's winner was already in the database
};

/// Tunes every step of `problem`. Draws data (seeded) only when some step has no winner yet
/// or a retune was asked for; a warm database answers without touching the GPU.
ProblemTuning tune_problem(const WorkloadKernels& kernels, const Problem& problem, TuneDatabase& db,
                           const TuneIdentity& identity, const WorkloadTuneOptions& options);

} // namespace tilejit::workloads
