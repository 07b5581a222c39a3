// The tuning database from an application: launches take their shape's tuned configuration
// from it, and a shape can be tuned there and then (on first use, or when asked).
//
//   tilejit::Runtime rt;
//   tilejit::use_tuning_database(rt);               // ~/.cache/tilejit/tilejit.db or $TILEJIT_DB
//   tilejit::tune_launch(rt, kernel, args);               // tunes this shape unless it has a
//   winner rt.launch(kernel, args);                         // launches the winner
#pragma once

#include <tilejit/tilejit.h>

#include <string>
#include <vector>

namespace tilejit {

/// The database the CLI uses by default: $TILEJIT_DB, else ~/.cache/tilejit/tilejit.db.
std::string default_tuning_database_path();

/// How much a shape's tuning may cost (on first use, or in tune_launch()).
struct TuningBudget {
  int trials = 32;               ///< configurations measured at most
  double seconds = 20;           ///< wall time at most
  std::string strategy = "auto"; ///< auto, exhaustive, halving, evolutionary
  int repeats = 10;              ///< timed launches per configuration
};

/// Makes the database at `path` (empty: default_tuning_database_path()) the runtime's source of
/// configurations (a shape's winner, else the nearest tuned shape's, else the kernel's
/// defaults) and of compiled winners; when the runtime tunes on first use
/// (RuntimeOptions::tune_on_first_use, TILEJIT_TUNE=1), a shape with no winner is tuned with
/// `budget` and its winner stored. Needs a GPU (the tuning key names it); throws NoGpuError.
void use_tuning_database(Runtime& rt, const std::string& path = "",
                         const TuningBudget& budget = {});

/// What tune_launch() did.
struct TuningResult {
  Config config;      ///< what a launch of this shape now uses
  bool tuned = false; ///< false: the database already had a winner, nothing was measured
  std::string why;    ///< "tuned 32 configurations in 4.1 s...", or where the config came from
};

/// Tunes `kernel` on these arguments' shape now, unless the database at `path` (empty: the
/// default) already has a winner for it, stores every trial and the winner, and makes the
/// database the runtime's (as use_tuning_database). Each candidate must reproduce what the
/// kernel's default configuration writes on these inputs; the tensors the kernel writes are
/// left as they were. `options.config` forces generics or tunables, `options.stream` is where
/// the inputs are ready.
TuningResult tune_launch(Runtime& rt, KernelRef kernel, const std::vector<Arg>& args,
                         const LaunchOptions& options = {}, const std::string& path = "",
                         const TuningBudget& budget = {});

} // namespace tilejit
