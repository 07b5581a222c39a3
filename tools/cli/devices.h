// `tune --devices all|I,J,...`: a tuning run spread over a host's GPUs, one worker process per
// GPU (CUDA_VISIBLE_DEVICES set to it), each tuning a slice of the shapes as `--shard` deals
// them, all writing one database (whose concurrent writers are safe: tune_database.h).
#pragma once

#include "tools/cli/shard.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tilejit::cli {

/// What --devices asked for: every GPU, or these device indices (distinct, in the order given).
struct DeviceSpec {
  bool all = false;
  std::vector<int> indices;
  bool given() const { return all || !indices.empty(); }
};

/// "all" or "I,J,..." (indices 0..1023, each once); empty: not given. Throws tilejit::Error
/// naming --devices, what was given and what it takes.
DeviceSpec parse_devices(const std::string& text);

/// The devices a run uses on a host with `count` GPUs; throws for an index past them.
std::vector<int> resolve_devices(const DeviceSpec& spec, int count);

/// Worker j of `workers` tunes this slice of what `outer` (the run's own --shard) covers: slice
/// outer.index + outer.count * j of outer.count * workers, so that the workers' slices together
/// are exactly `outer`'s shapes, each once.
Shard worker_shard(const Shard& outer, size_t j, size_t workers);

/// The options of a `tune --workload` run that its workers repeat.
struct TuneWorkerArgs {
  std::string workload, dtype, case_filter, strategy, budget;
  std::vector<std::string> shape;
  uint64_t seed = 1;
  int repeats = 20, warm_start = 8;
  bool retune = false, verbose = false;
};

/// The command line of the worker for slice `shard`: `program` (this tilejit), the database by
/// its path, the run's options, the slice as --shard (the GPU comes from CUDA_VISIBLE_DEVICES).
std::vector<std::string> tune_worker_argv(const std::string& program, const std::string& db,
                                          const TuneWorkerArgs& args, const Shard& shard);

/// CUDA_VISIBLE_DEVICES for the worker on device `device` (an index among the GPUs this process
/// sees): the parent's own CUDA_VISIBLE_DEVICES entry for it when that is set (`parent`, may be
/// null), else the index itself.
std::string visible_device(int device, const char* parent);

} // namespace tilejit::cli
