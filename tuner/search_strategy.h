// Search strategies: which configurations of a SearchSpace to measure next, learning from the
// costs the caller reports. The caller compiles a proposed batch in parallel, times it, reports
// every proposal, then asks for the next batch. Deterministic for a given seed.
#pragma once

#include "tuner/search_space.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace tilejit {

/// How much measuring a search may do. Both limits apply when both are set; neither = no limit.
struct Budget {
  std::optional<int64_t> trials; ///< measurements (one per reported proposal)
  std::optional<double> seconds; ///< wall time from the first next_batch()
  bool unlimited() const { return !trials && !seconds; }
};

/// Parses `--budget`: "200" (trials), "90s", "2.5m" or "1h" (time). Throws tilejit::Error
/// naming the text when it is neither, or is not positive.
Budget parse_budget(const std::string& text);
/// "200 trials", "90 s", "200 trials or 90 s", "unlimited".
std::string to_string(const Budget& budget);

/// Seconds on a monotonic clock. Injected so that tests control time.
using Clock = std::function<double()>;
/// std::chrono::steady_clock in seconds.
double steady_seconds();

/// Measure config `config_index` of the space with `repeats` timed runs.
struct Proposal {
  size_t config_index = 0;
  int repeats = 1;
  bool operator==(const Proposal&) const = default;
};

struct StrategyOptions {
  uint64_t seed = 0; ///< every random choice comes from std::mt19937_64(seed)
  Budget budget;
  size_t batch_size = 16; ///< most proposals per batch (what the caller compiles at once)
  int repeats = 20;       ///< exhaustive and evolutionary; halving's last rungs (the cap)
  int min_repeats = 5;    ///< halving's first rung; each later rung multiplies it by eta
  int eta = 3;            ///< halving keeps the best 1/eta of each rung
  /// Halving's first-rung size; 0 = the most that fits a trial budget, else 64.
  size_t sample_size = 0;
  size_t population = 16; ///< evolutionary: configs per generation
  int patience = 3;       ///< evolutionary without a budget: generations without improvement
  /// Configs measured first, right after the default (halving's first bracket, evolution's
  /// first generation; exhaustive measures everything anyway): typically the winners of the
  /// nearest shapes already tuned, so a budgeted search starts from what won there.
  std::vector<size_t> seeds;
  Clock clock; ///< empty = steady_seconds
};

/// The best configuration found so far and its cost.
struct BestConfig {
  size_t config_index = 0;
  double cost_ms = 0;
  int repeats = 0; ///< of the measurement the cost comes from
};

/// Base of all strategies: budget accounting, failure bookkeeping and the best so far.
/// Contract: report every proposal of a batch (cost or nullopt) before the next next_batch().
/// Not thread-safe: one thread drives it (compile the batch in parallel, then report).
class SearchStrategy {
public:
  SearchStrategy(const SearchSpace& space, StrategyOptions options);
  virtual ~SearchStrategy() = default;
  SearchStrategy(const SearchStrategy&) = delete;
  SearchStrategy& operator=(const SearchStrategy&) = delete;

  /// "exhaustive", "halving" or "evolutionary".
  virtual const char* name() const = 0;

  /// The next proposals (at most batch_size, never a failed config, no duplicates within a
  /// batch), or nullopt when the search is complete or the budget is spent (see stop_reason).
  std::optional<std::vector<Proposal>> next_batch();
  /// The measured median of a proposal in ms, or nullopt when it failed (compile error, wrong
  /// result, timeout): a failed config is never proposed again nor chosen as best.
  void report(size_t config_index, std::optional<double> cost_ms);

  /// The strategy's pick so far; nullopt before any config succeeded.
  std::optional<BestConfig> best() const;
  int64_t trials() const { return trials_; }
  size_t failed_count() const { return failed_.size(); }
  bool failed(size_t config_index) const { return failed_.count(config_index) != 0; }
  /// Seconds since the first next_batch() on the injected clock (0 before).
  double elapsed_seconds() const;
  /// Whether a time budget is set and spent (the tuner asks between trials of a batch: one
  /// batch of slow trials must not run far past --budget 60s).
  bool time_budget_spent() const;
  /// Ends the search before the batch's remaining proposals are reported: they are dropped
  /// (never measured, never failed) and next_batch() returns nullopt with the time budget as
  /// the stop reason.
  void stop_on_time_budget();
  /// Why next_batch() returned nullopt ("search complete", "trial budget (200) spent", ...);
  /// empty while the search runs.
  const std::string& stop_reason() const { return stop_reason_; }

protected:
  /// Up to `max_count` proposals; empty when the strategy has nothing more to measure.
  /// Called only when every earlier proposal has been reported.
  virtual std::vector<Proposal> propose(size_t max_count) = 0;
  /// Called after the base class recorded a report.
  virtual void on_report(size_t /*config_index*/, std::optional<double> /*cost_ms*/) {}
  /// Default pick: the config whose latest most-repeated measurement is best (more repeats
  /// win over fewer: they are the ones the strategy re-measured on purpose); ties: lower index.
  virtual std::optional<BestConfig> choose_best() const;

  /// Uniform in [0, n): rejection sampling, so results do not depend on the standard
  /// library's distributions (which differ between libstdc++ and libc++).
  uint64_t uniform_below(uint64_t n);
  /// Fisher-Yates with uniform_below.
  void shuffle(std::vector<size_t>& items);
  /// The cost of a config's most-repeated (then latest) ok measurement.
  std::optional<BestConfig> measurement(size_t config_index) const;
  /// Trials the budget still allows (counting proposals not yet reported); nullopt = no limit.
  std::optional<int64_t> trials_left() const;

