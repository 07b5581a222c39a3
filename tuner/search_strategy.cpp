// The search strategies and their shared bookkeeping (budget, failures, best so far).
#include "tuner/search_strategy.h"

#include "support/error.h"
#include "support/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>

namespace tilejit {

namespace {

// "90", "2.5", "1e+09": format_double would print 90 as "9e+01".
std::string seconds_text(double seconds) {
  return fmt::format("{:.6g}", seconds);
}

} // namespace

// --- budget -------------------------------------------------------------------------------

Budget parse_budget(const std::string& text) {
  std::string t(trim(text));
  auto bad = [&](const std::string& why) {
    return Error(str("bad --budget '", text, "': ", why,
                     "; expected a number of trials (200) or a time (90s, 2.5m, 1h)"));
  };
  if (t.empty()) throw bad("it is empty");
  Budget budget;
  char unit = t.back();
  if (unit == 's' || unit == 'm' || unit == 'h') {
    std::string number(trim(std::string_view(t).substr(0, t.size() - 1)));
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(number.c_str(), &end);
    if (number.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
      throw bad(str("'", number, "' is not a number"));
    if (v <= 0) throw bad("the time must be positive");
    budget.seconds = v * (unit == 'h' ? 3600 : unit == 'm' ? 60 : 1);
    return budget;
  }
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE) throw bad("not a whole number of trials nor a time");
  if (v <= 0) throw bad("the number of trials must be positive");
  budget.trials = v;
  return budget;
}

std::string to_string(const Budget& budget) {
  std::vector<std::string> parts;
  if (budget.trials) parts.push_back(str(*budget.trials, " trials"));
  if (budget.seconds) parts.push_back(str(seconds_text(*budget.seconds), " s"));
  return parts.empty() ? "unlimited" : join(parts, " or ");
}

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// --- SearchStrategy -----------------------------------------------------------------------

SearchStrategy::SearchStrategy(const SearchSpace& space, StrategyOptions options)
    : space_(space), options_(std::move(options)), rng_(options_.seed) {
  if (!options_.clock) options_.clock = steady_seconds;
  if (options_.batch_size == 0) throw Error("the tuning batch size must be at least 1");
  if (options_.repeats < 1 || options_.min_repeats < 1)
    throw Error(str("tuning repeats must be at least 1 (repeats=", options_.repeats,
                    ", min_repeats=", options_.min_repeats, ")"));
  if (options_.eta < 2) throw Error(str("halving's eta must be at least 2, got ", options_.eta));
}

std::optional<std::vector<Proposal>> SearchStrategy::next_batch() {
  TJ_ICHECK(outstanding_.empty(), "next_batch() called with ", outstanding_.size(),
            " proposals not reported");
  if (!stop_reason_.empty()) return std::nullopt;
  if (!start_) start_ = options_.clock();
  const Budget& budget = options_.budget;
  if (budget.trials && issued_ >= *budget.trials) {
    stop_reason_ = str("trial budget (", *budget.trials, ") spent");
    return std::nullopt;
  }
  if (budget.seconds && elapsed_seconds() >= *budget.seconds) {
    stop_reason_ = str("time budget (", seconds_text(*budget.seconds), " s) spent");
    return std::nullopt;
  }
  size_t max_count = options_.batch_size;
  if (auto left = trials_left()) max_count = std::min<size_t>(max_count, *left);
  std::vector<Proposal> batch = propose(max_count);
  if (batch.empty()) {
    stop_reason_ = "search complete";
    return std::nullopt;
  }
  TJ_ICHECK(batch.size() <= max_count, name(), " proposed ", batch.size(), " > ", max_count);
  for (const Proposal& p : batch) {
    TJ_ICHECK(p.config_index < space_.size(), name(), " proposed config ", p.config_index,
              " outside a space of ", space_.size());
    TJ_ICHECK(!failed(p.config_index), name(), " re-proposed failed config ", p.config_index);
    TJ_ICHECK(p.repeats >= 1, name(), " proposed ", p.repeats, " repeats");
    bool fresh = outstanding_.emplace(p.config_index, p.repeats).second;
    TJ_ICHECK(fresh, name(), " proposed config ", p.config_index, " twice in one batch");
  }
  issued_ += static_cast<int64_t>(batch.size());
  return batch;
}

void SearchStrategy::report(size_t config_index, std::optional<double> cost_ms) {
  auto it = outstanding_.find(config_index);
  TJ_ICHECK(it != outstanding_.end(), "report for config ", config_index,
            " which is not an outstanding proposal");
  int repeats = it->second;
  outstanding_.erase(it);
  ++trials_;
  // A cost that is not a finite non-negative time is a broken measurement: treat as failed.
  if (cost_ms && (!std::isfinite(*cost_ms) || *cost_ms < 0)) cost_ms.reset();
  if (!cost_ms) {
    failed_.insert(config_index);
    measured_.erase(config_index);
  } else {
    auto m = measured_.find(config_index);
    if (m == measured_.end() || repeats >= m->second.repeats)
      measured_[config_index] = BestConfig{config_index, *cost_ms, repeats};
  }
  on_report(config_index, cost_ms);
}

std::optional<BestConfig> SearchStrategy::best() const {
  return choose_best();
}

std::optional<BestConfig> SearchStrategy::choose_best() const {
  std::optional<BestConfig> best;
  for (const auto& [index, m] : measured_) {
    if (!best || m.repeats > best->repeats ||
        (m.repeats == best->repeats && m.cost_ms < best->cost_ms))
      best = m;
  }
  return best;
}

std::optional<BestConfig> SearchStrategy::measurement(size_t config_index) const {
  auto it = measured_.find(config_index);
  if (it == measured_.end()) return std::nullopt;
  return it->second;
}

std::optional<int64_t> SearchStrategy::trials_left() const {
  if (!options_.budget.trials) return std::nullopt;
  return std::max<int64_t>(0, *options_.budget.trials - issued_);
}

bool SearchStrategy::time_budget_spent() const {
  return options_.budget.seconds && elapsed_seconds() >= *options_.budget.seconds;
}

void SearchStrategy::stop_on_time_budget() {
  outstanding_.clear();
  if (stop_reason_.empty())
    stop_reason_ = str("time budget (", seconds_text(*options_.budget.seconds), " s) spent");
}

double SearchStrategy::elapsed_seconds() const {
  return start_ ? options_.clock() - *start_ : 0;
}

uint64_t SearchStrategy::uniform_below(uint64_t n) {
  TJ_ICHECK(n > 0, "uniform_below(0)");
  // Reject the lowest (2^64 mod n) values so that every residue is equally likely.
  uint64_t threshold = (0 - n) % n;
  uint64_t x;
  do x = rng_();
  while (x < threshold);
  return x % n;
}

void SearchStrategy::shuffle(std::vector<size_t>& items) {
  for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[uniform_below(i)]);
}

