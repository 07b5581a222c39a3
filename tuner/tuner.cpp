#include "tuner/tuner.h"

#include "compiler/specialise.h"
#include "dsl/diagnostics.h"
#include "runtime/device_info.h"
#include "runtime/gpu_api.h"
#include "runtime/hip_runtime.h"
#include "runtime/hiprtc.h"
#include "runtime/jit_compiler.h"
#include "runtime/nvrtc.h"
#include "runtime/runtime_access.h"
#include "support/deadline.h"
#include "support/text.h"
#include "support/version.h"
#include "tuner/launch_timer.h"
#include "tuner/search_space.h"

#include <charconv>
#include <chrono>
#include <future>
#include <thread>

namespace tilejit {

TuneIdentity current_identity() {
  // The project's version, with the commit for development builds: a winner tuned by one
  // build of tilejit is not silently reused by another.
  return tune_identity(query_device(), Nvrtc::get().version(), tilejit_version());
}

TuneIdentity current_identity(const std::string& language) {
  if (language != "hip") return current_identity();
  const HipRuntime::DeviceIdentity d = HipRuntime::get().identity(0);
  return tune_identity_amd(d.name, d.gfx, d.compute_units, d.runtime_version, d.driver_version,
                           Hiprtc::get().version(), tilejit_version());
}

TuneIdentity current_identity(Runtime& rt) {
  if (gpu_api(rt) == GpuApi::hip) {
    const HipRuntime::DeviceIdentity d = HipRuntime::get().identity(rt.device_ordinal());
    return tune_identity_amd(d.name, d.gfx, d.compute_units, d.runtime_version, d.driver_version,
                             Hiprtc::get().version(), tilejit_version());
  }
  return tune_identity(rt.device(), Nvrtc::get().version(), tilejit_version());
}

namespace {

/// The result of compiling one candidate.
struct CompileResult {
  TrialStatus status = TrialStatus::ok;
  std::string error;
};

TuneConfig tunables_of(const SearchSpace& space, size_t index) {
  return space.tune_config(index);
}

Config as_config(const Bindings& b) {
  return Config(b.begin(), b.end());
}

} // namespace

std::vector<size_t> warm_start_seeds(TuneDatabase& db, const TuneKey& key, const SearchSpace& space,
                                     int limit) {
  std::vector<size_t> seeds;
  if (limit <= 0) return seeds;
  for (const NearestWinner& near : db.nearest_winners(key)) {
    if (static_cast<int>(seeds.size()) >= limit) break;
    auto index = space.index_of(near.winner.config);
    if (index && std::find(seeds.begin(), seeds.end(), *index) == seeds.end())
      seeds.push_back(*index);
  }
  return seeds;
}

std::vector<size_t> suggested_seeds(const SearchSpace& space, const std::vector<Config>& suggested,
                                    const std::vector<size_t>& taken,
                                    std::vector<std::string>* skipped) {
  std::vector<size_t> out;
  for (const Config& given : suggested) {
    TuneConfig c = space.tune_config(space.default_index());
    std::string bad;
    for (const auto& [name, value] : given) {
      int64_t v = 0;
      const auto [end, err] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (!c.count(name) || err != std::errc() || end != value.data() + value.size()) {
        bad = str(name, "=", value, ": not a tunable value of the kernel");
        break;
      }
      c[name] = v;
    }
    auto index = bad.empty() ? space.index_of(c) : std::nullopt;
    if (!index) {
      if (skipped)
        skipped->push_back(bad.empty() ? config_to_string(c) + ": " + space.why_not(c) : bad);
      continue;
    }
    if (std::find(taken.begin(), taken.end(), *index) == taken.end() &&
        std::find(out.begin(), out.end(), *index) == out.end())
      out.push_back(*index);
  }
  return out;
}

TuneOutcome tune(const TuneRequest& r, TuneDatabase& db, const TuneIdentity& identity) {
  TJ_ICHECK(r.runtime && r.check && r.prepare_check, "tune request incomplete");
  Runtime& rt = *r.runtime;
  const dsl::Kernel& kernel = RuntimeAccess::kernel(rt, r.kernel);
  auto log = [&](const std::string& m) {
    if (r.log) r.log(m);
  };
  Runtime::LaunchShape shape = rt.launch_shape(r.kernel, r.args, r.generics);
  TuneOutcome out;
  out.key =
      make_tune_key(kernel.name, rt.source_hash(r.kernel), shape.generics, shape.sizes, identity);
  // The GPU's limit (CUDA's opt-in maximum, an AMD GPU's LDS per block): NoGpuError without
  // the target's kind of GPU, before anything compiles.
  const int smem_limit = shared_memory_limit(rt);
  SearchSpace space(kernel, Bindings(shape.generics.begin(), shape.generics.end()), smem_limit);
  out.default_config = as_config(space.config(space.default_index()));

  // A warm database answers at once: nothing compiles, nothing is timed.
  if (!r.retune) {
    if (auto w = db.winner(out.key)) {
      Bindings b(shape.generics.begin(), shape.generics.end());
      for (const auto& [n, v] : w->config) b[n] = std::to_string(v);
      out.winner = as_config(b);
      out.winner_ms = w->median_ms.value_or(0);
      if (auto t = db.find_trial(out.key, space.tune_config(space.default_index()));
          t && t->result.median_ms)
        out.default_ms = *t->result.median_ms;
      out.from_database = true;
      out.strategy = "database";
      return out;
    }
  }

  StrategyOptions so;
  so.seed = r.seed;
  so.budget = r.budget;
  so.repeats = r.repeats;
  so.batch_size = 16;
  so.seeds = warm_start_seeds(db, out.key, space, r.warm_start);
  const size_t nearby = so.seeds.size();
  std::vector<std::string> skipped;
  for (size_t i : suggested_seeds(space, r.suggested, so.seeds, &skipped)) so.seeds.push_back(i);
  auto strategy = make_strategy(r.strategy, space, so);
  out.strategy = strategy->name();
  log(str(kernel.name, ": ", space.size(), " configurations (", space.pruned(),
          " pruned by constraints), strategy ", strategy->name(), ", budget ",
          to_string(r.budget)));
  if (nearby > 0)
    log(str("  measured first: the winners of ", nearby, " nearby tuned shape(s) of this kernel"));
  if (so.seeds.size() > nearby)
    log(str("  and ", so.seeds.size() - nearby, " configuration(s) the workload suggests"));
  for (const std::string& s : skipped) log(str("  a suggestion not in this space: ", s));

  LaunchTimer timer(rt);
  rt.arch(); // initialise device queries before compiling on worker threads
  const unsigned threads =
      r.compile_threads ? r.compile_threads : std::max(1u, std::thread::hardware_concurrency());
  auto start = std::chrono::steady_clock::now();
  std::map<size_t, double> measured_ms;
  int planned = static_cast<int>(std::min<size_t>(
      space.size(), r.budget.trials ? static_cast<size_t>(*r.budget.trials) : space.size()));

  auto record = [&](size_t index, const TrialResult& result) {
    db.record_trial(out.key, tunables_of(space, index), result);
  };

  const int64_t run_started_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count();
  if (!space.default_note().empty()) log(space.default_note());
  while (auto batch = strategy->next_batch()) {
    // 1. Reuse results the database held before this run (per-configuration trials: adding a
    //    candidate does not re-time the others). Trials of this run are never reused: a
    //    strategy that proposes a config again wants a longer measurement.
    std::vector<Proposal> todo;
    for (const Proposal& p : *batch) {
      auto prev =
          r.retune ? std::nullopt : db.find_trial(out.key, tunables_of(space, p.config_index));
      if (prev && prev->created_at_ms >= run_started_ms) prev.reset();
      if (prev && prev->result.status == TrialStatus::ok && prev->result.median_ms) {
        strategy->report(p.config_index, *prev->result.median_ms);
        measured_ms[p.config_index] = *prev->result.median_ms;
        ++out.trials;
      } else if (prev && prev->result.status != TrialStatus::ok) {
        strategy->report(p.config_index, std::nullopt);
        ++out.trials;
        ++out.failed;
      } else {
        todo.push_back(p);
      }
    }
    // 2. Compile the rest in parallel, each with a timeout; a failure is a trial, never fatal.
    std::vector<CompileResult> compiled(todo.size());
    for (size_t lo = 0; lo < todo.size(); lo += threads) {
      size_t hi = std::min(todo.size(), lo + threads);
      std::vector<std::future<CompileResult>> futures;
      for (size_t i = lo; i < hi; ++i) {
        Config cfg = as_config(space.config(todo[i].config_index));
        // The task owns everything it touches: after a timeout this function returns (and
        // the request, the arguments and even the Runtime may go) while it still runs.
        std::function<std::string()> compile = rt.compile_task(r.kernel, cfg, r.args);
        auto task = std::make_shared<std::packaged_task<CompileResult()>>([compile] {
          CompileResult c;
          c.error = compile();
          if (starts_with(c.error, "constraint: ")) {
            c.status = TrialStatus::pruned;
            c.error = c.error.substr(12);
          } else if (!c.error.empty()) {
            c.status = TrialStatus::compile_error;
          }
          return c;
        });
        futures.push_back(task->get_future());
        run_detached([task] { (*task)(); }); // a hung compile must not hang the tuner
      }
      for (size_t i = lo; i < hi; ++i) {
        auto& f = futures[i - lo];
        if (f.wait_for(std::chrono::duration<double>(r.compile_timeout_s)) ==
            std::future_status::ready) {
          compiled[i] = f.get();
        } else {
          compiled[i] = {TrialStatus::timeout,
                         str("compile took over ", r.compile_timeout_s, " s")};
        }
        if (compiled[i].status == TrialStatus::ok) ++out.compiled;
      }
    }
    // 3. Check, then time, each compiled candidate (one at a time: timing needs the GPU alone).
    for (size_t i = 0; i < todo.size(); ++i) {
      // A spent time budget ends the search between trials (once something ran correctly),
      // not only between batches: a batch of 16 slow trials can take minutes.
      if (strategy->time_budget_spent() && strategy->best()) {
        log(str(kernel.name, ": time budget spent with ", todo.size() - i,
                " proposal(s) of the batch not measured"));
        strategy->stop_on_time_budget();
        break;
      }
      const Proposal& p = todo[i];
      Config cfg = as_config(space.config(p.config_index));
      TrialResult result;
      if (compiled[i].status != TrialStatus::ok) {
        result.status = compiled[i].status;
        result.error = compiled[i].error;
      } else {
        try {
          r.prepare_check();
          rt.launch_config(r.kernel, cfg, r.args);
          synchronize_device(timer.api(), rt.device_ordinal());
          std::string why;
          if (!r.check(&why)) {
            result.status = TrialStatus::wrong_result;
            result.error = why;
          } else {
            TimingOptions to;
            to.repeats = p.repeats;
            to.warmup = 2;
            Timing t = timer.time([&](void* s) { rt.launch_config(r.kernel, cfg, r.args, s); }, to);
            result.median_ms = t.median_ms;
            result.spread_ms = t.spread_ms();
            if (!t.steady) {
              // Kept (the numbers are real), but said: it may have been timed on a GPU whose
              // clock or load was still changing.
              result.error = str("timed after ", static_cast<int>(t.warmup_ms),
                                 " ms of warm-up without two rounds agreeing within ",
                                 static_cast<int>(to.steady_tolerance * 100), "%");
              log(str("  ", space.describe(p.config_index), ": ", result.error));
            }
          }
        } catch (const std::exception& e) {
          result.status = TrialStatus::launch_error;
          result.error = e.what();
          // These leave the CUDA context unusable: every later trial would fail the same way.
          for (const char* sticky : {"CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_ILLEGAL_ADDRESS",
                                     "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
                                     "CUDA_ERROR_HARDWARE_STACK_ERROR"})
            if (result.error.find(sticky) != std::string::npos) {
              record(p.config_index, result);
              throw Error(str("tuning ", kernel.name, ": configuration ",
                              space.describe(p.config_index), " broke the CUDA context (", sticky,
                              "); this is a tilejit bug: the trial is "
                              "recorded, and the process must restart"));
            }
        }
      }
      record(p.config_index, result);
      ++out.trials;
      if (result.status == TrialStatus::ok) {
        ++out.measured;
        measured_ms[p.config_index] = *result.median_ms;
        strategy->report(p.config_index, result.median_ms);
      } else {
        ++out.failed;
        strategy->report(p.config_index, std::nullopt);
        if (result.status != TrialStatus::pruned)
          log(str("  ", space.describe(p.config_index), ": ", to_string(result.status), ": ",
                  result.error.substr(0, 300)));
      }
      if (r.progress) {
        TuneProgress pr;
        pr.done = out.trials;
        pr.total = std::max(planned, out.trials);
        if (auto b = strategy->best())
          pr.best_ms = b->cost_ms, pr.best_config = space.describe(b->config_index);
        pr.elapsed_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        pr.eta_s = pr.done ? pr.elapsed_s / pr.done * std::max(0, pr.total - pr.done) : 0;
        r.progress(pr);
      }
    }
  }
  out.stop_reason = strategy->stop_reason();
  auto best = strategy->best();
  if (!best)
    throw Error(str("tuning ", kernel.name, ": no configuration ran correctly (", out.failed,
                    " failed; see `tilejit cache show ", kernel.name, "`)"));
  out.winner = as_config(space.config(best->config_index));
  out.winner_ms = best->cost_ms;
  auto d = measured_ms.find(space.default_index());
  out.default_ms = d == measured_ms.end() ? 0 : d->second;
  if (!db.set_winner(out.key, tunables_of(space, best->config_index), best->cost_ms))
    log(str(kernel.name, ": a pinned winner exists for this key; it stays"));
  // The winner's binary goes into the database too (the winner is already recorded: a failure
  // here costs a later compile, never the tuning result).
  try {
    const CompiledVariant& v = RuntimeAccess::compile(rt, r.kernel, out.winner, r.args);
    db.put_binary(v.cache_key, v.arch, v.binary, kernel.name);
  } catch (const std::exception& e) {
    log(str(kernel.name, ": the winner's binary was not stored: ", e.what()));
  }
  return out;
}

} // namespace tilejit
