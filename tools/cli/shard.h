// `tune --shard I/N`: a tuning run's shapes split over N jobs (a Slurm job array, a Kubernetes
// indexed Job), job I taking every N-th shape from the I-th, so that N machines share one
// workload's tuning and `tilejit cache import` merges their databases.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tilejit::cli {

/// Slice `index` of `count` (0 <= index < count).
struct Shard {
  int64_t index = 0, count = 1;
};

/// "I/N" with 0 <= I < N <= 1000000 (empty: the whole run, 0/1). Throws tilejit::Error naming
/// --shard, what was given and what it takes otherwise.
Shard parse_shard(const std::string& text);

/// Slice `s` of `all`: every N-th item from the I-th, in order (round-robin, so that the slices
/// share a grid's small and large shapes alike). Every job computes the same list, so the N
/// slices together are `all`, each item in exactly one.
template <class T> std::vector<T> take_shard(std::vector<T> all, const Shard& s) {
  if (s.count == 1) return all;
  std::vector<T> out;
  for (size_t i = static_cast<size_t>(s.index); i < all.size(); i += static_cast<size_t>(s.count))
    out.push_back(std::move(all[i]));
  return out;
}

} // namespace tilejit::cli
