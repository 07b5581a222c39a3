#include "workload_checks.h"

#include "kernel_runner.h"
#include "support/error.h"

#include "workloads/plan_choice.h"
#include "workloads/problem_on_gpu.h"
#include <optional>

namespace tilejit::test {

workloads::Comparison run_problem_on_interpreter(const workloads::Workload& w,
                                                 const workloads::Problem& problem,
                                                 workloads::ProblemData& data, const Config& user,
                                                 const std::string& plan) {
  std::map<std::string, std::string> source_of;
  for (const auto& k : w.kernels()) source_of[k.name] = k.source;
  std::vector<workloads::Step> steps = problem.steps();
  if (!plan.empty()) {
    const std::vector<workloads::Plan> plans = problem.plans();
    steps = plans[workloads::find_plan(plans, plan, problem.name())].steps;
  }
  for (const auto& s : steps)
    for (const std::string& b : s.writes) data.buffer(b).poison();
  for (const auto& s : steps) {
    const std::string& source = source_of.at(s.kernel);
    // grad:<source>: the kernel reverse mode derives (the module's only kernel).
    std::optional<std::string> forward = gradient_source(source);
    LoadedModule m = forward ? load_gradient_module(*forward, s.kernel) : load_source(source);
    const dsl::Kernel& k = m.kernel(forward ? "" : s.kernel);
    std::vector<ref::HostArg> args;
    for (const auto& a : s.args)
      args.push_back(a.buffer.empty()
                         ? ref::HostArg::of_scalar(dtype_is_float(a.scalar.scalar_dtype)
                                                       ? HostValue::of_float(a.scalar.f)
                                                       : HostValue::of_int(a.scalar.i))
                         : data.buffer(a.buffer).arg());
    ref::run_tile(k, workloads::step_config(k, s, user), args);
  }
  return data.compare();
}

} // namespace tilejit::test
