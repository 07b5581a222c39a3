// The tuning loop: for one problem (a kernel, its arguments on the GPU, a correctness check),
// propose configurations from the kernel's search space, compile them in parallel, check each
// candidate's output before it may win, time it the way peers are timed, keep every trial and
// the winner in the database. A warm database answers without compiling or measuring.
#pragma once

#include "tuner/db_config_selector.h"
#include "tuner/kernel_timer.h"
#include "tuner/search_strategy.h"
#include "tuner/tune_database.h"

#include <tilejit/tilejit.h>

#include <functional>
#include <string>
#include <vector>

namespace tilejit {

struct TuneProgress {
  int done = 0, total = 0; ///< trials so far / planned (total may be an estimate)
  double best_ms = 0;      ///< 0 before any success
  std::string best_config;
  double elapsed_s = 0, eta_s = 0;
};

struct TuneRequest {
  Runtime* runtime = nullptr;
  KernelRef kernel;
  std::vector<Arg> args; ///< device tensors and scalars, as for a launch
  Config generics;       ///< generic values no tensor fixes (e.g. G); the rest are inferred
  /// Poisons every output before a checked run (in-place kernels restore inputs here too).
  std::function<void()> prepare_check;
  /// After a checked run: true when the outputs are right; `why` says what is wrong.
  std::function<bool(std::string* why)> check;
  std::string strategy = "auto";
  Budget budget;
  uint64_t seed = 1;
  int repeats = 20;
  double compile_timeout_s = 120;
  unsigned compile_threads = 0; ///< 0 = hardware threads
  bool retune = false;          ///< measure again even if the database has a winner
  /// Measure the winners of the nearest shapes already tuned (same kernel, source, generics
  /// and machine) first, at most this many; 0 = start from the default alone.
  int warm_start = 8;
  /// Configurations measured right after those nearby winners (a workload's suggestions:
  /// Step::suggested), each given by some tunables, the rest at their defaults.
  std::vector<Config> suggested;
  std::function<void(const TuneProgress&)> progress;
  std::function<void(const std::string&)> log;
};

struct TuneOutcome {
  TuneKey key;
  Config winner;
  double winner_ms = 0;
  Config default_config;
  double default_ms = 0; ///< 0 when the default was not measured (warm database)
  int trials = 0, measured = 0, failed = 0, compiled = 0;
  bool from_database = false; ///< the winner was already tuned; nothing was compiled or timed
  std::string strategy, stop_reason;
};

/// Config indices of the winners of the nearest shapes tuned before (nearest first, distinct,
/// at most `limit`), for TuneRequest::warm_start. Winners whose config is no longer in the
/// space (the tune clause changed, or a constraint prunes it) are skipped.
/// The indices of `suggested` configurations in `space` (tunables not named keep the
/// default's value), in order, without repeats or ones already in `taken`; those not in the
/// space (a value not offered, a broken constraint) are left out and named in `skipped`.
std::vector<size_t> suggested_seeds(const SearchSpace& space, const std::vector<Config>& suggested,
                                    const std::vector<size_t>& taken,
                                    std::vector<std::string>* skipped = nullptr);
std::vector<size_t> warm_start_seeds(TuneDatabase& db, const TuneKey& key, const SearchSpace& space,
                                     int limit);

/// Tunes one problem. Throws tilejit::Error when no configuration runs correctly.
TuneOutcome tune(const TuneRequest& request, TuneDatabase& db, const TuneIdentity& identity);

/// The identity of this machine's GPU and compiler (for keys).
TuneIdentity current_identity();
/// The same for a target language: "cuda" (current_identity()), or "hip": AMD GPU 0 through the
/// HIP runtime with HIPRTC's version (throws NoGpuError "no AMD GPU ..." without one).
TuneIdentity current_identity(const std::string& language);
/// The identity of `rt`'s GPU (its device ordinal, its target's API: an AMD GPU's for a gfx
/// target). Throws NoGpuError without that GPU.
TuneIdentity current_identity(Runtime& rt);

} // namespace tilejit
