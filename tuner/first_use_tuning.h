// Tuning on first use, as Triton's autotuner does: a launch whose shape has no tuned winner is
// tuned there and then (a small budget), the winner stored in the database, and launched. Off
// by default (RuntimeOptions::tune_on_first_use, or TILEJIT_TUNE=1).
//
// With no reference to check against, each candidate must reproduce what the kernel's default
// configuration writes on the caller's own inputs (relative error 1e-2 for 16-bit outputs,
// 1e-4 otherwise, NaN where the default has NaN). The tensors the kernel writes are saved
// before tuning and put back before every checked run and after tuning, so the caller's
// launch sees its buffers as it left them (in-place kernels included).
#pragma once

#include "tuner/db_config_selector.h"
#include "tuner/search_strategy.h"
#include "tuner/tune_database.h"

#include <tilejit/tilejit.h>

#include <memory>
#include <string>

namespace tilejit {

struct FirstUseTuningOptions {
  Budget budget = default_first_use_budget();
  std::string strategy = "auto";
  int repeats = 10;
  int warm_start = 8;
  /// 32 trials or 20 s per shape, whichever comes first: a launch pays this once per shape.
  static Budget default_first_use_budget() {
    Budget b;
    b.trials = 32;
    b.seconds = 20;
    return b;
  }
};

/// The FirstUseTuner for Runtime::set_first_use_tuner: tunes a launch's key when the
/// database has no winner for it (and TILEJIT_FORCE_CONFIG is not set), stores every trial and
/// the winner, and returns the winner. Errors while tuning fall back to the selector's choice,
/// said in `why`.
FirstUseTuner make_first_use_tuner(std::shared_ptr<TuneDatabase> db, TuneIdentity identity,
                                   FirstUseTuningOptions options = {});

/// Makes `db` the runtime's source of configurations (exact winner, nearest tuned shape,
/// defaults), of compiled winners' binaries, and of tuning on first use (which runs only when
/// the runtime's tune_on_first_use is on). Needs a GPU (the identity names it).
void use_tuning_database(Runtime& rt, std::shared_ptr<TuneDatabase> db,
                         FirstUseTuningOptions options = {});

} // namespace tilejit
