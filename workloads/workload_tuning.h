// Tuning a workload's problem: every step's kernel in order, each on the inputs it really gets
// (the earlier steps run first with their winners), each candidate checked end to end (the
// later steps run after it and the workload's outputs are compared with the float64
// reference), then the whole per-call sequence timed once with the winners. A problem with
// several plans (Problem::plans) has each plan tuned so, and the fastest per-call sequence is
// kept as the shape's plan choice (workloads/plan_choice.h).
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

/// One plan's per-call sequence, timed with its steps' winners.
struct PlanTiming {
  std::string name;
  double end_to_end_ms = 0; ///< 0: not timed (the database answered)
  std::string error;        ///< why the plan could not run (no configuration of a step did)
};

struct ProblemTuning {
  std::string plan;              ///< the chosen plan ("default" for a problem with one)
  std::string plan_why;          ///< "fastest of 2 plans", "database", "the only plan"
  std::vector<PlanTiming> plans; ///< every plan timed this time (empty: the database answered)
  std::vector<StepTuning> steps; ///< the chosen plan's steps
  /// The per-call steps with their winners, timed as one sequence (L2 flushed before it);
  /// 0 when every step came from the database (nothing was run).
  double end_to_end_ms = 0;
  int compiled = 0;
  bool from_database = true; ///< every step's winner was already in the database
};

/// Tunes every step of every plan of `problem` and chooses the fastest plan. Draws data (seeded)
/// only when something has no winner yet or a retune was asked for; a warm database answers
/// without touching the GPU. Throws when no plan runs correctly (naming each plan's error).
ProblemTuning tune_problem(const WorkloadKernels& kernels, const Problem& problem, TuneDatabase& db,
                           const TuneIdentity& identity, const WorkloadTuneOptions& options);

} // namespace tilejit::workloads