  const SearchSpace& space_;
  StrategyOptions options_;

private:
  std::mt19937_64 rng_;
  std::map<size_t, BestConfig> measured_; ///< per config: most-repeated ok measurement
  std::set<size_t> failed_;
  std::map<size_t, int> outstanding_; ///< proposed, not yet reported -> repeats
  int64_t issued_ = 0, trials_ = 0;
  std::optional<double> start_;
  std::string stop_reason_;
};

/// Every valid config in index order, the default first.
class ExhaustiveSearch : public SearchStrategy {
public:
  using SearchStrategy::SearchStrategy;
  const char* name() const override { return "exhaustive"; }

protected:
  std::vector<Proposal> propose(size_t max_count) override;

private:
  size_t next_ = 0; ///< position in the order default, 0, 1, ... (default skipped)
  bool default_done_ = false;
};

/// Successive halving: a random sample (the default and the seeds included) measured with
/// min_repeats, the best 1/eta re-measured with eta times the repeats, until one remains: the
/// bracket's finalist. While budget remains and unsampled configs exist, another bracket runs
/// with the finalist in it, so a new finalist has beaten the old one under equal conditions.
/// The next bracket holds the finalist's unsampled neighbours (one step along one tunable) when
/// it has any — a local refinement that climbs from the finalist while it keeps improving —
/// and a fresh random sample otherwise. With a trial budget smaller than the space, the first
/// random bracket takes at most half of it, leaving the rest to refinement. Every bracket's
/// last decision is made with the full repeats: rungs measured with fewer keep at least two
/// configs, the carried finalist (in the first bracket, the default) among them.
class RandomHalving : public SearchStrategy {
public:
  RandomHalving(const SearchSpace& space, StrategyOptions options);
  const char* name() const override { return "halving"; }
  /// Trials one bracket of `n` configs takes: n + n/eta + ... over rungs of more than one
  /// (the last survivor is the finalist and is not measured again). Rungs before
  /// `rungs_to_cap` (those measured with fewer than the full repeats) keep at least two.
  static int64_t bracket_trials(size_t n, int eta, int rungs_to_cap = 0);

protected:
  std::vector<Proposal> propose(size_t max_count) override;
  void on_report(size_t config_index, std::optional<double> cost_ms) override;
  std::optional<BestConfig> choose_best() const override;

private:
  /// Repeats of rung `rung`: min_repeats * eta^rung, capped at the full repeats.
  int rung_repeats(int rung) const;
  /// Index of the first rung measured with the full repeats.
  int rungs_to_cap() const;
  /// Starts a bracket of up to n configs (fresh samples plus `carry`); false if none left.
  bool start_bracket(size_t n, std::optional<size_t> carry);
  /// Starts a bracket of the finalist and up to n - 1 of its unsampled, not failed neighbours;
  /// false when it has none.
  bool start_neighbour_bracket(size_t n);
  /// Makes `members` the first rung of a new bracket.
  void open_bracket(std::vector<size_t> members);
  /// All of the current rung is measured: keep the best, or close the bracket.
  void close_rung();
  /// Size of the next bracket given the budget left; 0 = no further bracket.
  size_t next_bracket_size() const;

  std::vector<char> sampled_; ///< per config: was in some bracket
  size_t unsampled_ = 0;
  std::vector<size_t> rung_; ///< members of the current rung
  size_t next_member_ = 0;   ///< next member of rung_ to propose
  std::map<size_t, double> rung_costs_;
  int rung_index_ = 0;
  size_t first_bracket_size_ = 0;
  int brackets_ = 0;
  bool bracket_open_ = false;
  std::optional<size_t> finalist_; ///< of the last completed bracket
  /// The finalist carried into the current bracket: it stays to the bracket's last rung, so a
  /// newcomer replaces it only by beating it with the full repeats (not by a lucky first rung).
  std::optional<size_t> defender_;
};

/// Evolutionary search: a first generation of the default, the seeds and random configs; each next
/// generation the unmeasured neighbours of the best configs (mutations one step along one
/// tunable), topped up with random configs.
class EvolutionarySearch : public SearchStrategy {
public:
  EvolutionarySearch(const SearchSpace& space, StrategyOptions options);
  const char* name() const override { return "evolutionary"; }

protected:
  std::vector<Proposal> propose(size_t max_count) override;

private:
  void next_generation();

  std::vector<char> seen_; ///< per config: proposed once
  size_t unseen_ = 0;
  std::vector<size_t> generation_;
  size_t next_member_ = 0;
  int generations_ = 0;
  int stale_ = 0; ///< generations in a row that did not improve the best
  std::optional<double> best_before_;
};

/// The names make_strategy takes.
const std::vector<std::string>& strategy_names();
/// "exhaustive" when the whole space fits the trial budget (or has at most 64 points and no
/// trial budget), else "halving".
std::string choose_strategy(size_t space_size, const Budget& budget);
/// A strategy by name ("auto" = choose_strategy). Throws tilejit::Error for an unknown name,
/// listing the names. `space` must outlive the strategy.
std::unique_ptr<SearchStrategy> make_strategy(const std::string& name, const SearchSpace& space,
                                              const StrategyOptions& options);

} // namespace tilejit
