#include "workloads/workload_tuning.h"

#include "runtime/runtime_access.h"
#include "support/text.h"
#include "tuner/kernel_timer.h"

#include <fmt/format.h>

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

} // namespace

ProblemTuning tune_problem(const WorkloadKernels& kernels, const Problem& problem, TuneDatabase& db,
                           const TuneIdentity& identity, const WorkloadTuneOptions& o) {
  Runtime& rt = kernels.runtime();
  const std::vector<Step> steps = problem.steps();
  ProblemTuning result;

  // A warm database answers from shapes alone: no data, no GPU work.
  bool all_warm = !o.retune;
  for (size_t i = 0; i < steps.size() && all_warm; ++i) {
    KernelRef k = kernels.get(steps[i].kernel);
    Runtime::LaunchShape shape =
        rt.launch_shape(k, shape_only_args(problem, steps[i]), steps[i].generics);
    TuneKey key = make_tune_key(RuntimeAccess::kernel(rt, k).name, rt.source_hash(k),
                                shape.generics, shape.sizes, identity);
    all_warm = db.winner(key).has_value();
  }
  if (all_warm) {
    for (const Step& s : steps) {
      KernelRef k = kernels.get(s.kernel);
      TuneRequest r = base_request(o, rt, k, shape_only_args(problem, s), s.generics);
      r.prepare_check = [] {};
      r.check = [](std::string*) { return true; }; // not called: the database answers
      result.steps.push_back({s.label, s.kernel, s.one_time, tune(r, db, identity)});
    }
    return result;
  }

  std::unique_ptr<ProblemData> data = problem.make_data(o.seed);
  ProblemOnGpu gpu(kernels, problem, *data);
  std::vector<Config> chosen(steps.size()); // winners so far; empty: the kernel's defaults
  auto config_of = [&](size_t i) { return chosen[i].empty() ? gpu.config(i, {}) : chosen[i]; };
  result.from_database = true;
  for (size_t k = 0; k < steps.size(); ++k) {
    TuneRequest r = base_request(o, rt, gpu.kernel(k), gpu.args(k), steps[k].generics);
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
    const std::string label = fmt::format("{} {}", problem.name(), steps[k].label);
    if (o.progress) r.progress = [&](const TuneProgress& p) { o.progress(label, p); };
    TuneOutcome out = tune(r, db, identity);
    chosen[k] = out.winner;
    result.compiled += out.compiled;
    result.from_database = result.from_database && out.from_database;
    result.steps.push_back({steps[k].label, steps[k].kernel, steps[k].one_time, std::move(out)});
  }
  // The whole per-call sequence with the winners, timed as the benchmark times it.
  KernelTimer timer;
  TimingOptions to;
  to.repeats = o.repeats;
  auto call = [&](cu::CUstream s) {
    for (size_t i = 0; i < steps.size(); ++i)
      if (!steps[i].one_time) rt.launch_config(gpu.kernel(i), chosen[i], gpu.args(i), s);
  };
  result.end_to_end_ms = timer.time(call, to).median_ms;
  return result;
}

} // namespace tilejit::workloads
