// Choosing among a problem's plans (Problem::plans): which kernels compute a shape is tuned like
// a kernel's block sizes. The choice lives in the tuning database under a key of its own (kernel
// "plan:<workload>", config PLAN=<index>, one trial per plan timed end to end), so `run` and
// `bench` follow a warm database, `cache export/import/list/pin` carry it like any winner, and a
// shape never tuned takes the choice of the nearest tuned one.
#pragma once

#include "tuner/db_config_selector.h"
#include "tuner/tune_database.h"
#include "workloads/problem_on_gpu.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tilejit::workloads {

/// What the plan choice for a problem is keyed on besides the device, in a ConfigSelector's
/// terms (Runtime::select_config): "plan:<workload>", a hash of the plans' names and their
/// kernels' source hashes (a changed kernel is a new choice), the generic values every per-call
/// step agrees on and their named sizes.
struct PlanChoiceQuery {
  std::string kernel, source_hash;
  Config generics;
  std::map<std::string, int64_t> sizes;
};
PlanChoiceQuery plan_choice_query(const WorkloadKernels& kernels, const Problem& problem,
                                  const std::vector<Plan>& plans);

/// The database key of the plan choice for `problem` on the device `identity` names.
TuneKey plan_choice_key(const WorkloadKernels& kernels, const Problem& problem,
                        const std::vector<Plan>& plans, const TuneIdentity& identity);

/// The index of the plan called `name`; an error naming the problem's plans otherwise.
size_t find_plan(const std::vector<Plan>& plans, const std::string& name,
                 const std::string& problem_name);

/// The plan index a stored winner of a plan choice names, when it names one of `plan_count`
/// plans (a choice stored by a build with other plans, or a corrupt one, names none).
std::optional<size_t> stored_plan_index(const Winner& winner, size_t plan_count);

struct ChosenPlan {
  size_t index = 0;
  std::string why; ///< "--plan", "tuned", "nearest tuned shape M=16", "default (not tuned)"
};

/// The plan a run takes: `asked` (--plan) when not empty; with one plan, that one; else the
/// database's choice for this shape, or for the nearest tuned shape; else the first.
ChosenPlan choose_plan(const WorkloadKernels& kernels, const Problem& problem,
                       const std::vector<Plan>& plans, TuneDatabase* db,
                       const TuneIdentity& identity, const std::string& asked);

} // namespace tilejit::workloads
