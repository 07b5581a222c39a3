// <tilejit/tuning.h>: the tuning database behind the public API, over the tuner's own pieces
// (TuneDatabase, the database-backed selector, tuning on first use).
#include "tuner/first_use_tuning.h"
#include "tuner/tune_database.h"
#include "tuner/tuner.h"

#include <tilejit/tuning.h>

namespace tilejit {
namespace {

FirstUseTuningOptions first_use_options(const TuningBudget& b) {
  if (b.trials < 1 || !(b.seconds > 0) || b.repeats < 1)
    throw Error(str("tuning budget: trials (", b.trials, ") and repeats (", b.repeats,
                    ") must be >= 1 and seconds (", b.seconds, ") > 0"));
  FirstUseTuningOptions o;
  o.budget.trials = b.trials;
  o.budget.seconds = b.seconds;
  o.strategy = b.strategy;
  o.repeats = b.repeats;
  return o;
}

std::shared_ptr<TuneDatabase> open_database(const std::string& path) {
  return std::make_shared<TuneDatabase>(path.empty() ? TuneDatabase::default_path() : path);
}

} // namespace

std::string default_tuning_database_path() {
  return TuneDatabase::default_path();
}

void use_tuning_database(Runtime& rt, const std::string& path, const TuningBudget& budget) {
  current_identity(rt); // NoGpuError without the runtime's GPU (an AMD one for a gfx target)
  use_tuning_database(rt, open_database(path), first_use_options(budget));
  rt.forget_prepared(); // launches prepared before now chose without the database
}

TuningResult tune_launch(Runtime& rt, KernelRef kernel, const std::vector<Arg>& args,
                         const LaunchOptions& options, const std::string& path,
                         const TuningBudget& budget) {
  const TuneIdentity identity = current_identity(rt); // NoGpuError without its GPU
  FirstUseTuningOptions o = first_use_options(budget);
  auto db = open_database(path);
  use_tuning_database(rt, db, o);
  rt.forget_prepared();
  TuningResult out;
  FirstUseTuner tuner = make_first_use_tuner(db, identity, o);
  std::string why;
  if (auto winner = tuner(rt, kernel, args, options.config, options.stream, &why)) {
    out.tuned = true;
    out.why = why;
  }
  std::string chosen;
  out.config = rt.resolve_config(kernel, args, options.config, &chosen);
  if (!out.tuned) out.why = why.empty() ? chosen : why + "; " + chosen;
  return out;
}

} // namespace tilejit