// --- ExhaustiveSearch ---------------------------------------------------------------------

std::vector<Proposal> ExhaustiveSearch::propose(size_t max_count) {
  std::vector<Proposal> out;
  const size_t def = space_.default_index();
  if (!default_done_ && max_count > 0) {
    out.push_back({def, options_.repeats});
    default_done_ = true;
  }
  while (out.size() < max_count && next_ < space_.size()) {
    size_t i = next_++;
    if (i != def) out.push_back({i, options_.repeats});
  }
  return out;
}

// --- RandomHalving ------------------------------------------------------------------------

RandomHalving::RandomHalving(const SearchSpace& space, StrategyOptions options)
    : SearchStrategy(space, std::move(options)), sampled_(space.size(), 0),
      unsampled_(space.size()) {}

int64_t RandomHalving::bracket_trials(size_t n, int eta, int rungs_to_cap) {
  int64_t total = 0;
  size_t m = n;
  for (int rung = 0; m > 0; ++rung) {
    total += static_cast<int64_t>(m);
    if (m == 1) break;
    size_t next = std::max<size_t>(1, m / eta);
    if (next == 1 && rung < rungs_to_cap) next = 2; // decided only with the full repeats
    if (next == 1) break; // the last survivor is the finalist: no rung of one is measured
    m = next;
  }
  return total;
}

int RandomHalving::rung_repeats(int rung) const {
  const double cap = std::max(options_.repeats, options_.min_repeats);
  return static_cast<int>(
      std::min<double>(options_.min_repeats * std::pow(double(options_.eta), rung), cap));
}

int RandomHalving::rungs_to_cap() const {
  int rung = 0;
  while (rung < 30 && rung_repeats(rung) < std::max(options_.repeats, options_.min_repeats)) ++rung;
  return rung;
}

size_t RandomHalving::next_bracket_size() const {
  // Fresh configs available, plus the carried finalist.
  size_t available = unsampled_ + (finalist_ ? 1 : 0);
  size_t n = 0;
  if (auto left = trials_left()) {
    int64_t allowed = *left;
    // A first bracket that cannot cover the space leaves half the budget to refinement.
    if (brackets_ == 0 && static_cast<int64_t>(space_.size()) > *left) allowed = (*left + 1) / 2;
    size_t cap = std::min<size_t>(available, static_cast<size_t>(allowed));
    n = cap;
    while (n > 0 && bracket_trials(n, options_.eta, rungs_to_cap()) > allowed) --n;
  } else if (brackets_ == 0) {
    n = options_.sample_size ? options_.sample_size : 64;
  } else if (options_.budget.seconds) {
    n = first_bracket_size_;
  }
  if (brackets_ == 0 && options_.sample_size) n = std::min(n, options_.sample_size);
  n = std::min(n, available);
  // A later bracket needs a fresh config besides the finalist to be worth running.
  if (brackets_ > 0 && (n < 2 || unsampled_ == 0)) return 0;
  return n;
}

