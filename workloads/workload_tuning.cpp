#include "workloads/workload_tuning.h"

#include "runtime/runtime_access.h"
#include "support/error.h"
#include "support/text.h"
#include "tuner/launch_timer.h"
#include "workloads/plan_choice.h"

#include <fmt/format.h>

#include <limits>

namespace tilejit::workloads {

namespace {

TuneRequest base_request(const WorkloadTuneOptions& o, Runtime& rt, KernelRef k,
                         std::vector<Arg> args, const Config& generics) {
  TuneRequest r;
  r.runtime = &rt;
  r.kernel = k;
  r.args = std::move(args);
  r.generics = generics;
  r.strategy = o.strategy;
  r.budget = o.budget;
  r.seed = o.seed;
  r.repeats = o.repeats;
  r.retune = o.retune;
  r.warm_start = o.warm_start;
  r.log = o.log;
  return r;
}

/// Whether every step of `plan` has a winner in the database for this shape.
bool plan_is_tuned(const WorkloadKernels& kernels, const Problem& problem, const Plan& plan,
                   TuneDatabase& db, const TuneIdentity& identity) {
  Runtime& rt = kernels.runtime();
  for (const Step& s : plan.steps) {
    KernelRef k = kernels.get(s.kernel);
    Runtime::LaunchShape shape = rt.launch_shape(k, shape_only_args(problem, s), s.generics);
    TuneKey key = make_tune_key(RuntimeAccess::kernel(rt, k).name, rt.source_hash(k),
                                shape.generics, shape.sizes, identity);
    if (!db.winner(key)) return false;
  }
  return true;
}

/// The steps' winners as the database has them: no data, no GPU work.
std::vector<StepTuning> steps_from_database(const WorkloadKernels& kernels, const Problem& problem,
                                            const Plan& plan, TuneDatabase& db,
                                            const TuneIdentity& identity,
                                            const WorkloadTuneOptions& o) {
  std::vector<StepTuning> out;
  for (const Step& s : plan.steps) {
    KernelRef k = kernels.get(s.kernel);
    TuneRequest r = base_request(o, kernels.runtime(), k, shape_only_args(problem, s), s.generics);
    r.prepare_check = [] {};
    r.check = [](std::string*) { return true; }; // not called: the database answers
    out.push_back({s.label, s.kernel, s.one_time, tune(r, db, identity)});
  }
  return out;
}

struct TunedPlan {
  std::vector<StepTuning> steps;
  double end_to_end_ms = 0;
  int compiled = 0;
  bool from_database = true;
};

/// Tunes the steps of `plan` in order on `data`, then times its per-call sequence.
TunedPlan tune_plan(const WorkloadKernels& kernels, const Problem& problem, const Plan& plan,
                    ProblemData& data, TuneDatabase& db, const TuneIdentity& identity,
                    const WorkloadTuneOptions& o, const std::string& label_prefix) {
  Runtime& rt = kernels.runtime();
  const std::vector<Step>& steps = plan.steps;
  ProblemOnGpu gpu(kernels, problem, data, plan);
  TunedPlan result;
  std::vector<Config> chosen(steps.size()); // winners so far; empty: the kernel's defaults
  auto config_of = [&](size_t i) { return chosen[i].empty() ? gpu.config(i, {}) : chosen[i]; };
  for (size_t k = 0; k < steps.size(); ++k) {
    TuneRequest r = base_request(o, rt, gpu.kernel(k), gpu.args(k), steps[k].generics);
    r.suggested = steps[k].suggested;
    // Before a checked run: the outputs of this step and the later ones poisoned, the earlier
    // steps run again (their outputs are this step's inputs, and an in-place step may have
    // changed them while the previous candidate was timed).
    r.prepare_check = [&, k] {
      gpu.poison_from(k);
      for (size_t i = 0; i < k; ++i) rt.launch_config(gpu.kernel(i), config_of(i), gpu.args(i));
    };
    // After the candidate ran: the later steps, then every output against the reference.
    r.check = [&, k](std::string* why) {
      for (size_t i = k + 1; i < steps.size(); ++i)
        rt.launch_config(gpu.kernel(i), config_of(i), gpu.args(i));
      Comparison c = gpu.check();
      if (!c.ok && why) *why = c.summary();
      return c.ok;
    };
    const std::string label = fmt::format("{} {}{}", problem.name(), label_prefix, steps[k].label);
    if (o.progress) r.progress = [&](const TuneProgress& p) { o.progress(label, p); };
    TuneOutcome out = tune(r, db, identity);
    chosen[k] = out.winner;
    result.compiled += out.compiled;
    result.from_database = result.from_database && out.from_database;
    result.steps.push_back({steps[k].label, steps[k].kernel, steps[k].one_time, std::move(out)});
  }
  // The whole per-call sequence with the winners, timed as the benchmark times it.
  LaunchTimer timer(rt);
  TimingOptions to;
  to.repeats = o.repeats;
  auto call = [&](void* s) {
    for (size_t i = 0; i < steps.size(); ++i)
      if (!steps[i].one_time) rt.launch_config(gpu.kernel(i), chosen[i], gpu.args(i), s);
  };
  result.end_to_end_ms = timer.time(call, to).median_ms;
  return result;
}

ProblemTuning one_plan(const WorkloadKernels& kernels, const Problem& problem, const Plan& plan,
                       TuneDatabase& db, const TuneIdentity& identity,
                       const WorkloadTuneOptions& o) {
  ProblemTuning result;
  result.plan = plan.name;
  result.plan_why = "the only plan";
  if (!o.retune && plan_is_tuned(kernels, problem, plan, db, identity)) {
    result.steps = steps_from_database(kernels, problem, plan, db, identity, o);
    return result;
  }
  std::unique_ptr<ProblemData> data = problem.make_data(o.seed);
  TunedPlan t = tune_plan(kernels, problem, plan, *data, db, identity, o, "");
  result.steps = std::move(t.steps);
  result.end_to_end_ms = t.end_to_end_ms;
  result.compiled = t.compiled;
  result.from_database = t.from_database;
  return result;
}

} // namespace

ProblemTuning tune_problem(const WorkloadKernels& kernels, const Problem& problem, TuneDatabase& db,
                           const TuneIdentity& identity, const WorkloadTuneOptions& o) {
  const std::vector<Plan> plans = problem.plans();
  TJ_ICHECK(!plans.empty(), problem.name() + " has no plan");
  if (plans.size() == 1) return one_plan(kernels, problem, plans[0], db, identity, o);

  const TuneKey key = plan_choice_key(kernels, problem, plans, identity);
  auto stored_plan = [&]() -> std::optional<size_t> {
    std::optional<Winner> w = db.winner(key);
    return w ? stored_plan_index(*w, plans.size()) : std::nullopt;
  };
  // A warm database answers with its choice and that plan's winners: no data, no GPU work.
  if (std::optional<size_t> i = stored_plan();
      i && !o.retune && plan_is_tuned(kernels, problem, plans[*i], db, identity)) {
    ProblemTuning result;
    result.plan = plans[*i].name;
    result.plan_why = db.winner(key)->pinned ? "pinned in the database" : "database";
    result.steps = steps_from_database(kernels, problem, plans[*i], db, identity, o);
    return result;
  }

  // Every plan tuned on the same data; each per-call sequence timed with its winners.
  std::unique_ptr<ProblemData> data = problem.make_data(o.seed);
  ProblemTuning result;
  result.from_database = true;
  std::vector<TunedPlan> tuned(plans.size());
  size_t best = plans.size();
  double best_ms = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < plans.size(); ++i) {
    const TuneConfig choice = {{plan_tunable, static_cast<int64_t>(i)}};
    PlanTiming timing{plans[i].name, 0, ""};
    try {
      tuned[i] =
          tune_plan(kernels, problem, plans[i], *data, db, identity, o, plans[i].name + ": ");
      timing.end_to_end_ms = tuned[i].end_to_end_ms;
      db.record_trial(key, choice, {TrialStatus::ok, timing.end_to_end_ms, std::nullopt, ""});
      result.compiled += tuned[i].compiled;
      result.from_database = result.from_database && tuned[i].from_database;
      if (timing.end_to_end_ms < best_ms) best = i, best_ms = timing.end_to_end_ms;
    } catch (const Error& e) {
      // One plan that cannot run (no configuration of a step checks out) leaves the others.
      timing.error = e.what();
      db.record_trial(key, choice,
                      {TrialStatus::wrong_result, std::nullopt, std::nullopt, timing.error});
      if (o.log)
        o.log(fmt::format("{}: plan {} failed: {}", problem.name(), plans[i].name, timing.error));
    }
    result.plans.push_back(std::move(timing));
  }
  if (best == plans.size()) {
    std::vector<std::string> errors;
    for (const PlanTiming& p : result.plans) errors.push_back(p.name + ": " + p.error);
    throw Error(fmt::format("{}: no plan runs correctly ({})", problem.name(), join(errors, "; ")));
  }
  size_t chosen = best;
  result.plan_why = fmt::format("fastest of {} plans", plans.size());
  if (!db.set_winner(key, {{plan_tunable, static_cast<int64_t>(best)}}, best_ms)) {
    // The user pinned a plan: it stays the choice (if it ran).
    if (std::optional<size_t> pinned = stored_plan(); pinned && !tuned[*pinned].steps.empty()) {
      chosen = *pinned;
      result.plan_why = "pinned in the database";
    }
  }
  result.plan = plans[chosen].name;
  result.steps = std::move(tuned[chosen].steps);
  result.end_to_end_ms = tuned[chosen].end_to_end_ms;
  return result;
}

} // namespace tilejit::workloads
