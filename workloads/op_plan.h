// The ops' side of the plan choice (workloads/plan_choice.h): an op computing a workload's
// shape takes the plan `tilejit tune` found fastest for it, read through its Runtime's selector
// (the tuning database, with the nearest tuned shape's choice where this one was not tuned),
// so that tuning a workload speeds up the application's calls and not only `run` and `bench`.
#pragma once

#include "workloads/plan_choice.h"

#include <tilejit/tilejit.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace tilejit::workloads {

/// The plan the tuning database chose for a problem, by name (one of the problem's plans'), and
/// where the choice came from (the selector's why).
struct TunedPlan {
  std::string name;
  std::string why;
};

/// The database's plan for the problem `make_problem` builds, on `rt`, or nullopt where there
/// is no database, no choice for this shape or a nearby one, a choice that names none of the
/// problem's plans (another build's), or a shape the workload cannot describe (make_problem
/// throws: the op takes its own plan; a lookup never fails the op's call). `shape_key` names the
/// problem's shape: the query (the problem, its plans and key) is built once per workload and shape
/// key in the process, and the runtime remembers the selector's answer per key, so a repeated call
/// costs two map lookups.
std::optional<TunedPlan> tuned_plan(Runtime& rt, const std::string& workload,
                                    const std::string& shape_key,
                                    const std::function<std::unique_ptr<Problem>()>& make_problem);

} // namespace tilejit::workloads