bool RandomHalving::start_bracket(size_t n, std::optional<size_t> carry) {
  if (n == 0) return false;
  std::vector<size_t> members;
  auto take = [&](size_t i) {
    members.push_back(i);
    if (!sampled_[i]) sampled_[i] = 1, --unsampled_;
  };
  if (brackets_ == 0) {
    take(space_.default_index());
    for (size_t seed : options_.seeds)
      if (members.size() < n && seed < sampled_.size() && !sampled_[seed]) take(seed);
  }
  // The first bracket defends the default: a config replaces it only by beating it with the
  // full repeats, so tuning never ends on something slower than the default.
  defender_.reset();
  if (brackets_ == 0) defender_ = space_.default_index();
  if (carry && !failed(*carry)) take(*carry), defender_ = *carry;
  if (members.size() < n && unsampled_ > 0) {
    std::vector<size_t> pool;
    pool.reserve(unsampled_);
    for (size_t i = 0; i < sampled_.size(); ++i)
      if (!sampled_[i]) pool.push_back(i);
    // Partial Fisher-Yates: the first k of a random permutation.
    size_t k = std::min(pool.size(), n - members.size());
    for (size_t j = 0; j < k; ++j) {
      std::swap(pool[j], pool[j + uniform_below(pool.size() - j)]);
      take(pool[j]);
    }
  }
  if (members.empty()) return false;
  if (brackets_ == 0) first_bracket_size_ = members.size();
  open_bracket(std::move(members));
  return true;
}

void RandomHalving::open_bracket(std::vector<size_t> members) {
  ++brackets_;
  rung_ = std::move(members);
  next_member_ = 0;
  rung_costs_.clear();
  rung_index_ = 0;
  bracket_open_ = true;
}

bool RandomHalving::start_neighbour_bracket(size_t n) {
  if (!finalist_ || n < 2) return false;
  std::vector<size_t> members = {*finalist_};
  for (size_t i : space_.neighbours(*finalist_)) {
    if (members.size() >= n) break;
    if (sampled_[i] || failed(i)) continue;
    sampled_[i] = 1;
    --unsampled_;
    members.push_back(i);
  }
  if (members.size() < 2) return false;
  defender_ = *finalist_;
  open_bracket(std::move(members));
  return true;
}

void RandomHalving::on_report(size_t config_index, std::optional<double> cost_ms) {
  if (cost_ms) rung_costs_[config_index] = *cost_ms;
}

void RandomHalving::close_rung() {
  std::vector<std::pair<double, size_t>> ok;
  for (size_t i : rung_) {
    auto it = rung_costs_.find(i);
    if (it != rung_costs_.end()) ok.emplace_back(it->second, i);
  }
  std::sort(ok.begin(), ok.end()); // by cost, then by index
  size_t keep = std::min(ok.size(), std::max<size_t>(1, rung_.size() / options_.eta));
  // A rung measured with fewer than the full repeats decides nothing alone: two go on.
  if (keep == 1 && ok.size() >= 2 && rung_index_ < rungs_to_cap()) keep = 2;
  if (ok.empty() || rung_.size() == 1 || keep == 1) {
    if (!ok.empty()) finalist_ = ok.front().second;
    bracket_open_ = false;
    return;
  }
  rung_.clear();
  for (size_t j = 0; j < keep; ++j) rung_.push_back(ok[j].second);
  // The defender goes on whatever its first, short measurement said.
  if (defender_ && std::find(rung_.begin(), rung_.end(), *defender_) == rung_.end() &&
      std::any_of(ok.begin(), ok.end(), [&](const auto& c) { return c.second == *defender_; }))
    rung_.back() = *defender_;
  std::sort(rung_.begin(), rung_.end());
  next_member_ = 0;
  rung_costs_.clear();
  ++rung_index_;
}

std::vector<Proposal> RandomHalving::propose(size_t max_count) {
  while (true) {
    if (bracket_open_ && next_member_ < rung_.size()) {
      // Repeats grow by eta per rung, from min_repeats up to the cap.
      const int repeats = rung_repeats(rung_index_);
      std::vector<Proposal> out;
      while (out.size() < max_count && next_member_ < rung_.size())
        out.push_back({rung_[next_member_++], repeats});
      return out;
    }
    if (bracket_open_) {
      close_rung(); // every member is proposed and (by contract) reported
      continue;
    }
    // Refine around the finalist while it has unsampled neighbours, else sample afresh.
    const size_t n = next_bracket_size();
    if (brackets_ > 0 && start_neighbour_bracket(n)) continue;
    if (!start_bracket(n, finalist_)) return {};
  }
}

