// A kernel's tuning space: every combination of its tunables' choices that satisfies its
// `where` constraints (and the `threads` rule) under fixed generic values and a shared-memory
// limit. Pruning happens here, before anything is compiled.
#pragma once

#include "compiler/specialise.h"
#include "dsl/ast.h"
#include "tuner/tune_key.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tilejit {

/// One tunable and the values the space takes for it, in declaration order.
struct TunableAxis {
  std::string name;
  std::vector<int64_t> values;
  size_t default_position = 0; ///< position of the kernel's default (or the fixed value)
};

/// Why some configurations were pruned: one entry per constraint that failed first for them.
struct PruneReason {
  std::string constraint; ///< "gemm.tile:7: ((BM * BN) <= (128 * 128))"
  size_t count = 0;       ///< configurations this constraint pruned
};

/// A pruned configuration and the constraint it breaks (the first one, in source order).
struct PrunedConfig {
  TuneConfig config;
  std::string constraint;
};

/// The valid configurations of one kernel variant, numbered 0..size()-1 in product order (the
/// first tunable varies slowest). Built by one pass over the cartesian product that stores a
/// verdict per point, so configs, indices and neighbours are index arithmetic afterwards.
class SearchSpace {
public:
  /// Most points the product may have: beyond this, enumeration costs seconds and memory.
  static constexpr uint64_t max_points = uint64_t(1) << 24;

  /// `fixed` holds the generics (all without a default must be given) and optionally tunables
  /// to pin to one value (`tune --set BN=64`). `smem_limit` is SMEM in `where` (bytes per
  /// block); `warp` the target's lockstep width (32; 64 on gfx90a), of which `threads` must be
  /// a multiple. Throws tilejit::Error when a value is not one of its choices, a constraint
  /// uses a name with no compile-time value, the product exceeds max_points, or nothing is
  /// valid.
  SearchSpace(const dsl::Kernel& kernel, const Bindings& fixed, int64_t smem_limit, int warp = 32);

  const std::string& kernel_name() const { return kernel_name_; }
  /// The generic values every config carries (completed with declared defaults).
  const Bindings& generics() const { return generics_; }
  const std::vector<TunableAxis>& axes() const { return axes_; }

  /// Number of valid configurations (at least 1).
  size_t size() const { return valid_.size(); }
  /// Number of points in the cartesian product (valid + pruned).
  uint64_t product_size() const { return verdicts_.size(); }
  /// Number of pruned points.
  size_t pruned() const { return verdicts_.size() - valid_.size(); }
  /// Pruned counts per constraint, in source order (constraints that pruned nothing omitted).
  std::vector<PruneReason> prune_reasons() const;
  /// Up to `limit` pruned configurations in product order, each with the constraint it breaks
  /// (for recording them as `pruned` trials or printing them).
  std::vector<PrunedConfig> pruned_configs(size_t limit = SIZE_MAX) const;

  /// Config `i` as complete Bindings: generics + every tunable (what specialise takes).
  Bindings config(size_t i) const;
  /// Config `i` as tunable values only (what the database stores).
  TuneConfig tune_config(size_t i) const;
  /// "BN=32,CHUNK=256" for config `i` (tunables only).
  std::string describe(size_t i) const { return config_to_string(tune_config(i)); }

  /// Index of a configuration given by its tunables; nullopt when a tunable is missing or
  /// unknown, a value is not in the space, or the point was pruned.
  std::optional<size_t> index_of(const TuneConfig& config) const;
  /// Same for Bindings (generics + tunables, as config() returns); generics given must match.
  std::optional<size_t> index_of(const Bindings& config) const;
  /// When a configuration is not in the space, why ("CHUNK=48 is not one of 64|128|..." or the
  /// broken constraint); empty when it is in the space.
  std::string why_not(const TuneConfig& config) const;

  /// The kernel's declared defaults (`= v`, else the first choice). When that point breaks a
  /// constraint, the valid config that changes the fewest tunables, by the fewest steps along
  /// their choices, keeping the earlier-declared ones where that still ties.
  size_t default_index() const { return default_index_; }
  /// Empty when the declared default is valid; otherwise says which constraint it breaks and
  /// which config stands in for it.
  const std::string& default_note() const { return default_note_; }

  /// Valid configs that differ from `i` in one tunable by one step along its choice list,
  /// ascending (for evolutionary search).
  std::vector<size_t> neighbours(size_t i) const;

private:
  std::vector<size_t> positions_of_point(uint64_t point) const;
  uint64_t point_of_positions(const std::vector<size_t>& positions) const;
  std::optional<size_t> index_of_point(uint64_t point) const;
  /// Point for a config, or a message saying why it is not in the product.
  std::optional<uint64_t> point_of(const TuneConfig& config, std::string* why) const;
  void enumerate(const dsl::Kernel& kernel, int64_t smem_limit, int warp);
  void choose_default();

  std::string kernel_name_;
  Bindings generics_;
  std::vector<TunableAxis> axes_;
  std::vector<uint64_t> strides_;  ///< product index = sum(position * stride)
  std::vector<std::string> rules_; ///< constraint texts; verdict k+1 = rules_[k] failed
  std::vector<uint16_t> verdicts_; ///< per product point: 0 = valid
  std::vector<uint64_t> valid_;    ///< product index of valid config i (ascending)
  size_t default_index_ = 0;
  std::string default_note_;
};

/// Whether `complete` (every generic and tunable bound) satisfies all of the kernel's `where`
/// constraints, with SMEM = smem_limit, and gives `threads` a multiple of `warp` in warp..1024
/// (where the host can evaluate it). A value that is not an integer counts as breaking one.
bool bindings_hold(const dsl::Kernel& kernel, const Bindings& complete, int64_t smem_limit,
                   int warp = 32);

/// `given` (generics, and any tunables pinned) completed with the kernel's declared defaults;
/// where those break one of its `where` constraints, the search space's stand-in for them (the
/// valid configuration nearest the defaults, the given values kept), with `note` saying so.
/// Given values that no configuration satisfies are returned as they are, for specialise to
/// refuse with the constraint named. What a launch and the interpreter run when nothing chose.
Bindings complete_valid_bindings(const dsl::Kernel& kernel, const Bindings& given,
                                 int64_t smem_limit, std::string* note = nullptr, int warp = 32);

} // namespace tilejit
