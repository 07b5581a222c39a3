#include "workloads/op_plan.h"

#include "tuner/tune_key.h"
#include "workloads/problem_on_gpu.h"

#include <map>
#include <mutex>

namespace tilejit::workloads {
namespace {

/// A problem's plan choice in the selector's terms, with its plans' names in order.
struct OpPlanQuery {
  PlanChoiceQuery query;
  std::vector<std::string> plan_names;
};

} // namespace

std::optional<TunedPlan> tuned_plan(Runtime& rt, const std::string& workload,
                                    const std::string& shape_key,
                                    const std::function<std::unique_ptr<Problem>()>& make_problem) {
  if (!rt.has_config_selector()) return std::nullopt; // no database: nothing to build a key for
  // The query depends on the kernels' sources and the shape only (not on the Runtime or its
  // GPU), so one process-wide table serves every Runtime.
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const OpPlanQuery>> queries;
  const std::string key = workload + "|" + shape_key;
  std::shared_ptr<const OpPlanQuery> q;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = queries.find(key); it != queries.end()) q = it->second;
  }
  if (!q) {
    auto made = std::make_shared<OpPlanQuery>();
    try {
      const std::unique_ptr<Problem> problem = make_problem();
      const std::vector<Plan> plans = problem->plans();
      WorkloadKernels kernels(rt, *find_workload(workload));
      made->query = plan_choice_query(kernels, *problem, plans);
      for (const Plan& p : plans) made->plan_names.push_back(p.name);
    } catch (const std::exception&) {
      // A shape the workload cannot describe (the op itself may still run it): no choice to
      // read, remembered as such; the op takes its own. A lookup never fails the call.
      made = std::make_shared<OpPlanQuery>();
    }
    std::lock_guard<std::mutex> lock(mutex);
    q = queries.emplace(key, std::move(made)).first->second;
  }
  if (q->plan_names.size() < 2) return std::nullopt; // nothing to choose
  std::string why;
  const std::optional<Config> chosen = rt.select_config(q->query.kernel, q->query.source_hash,
                                                        q->query.generics, q->query.sizes, &why);
  if (!chosen) return std::nullopt;
  // A stored choice holds PLAN=<index> alone (what `tune` writes; stored_plan_index's rule).
  auto it = chosen->find(plan_tunable);
  if (it == chosen->end() || chosen->size() != 1) return std::nullopt;
  size_t index = 0;
  try {
    size_t used = 0;
    const long long v = std::stoll(it->second, &used);
    if (used != it->second.size() || v < 0 || static_cast<size_t>(v) >= q->plan_names.size())
      return std::nullopt;
    index = static_cast<size_t>(v);
  } catch (const std::exception&) {
    return std::nullopt; // not a number: not a choice this build can read
  }
  return TunedPlan{q->plan_names[index], why};
}

} // namespace tilejit::workloads