std::optional<BestConfig> RandomHalving::choose_best() const {
  // Every bracket ends with the full repeats, its finalist having beaten the previous one
  // there: the lowest of the measurements with the most repeats is that finalist, or a config
  // that matched it with the full repeats in a bracket the budget cut short.
  return SearchStrategy::choose_best();
}

// --- EvolutionarySearch -------------------------------------------------------------------

EvolutionarySearch::EvolutionarySearch(const SearchSpace& space, StrategyOptions options)
    : SearchStrategy(space, std::move(options)), seen_(space.size(), 0), unseen_(space.size()) {
  if (options_.population == 0) throw Error("the evolutionary population must be at least 1");
}

void EvolutionarySearch::next_generation() {
  std::vector<size_t> next;
  auto add = [&](size_t i) {
    if (seen_[i] || failed(i)) return;
    seen_[i] = 1;
    --unseen_;
    next.push_back(i);
  };
  if (generations_ == 0) {
    add(space_.default_index());
    for (size_t seed : options_.seeds)
      if (seed < seen_.size() && next.size() < options_.population) add(seed);
  } else {
    // Parents: the best quarter of the population's worth of measured configs.
    std::vector<std::pair<double, size_t>> ranked;
    for (size_t i = 0; i < seen_.size(); ++i)
      if (seen_[i])
        if (auto m = measurement(i)) ranked.emplace_back(m->cost_ms, i);
    std::sort(ranked.begin(), ranked.end());
    size_t parents = std::max<size_t>(1, options_.population / 4);
    std::vector<size_t> children;
    for (size_t p = 0; p < std::min(parents, ranked.size()); ++p)
      for (size_t n : space_.neighbours(ranked[p].second))
        if (!seen_[n] && std::find(children.begin(), children.end(), n) == children.end())
          children.push_back(n);
    shuffle(children);
    for (size_t c : children)
      if (next.size() < options_.population) add(c);
  }
  // Top up with random configs: exploration, and the first generation.
  if (next.size() < options_.population && unseen_ > 0) {
    std::vector<size_t> pool;
    for (size_t i = 0; i < seen_.size(); ++i)
      if (!seen_[i]) pool.push_back(i);
    size_t k = std::min(pool.size(), options_.population - next.size());
    for (size_t j = 0; j < k; ++j) {
      std::swap(pool[j], pool[j + uniform_below(pool.size() - j)]);
      add(pool[j]);
    }
  }
  generation_ = std::move(next);
  next_member_ = 0;
  ++generations_;
}

std::vector<Proposal> EvolutionarySearch::propose(size_t max_count) {
  if (next_member_ == generation_.size()) {
    if (generations_ > 0) {
      // Without a budget, stop once `patience` generations brought no improvement.
      std::optional<BestConfig> now = best();
      bool improved = now && (!best_before_ || now->cost_ms < *best_before_);
      stale_ = improved ? 0 : stale_ + 1;
      if (now) best_before_ = now->cost_ms;
      if (options_.budget.unlimited() && stale_ >= options_.patience) return {};
    }
    next_generation();
  }
  std::vector<Proposal> out;
  while (out.size() < max_count && next_member_ < generation_.size())
    out.push_back({generation_[next_member_++], options_.repeats});
  return out;
}

// --- choosing -----------------------------------------------------------------------------

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"auto", "exhaustive", "halving", "evolutionary"};
  return names;
}

std::string choose_strategy(size_t space_size, const Budget& budget) {
  bool fits = budget.trials ? static_cast<int64_t>(space_size) <= *budget.trials : space_size <= 64;
  return fits ? "exhaustive" : "halving";
}

std::unique_ptr<SearchStrategy> make_strategy(const std::string& name, const SearchSpace& space,
                                              const StrategyOptions& options) {
  std::string chosen = name == "auto" ? choose_strategy(space.size(), options.budget) : name;
  if (chosen == "exhaustive") return std::make_unique<ExhaustiveSearch>(space, options);
  if (chosen == "halving") return std::make_unique<RandomHalving>(space, options);
  if (chosen == "evolutionary") return std::make_unique<EvolutionarySearch>(space, options);
  throw Error(str("unknown search strategy '", name, "' (choose one of ",
                  join(strategy_names(), ", "), ")"));
}

} // namespace tilejit
