#include "workloads/plan_choice.h"

#include "support/error.h"
#include "support/sha256.h"
#include "support/text.h"

#include <fmt/format.h>

#include <set>

namespace tilejit::workloads {

PlanChoiceQuery plan_choice_query(const WorkloadKernels& kernels, const Problem& problem,
                                  const std::vector<Plan>& plans) {
  Runtime& rt = kernels.runtime();
  std::string identity_text;
  std::map<std::string, std::set<std::string>> generic_values;
  std::map<std::string, int64_t> sizes;
  for (const Plan& plan : plans) {
    identity_text += "plan " + plan.name + "\n";
    for (const Step& s : plan.steps) {
      KernelRef k = kernels.get(s.kernel);
      identity_text += fmt::format("  {} {} {}\n", s.label, s.kernel, rt.source_hash(k));
      if (s.one_time) continue;
      // Every per-call step's specialisation and sizes: the union is the shape of the choice
      // (the steps of one problem agree on the sizes they share: D, M, N...).
      Runtime::LaunchShape shape = rt.launch_shape(k, shape_only_args(problem, s), s.generics);
      for (const auto& [name, value] : shape.generics) generic_values[name].insert(value);
      sizes.insert(shape.sizes.begin(), shape.sizes.end());
    }
  }
  // A generic the plans set differently (attention's ATOMIC_DQ) is how they differ, not what
  // the problem is: only the values every step agrees on name the choice.
  PlanChoiceQuery q;
  for (const auto& [name, values] : generic_values)
    if (values.size() == 1) q.generics[name] = *values.begin();
  TJ_ICHECK(plans.size() <= static_cast<size_t>(max_plans), problem.name() + " has too many plans");
  q.kernel = plan_key_prefix + kernels.workload_name();
  q.source_hash = sha256_hex(identity_text);
  q.sizes = std::move(sizes);
  return q;
}

TuneKey plan_choice_key(const WorkloadKernels& kernels, const Problem& problem,
                        const std::vector<Plan>& plans, const TuneIdentity& identity) {
  const PlanChoiceQuery q = plan_choice_query(kernels, problem, plans);
  return make_tune_key(q.kernel, q.source_hash, q.generics, q.sizes, identity);
}

size_t find_plan(const std::vector<Plan>& plans, const std::string& name,
                 const std::string& problem_name) {
  std::vector<std::string> names;
  for (size_t i = 0; i < plans.size(); ++i) {
    if (plans[i].name == name) return i;
    names.push_back(plans[i].name);
  }
  throw Error(fmt::format("--plan {}: {} has no plan '{}' (its plans: {})", name, problem_name,
                          name, join(names, ", ")));
}

std::optional<size_t> stored_plan_index(const Winner& w, size_t plan_count) {
  auto it = w.config.find(plan_tunable);
  if (it == w.config.end() || w.config.size() != 1 || it->second < 0 ||
      static_cast<size_t>(it->second) >= plan_count)
    return std::nullopt;
  return static_cast<size_t>(it->second);
}

ChosenPlan choose_plan(const WorkloadKernels& kernels, const Problem& problem,
                       const std::vector<Plan>& plans, TuneDatabase* db,
                       const TuneIdentity& identity, const std::string& asked) {
  TJ_ICHECK(!plans.empty(), problem.name() + " has no plan");
  if (!asked.empty()) return {find_plan(plans, asked, problem.name()), "--plan"};
  if (plans.size() == 1) return {0, "the only plan"};
  const std::vector<NearestWinner> nearest =
      db ? db->nearest_winners(plan_choice_key(kernels, problem, plans, identity))
         : std::vector<NearestWinner>();
  for (const NearestWinner& n : nearest) {
    std::optional<size_t> i = stored_plan_index(n.winner, plans.size());
    if (!i) continue; // a choice stored by another build's plans: not ours to read
    if (n.distance == 0) return {*i, "tuned"};
    std::vector<std::string> shape;
    for (const auto& [name, v] : n.key.shape) shape.push_back(fmt::format("{}={}", name, v));
    return {*i, "nearest tuned shape " + join(shape, ",")};
  }
  Runtime& rt = kernels.runtime();
  const size_t untuned = problem.untuned_plan(rt.has_gpu() ? rt.device().cc_major : 0);
  TJ_ICHECK(untuned < plans.size(), problem.name() + ": untuned plan out of range");
  if (untuned != 0) return {untuned, "default (not tuned; the op's choice on this GPU)"};
  return {0, "default (not tuned)"};
}

} // namespace tilejit::workloads
