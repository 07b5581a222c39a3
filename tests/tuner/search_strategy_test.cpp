// Search strategies against synthetic cost functions (a noisy quadratic bowl over two
// tunables): exhaustive finds the true best, halving and evolutionary find a near-best within
// budget, every strategy is deterministic for a seed, never re-proposes a failed config and
// respects trial and time budgets. Also --budget parsing and choosing a strategy by name.
#include "tuner/search_strategy.h"

#include "compiler/kernel_library.h"
#include "support/error.h"
#include "tune_test_util.h"
#include "tuner/tune_database.h"
#include "tuner/tuner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <set>

namespace tilejit {
namespace {

/// A kernel whose only purpose is its tuning space: A x B over 0..n-1, default A=0, B=0.
LoadedModule grid_kernel(int n, const std::string& where = "") {
  std::string text = "kernel bowl(X: f32[N])\n  tune A: 0.." + std::to_string(n - 1) + ", B: 0.." +
                     std::to_string(n - 1) + "\n";
  if (!where.empty()) text += "  where " + where + "\n";
  text += "  grid (1)\n{\n  let r0 = program_id(0);\n}\n";
  return load_tile_text("bowl.tile", text);
}

/// True cost of a config: a bowl with its minimum (1 ms) at A=ca, B=cb.
struct Bowl {
  const SearchSpace& space;
  int64_t ca, cb;
  double cost(size_t i) const {
    TuneConfig c = space.tune_config(i);
    double da = double(c.at("A") - ca), db = double(c.at("B") - cb);
    return 1.0 + 0.01 * (da * da + db * db);
  }
  size_t argmin() const {
    size_t best = 0;
    for (size_t i = 0; i < space.size(); ++i)
      if (cost(i) < cost(best)) best = i;
    return best;
  }
  /// 0-based rank of config i by true cost (0 = the optimum).
  size_t rank(size_t i) const {
    size_t r = 0;
    for (size_t j = 0; j < space.size(); ++j) r += cost(j) < cost(i);
    return r;
  }
};

/// Everything a run of a strategy proposed, and its pick.
struct RunLog {
  std::vector<std::vector<Proposal>> batches;
  std::optional<BestConfig> best;
  int64_t trials = 0;
  std::string stop_reason;
  size_t proposals() const {
    size_t n = 0;
    for (const auto& b : batches) n += b.size();
    return n;
  }
};

/// Measures with relative noise shrinking with repeats (seeded: the same every run); `fails`
/// picks configs that fail to compile. `on_measure` lets a test advance a fake clock.
RunLog run(SearchStrategy& strategy, const Bowl& bowl, double noise = 0.02,
           const std::function<bool(size_t)>& fails = {},
           const std::function<void(size_t, int, double)>& on_measure = {}) {
  std::mt19937_64 rng(1234);
  RunLog log;
  while (auto batch = strategy.next_batch()) {
    log.batches.push_back(*batch);
    for (const Proposal& p : *batch) {
      if (fails && fails(p.config_index)) {
        strategy.report(p.config_index, std::nullopt);
        continue;
      }
      double u = double(rng() % 2000001) / 1000000.0 - 1.0; // [-1, 1]
      double ms = bowl.cost(p.config_index) * (1 + noise * u / std::sqrt(double(p.repeats)));
      if (on_measure) on_measure(p.config_index, p.repeats, ms);
      strategy.report(p.config_index, ms);
    }
    EXPECT_LT(log.batches.size(), 100000u) << "runaway search";
    if (log.batches.size() >= 100000u) break;
  }
  log.best = strategy.best();
  log.trials = strategy.trials();
  log.stop_reason = strategy.stop_reason();
  return log;
}

StrategyOptions options_with(uint64_t seed, Budget budget = {}) {
  StrategyOptions o;
  o.seed = seed;
  o.budget = budget;
  return o;
}

Budget trials(int64_t n) {
  return Budget{n, std::nullopt};
}

TEST(ExhaustiveSearch, MeasuresEveryConfigOnceDefaultFirstAndFindsTheTrueBest) {
  LoadedModule m = grid_kernel(20, "A + B != 7");
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  Bowl bowl{space, 13, 6};
  StrategyOptions o = options_with(1);
  o.batch_size = 7;
  o.repeats = 11;
  ExhaustiveSearch search(space, o);
  RunLog log = run(search, bowl);
  ASSERT_EQ(log.proposals(), space.size());
  EXPECT_EQ(log.batches.front().front().config_index, space.default_index());
  std::vector<size_t> order;
  for (const auto& b : log.batches) {
    EXPECT_LE(b.size(), 7u);
    for (const Proposal& p : b) {
      EXPECT_EQ(p.repeats, 11);
      order.push_back(p.config_index);
    }
  }
  EXPECT_TRUE(std::is_sorted(order.begin() + 1, order.end()));
  EXPECT_EQ(std::set<size_t>(order.begin(), order.end()).size(), space.size());
  ASSERT_TRUE(log.best);
  EXPECT_EQ(log.best->config_index, bowl.argmin());
  EXPECT_EQ(log.stop_reason, "search complete");
  EXPECT_EQ(search.next_batch(), std::nullopt); // stays finished
}

TEST(ExhaustiveSearch, StopsAtTheTrialBudgetAndSkipsFailures) {
  LoadedModule m = grid_kernel(10);
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  Bowl bowl{space, 3, 4};
  ExhaustiveSearch limited(space, options_with(1, trials(10)));
  RunLog log = run(limited, bowl);
  EXPECT_EQ(log.proposals(), 10u);
  EXPECT_EQ(log.trials, 10);
  EXPECT_EQ(log.stop_reason, "trial budget (10) spent");
  // The optimum fails to compile: it must not be picked.
  size_t optimum = bowl.argmin();
  ExhaustiveSearch search(space, options_with(1));
  RunLog failing = run(search, bowl, 0.0, [&](size_t i) { return i == optimum; });
  ASSERT_TRUE(failing.best);
  EXPECT_NE(failing.best->config_index, optimum);
  EXPECT_EQ(bowl.rank(failing.best->config_index), 1u);
  EXPECT_TRUE(search.failed(optimum));
  EXPECT_EQ(search.failed_count(), 1u);
}

TEST(RandomHalving, IsDeterministicForASeed) {
  LoadedModule m = grid_kernel(30);
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  Bowl bowl{space, 21, 8};
  RandomHalving a(space, options_with(42, trials(150)));
  RandomHalving b(space, options_with(42, trials(150)));
  RandomHalving c(space, options_with(43, trials(150)));
  RunLog la = run(a, bowl), lb = run(b, bowl), lc = run(c, bowl);
  EXPECT_EQ(la.batches, lb.batches);
  ASSERT_TRUE(la.best && lb.best);
  EXPECT_EQ(la.best->config_index, lb.best->config_index);
  EXPECT_NE(la.batches, lc.batches);
}

TEST(RandomHalving, FindsANearBestWithinBudget) {
  // 400 configs, 200 trials: a first bracket of random configs on half the budget, then
  // brackets of the finalist's neighbours.
  LoadedModule m = grid_kernel(20);
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  Bowl bowl{space, 13, 6};
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    RandomHalving search(space, options_with(seed, trials(200)));
    RunLog log = run(search, bowl);
    ASSERT_TRUE(log.best) << seed;
    EXPECT_LE(log.trials, 200);
    // The pick is the best config sampled, up to the noise (under 1% at 5 repeats, the size
    // of the bowl's steps near the bottom, where refinement samples every neighbour).
    size_t sampled_best = space.size();
    double sampled_best_cost = 1e30;
    for (const auto& b : log.batches)
      for (const Proposal& p : b) {
        sampled_best = std::min(sampled_best, bowl.rank(p.config_index));
        sampled_best_cost = std::min(sampled_best_cost, bowl.cost(p.config_index));
      }
    EXPECT_LE(bowl.cost(log.best->config_index), sampled_best_cost * 1.02) << "seed " << seed;
    EXPECT_LT(sampled_best, space.size() / 20) << "seed " << seed;
    // The default is always measured, in the first batch.
    EXPECT_EQ(log.batches.front().front().config_index, space.default_index());
    // Rungs re-measure with more repeats, up to the cap.
    int most = 0;
    for (const auto& b : log.batches)
      for (const Proposal& p : b) most = std::max(most, p.repeats);
    EXPECT_EQ(most, 20);
    EXPECT_EQ(log.best->repeats, 20);
  }
  // A 10^4-point space with 300 trials: random sampling alone reaches the best 5%; refining
  // around the finalist climbs to (next to) the optimum.
  LoadedModule big = grid_kernel(100);
  SearchSpace large(big.kernel(), {}, 48 * 1024);
  Bowl wide{large, 71, 23};
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    RandomHalving search(large, options_with(seed, trials(300)));
    RunLog log = run(search, wide);
    ASSERT_TRUE(log.best);
    EXPECT_LE(wide.rank(log.best->config_index), 5u) << "seed " << seed;
  }
}

TEST(RandomHalving, RespectsTrialBudgetsExactly) {
  LoadedModule m = grid_kernel(20);
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  Bowl bowl{space, 5, 5};
  for (int64_t budget : {1, 2, 7, 50, 199, 1000}) {
    RandomHalving search(space, options_with(3, trials(budget)));
    RunLog log = run(search, bowl);
    EXPECT_LE(log.trials, budget) << budget;
    EXPECT_EQ(static_cast<int64_t>(log.proposals()), log.trials);
    ASSERT_TRUE(log.best) << budget;
    // Brackets are sized to use (almost) all of the budget.
    if (budget <= 400) {
      EXPECT_GE(log.trials, budget * 9 / 10) << budget;
    }
  }
  EXPECT_EQ(RandomHalving::bracket_trials(1, 3), 1);
  EXPECT_EQ(RandomHalving::bracket_trials(2, 3), 2);
  EXPECT_EQ(RandomHalving::bracket_trials(9, 3), 12);    // 9 + 3, then 1 remains
  EXPECT_EQ(RandomHalving::bracket_trials(133, 3), 195); // 133 + 44 + 14 + 4, then 1
  // Rungs before the full repeats keep two: 9 + 3 + 2 (rung 2 has the full repeats), then 1.
  EXPECT_EQ(RandomHalving::bracket_trials(9, 3, 2), 14);
  EXPECT_EQ(RandomHalving::bracket_trials(2, 3, 2), 6); // the same two at every rung
  EXPECT_EQ(RandomHalving::bracket_trials(133, 3, 2), 195);
}

TEST(RandomHalving, RespectsATimeBudgetOnTheInjectedClock) {
  LoadedModule m = grid_kernel(40);
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  Bowl bowl{space, 30, 2};
  double now = 1000;
  StrategyOptions o = options_with(9, Budget{std::nullopt, 5.0});
  o.clock = [&] { return now; };
  o.batch_size = 8;
  RandomHalving search(space, o);
  RunLog log = run(search, bowl, 0.02, {}, [&](size_t, int, double) { now += 0.03; });
  EXPECT_EQ(log.stop_reason, "time budget (5 s) spent");
  EXPECT_GE(search.elapsed_seconds(), 5.0);
  // It stops at the first batch boundary past the budget: at most one batch over.
  EXPECT_LT(search.elapsed_seconds(), 5.0 + 8 * 0.03);
  ASSERT_TRUE(log.best);
  // Time allowed more than one bracket (the first is 64 configs).
  EXPECT_GT(log.proposals(), 100u);
}

// The tuner asks between the trials of a batch: a batch of slow trials stops mid-way, the rest
// dropped unmeasured (neither failed nor best), and the search ends with the time budget.
TEST(RandomHalving, StopsMidBatchWhenTheTimeBudgetIsSpent) {
  LoadedModule m = grid_kernel(40);
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  Bowl bowl{space, 30, 2};
  double now = 0;
  StrategyOptions o = options_with(9, Budget{std::nullopt, 5.0});
  o.clock = [&] { return now; };
  o.batch_size = 16;
  RandomHalving search(space, o);
  auto batch = search.next_batch();
  ASSERT_TRUE(batch && batch->size() == 16u);
  EXPECT_FALSE(search.time_budget_spent());
  size_t measured = 0;
  for (const Proposal& p : *batch) {
    if (search.time_budget_spent()) {
      search.stop_on_time_budget();
      break;
    }
    search.report(p.config_index, bowl.cost(p.config_index));
    ++measured;
    now += 2; // 2 s a trial: the budget is spent after the third
  }
  EXPECT_EQ(measured, 3u);
  EXPECT_EQ(search.trials(), 3);
  EXPECT_EQ(search.failed_count(), 0u);
  EXPECT_FALSE(search.next_batch());
  EXPECT_EQ(search.stop_reason(), "time budget (5 s) spent");
  ASSERT_TRUE(search.best());
  bool among_measured = false;
  for (size_t i = 0; i < measured; ++i)
    among_measured |= (*batch)[i].config_index == search.best()->config_index;
  EXPECT_TRUE(among_measured);
}

TEST(RandomHalving, RunsBracketsUntilTheSpaceIsCoveredWhenTimeAllows) {
  LoadedModule m = grid_kernel(15);
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  Bowl bowl{space, 7, 11};
  double now = 0;
  StrategyOptions o = options_with(5, Budget{std::nullopt, 1e9});
  o.clock = [&] { return now; };
  RandomHalving search(space, o);
  RunLog log = run(search, bowl, 0.01, {}, [&](size_t, int, double) { now += 0.1; });
  EXPECT_EQ(log.stop_reason, "search complete");
  std::set<size_t> seen;
  for (const auto& b : log.batches)
    for (const Proposal& p : b) seen.insert(p.config_index);
  EXPECT_EQ(seen.size(), space.size());
  ASSERT_TRUE(log.best);
  EXPECT_LT(bowl.rank(log.best->config_index), 3u);
}

TEST(RandomHalving, NeverReproposesAFailedConfigNorPicksOne) {
  LoadedModule m = grid_kernel(20);
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  Bowl bowl{space, 13, 6};
  auto fails = [&](size_t i) {
    TuneConfig c = space.tune_config(i);
    return (c.at("A") + c.at("B")) % 5 == 4; // the optimum (13 + 6) among them
  };
  ASSERT_TRUE(fails(bowl.argmin()));
  double now = 0;
  StrategyOptions o = options_with(11, Budget{std::nullopt, 1e9});
  o.clock = [&] { return now; };
  RandomHalving search(space, o);
  RunLog log = run(search, bowl, 0.02, fails);
  std::set<size_t> failed;
  for (const auto& b : log.batches)
    for (const Proposal& p : b) {
      EXPECT_FALSE(failed.count(p.config_index))
          << "re-proposed " << space.describe(p.config_index);
      if (fails(p.config_index)) failed.insert(p.config_index);
    }
  EXPECT_EQ(search.failed_count(), failed.size());
  ASSERT_TRUE(log.best);
  EXPECT_FALSE(fails(log.best->config_index));
}

TEST(RandomHalving, AShortLuckyMeasurementNeverWins) {
  // Timings of short calls can come out far too fast now and then (a GPU clock change between
  // calls, a quiet memory system). Here every config with an odd B looks 40% faster whenever
  // it is measured with fewer than the full 20 repeats. The pick must be decided with the full
  // repeats: it is the truly best of the configs measured that way, never a lucky one.
  LoadedModule m = grid_kernel(30);
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  Bowl bowl{space, 20, 10}; // the optimum has an even B: never lucky
  for (int budget : {30, 60, 90, 120})
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      RandomHalving search(space, options_with(seed, trials(budget)));
      std::map<size_t, int> most_repeats;
      while (auto batch = search.next_batch())
        for (const Proposal& p : *batch) {
          double ms = bowl.cost(p.config_index);
          if (p.repeats < 20 && space.tune_config(p.config_index).at("B") % 2 == 1) ms *= 0.6;
          most_repeats[p.config_index] = std::max(most_repeats[p.config_index], p.repeats);
          search.report(p.config_index, ms);
        }
      auto best = search.best();
      ASSERT_TRUE(best) << "seed " << seed;
      EXPECT_EQ(best->repeats, 20) << "seed " << seed;
      double best_full = 1e30;
      for (const auto& [i, r] : most_repeats)
        if (r == 20) best_full = std::min(best_full, bowl.cost(i));
      EXPECT_DOUBLE_EQ(bowl.cost(best->config_index), best_full) << "seed " << seed;
    }
}

TEST(RandomHalving, NeverEndsSlowerThanTheDefaultForAnUnluckyFirstMeasurement) {
  // The default is the optimum, but every measurement of it with fewer than the full repeats
  // comes out twice as slow. It must still be the pick, measured with the full repeats.
  LoadedModule m = grid_kernel(30);
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  Bowl bowl{space, 0, 0}; // the default (A=0, B=0) is the optimum
  for (int budget : {20, 60, 150})
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      RandomHalving search(space, options_with(seed, trials(budget)));
      while (auto batch = search.next_batch())
        for (const Proposal& p : *batch) {
          double ms = bowl.cost(p.config_index);
          if (p.repeats < 20 && p.config_index == space.default_index()) ms *= 2;
          search.report(p.config_index, ms);
        }
      auto best = search.best();
      ASSERT_TRUE(best);
      EXPECT_EQ(best->config_index, space.default_index())
          << "budget " << budget << " seed " << seed;
      EXPECT_EQ(best->repeats, 20);
    }
}

TEST(RandomHalving, AllFailingGivesNoBest) {
  LoadedModule m = grid_kernel(5);
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  Bowl bowl{space, 1, 1};
  RandomHalving search(space, options_with(1, trials(20)));
  RunLog log = run(search, bowl, 0, [](size_t) { return true; });
  EXPECT_FALSE(log.best);
  // Fresh brackets follow one that all failed (the first takes at most half the budget) until
  // what is left cannot pay for a bracket that ends with the full repeats.
  EXPECT_GT(log.trials, 10);
  EXPECT_LE(log.trials, 20);
  std::set<size_t> seen;
  for (const auto& b : log.batches)
    for (const Proposal& p : b) EXPECT_TRUE(seen.insert(p.config_index).second);
}

TEST(EvolutionarySearch, FindsANearBestDeterministically) {
  LoadedModule m = grid_kernel(40);
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  Bowl bowl{space, 29, 17};
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    EvolutionarySearch a(space, options_with(seed, trials(250)));
    EvolutionarySearch b(space, options_with(seed, trials(250)));
    RunLog la = run(a, bowl), lb = run(b, bowl);
    EXPECT_EQ(la.batches, lb.batches);
    EXPECT_EQ(la.trials, 250);
    EXPECT_EQ(la.batches.front().front().config_index, space.default_index());
    ASSERT_TRUE(la.best);
    EXPECT_LT(bowl.rank(la.best->config_index), 5u) << "seed " << seed;
    std::set<size_t> seen;
    for (const auto& batch : la.batches)
      for (const Proposal& p : batch) EXPECT_TRUE(seen.insert(p.config_index).second);
  }
}

TEST(EvolutionarySearch, StopsWithoutABudgetOnceItStopsImproving) {
  LoadedModule m = grid_kernel(40);
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  Bowl bowl{space, 10, 10};
  EvolutionarySearch search(space, options_with(2));
  RunLog log = run(search, bowl, 0.0, [&](size_t i) { return i % 7 == 3; });
  EXPECT_EQ(log.stop_reason, "search complete");
  EXPECT_LT(log.proposals(), space.size());
  ASSERT_TRUE(log.best);
  EXPECT_NE(log.best->config_index % 7, 3u);
  EXPECT_LT(bowl.rank(log.best->config_index), 10u);
}

TEST(WarmStart, SeedsAreMeasuredFirstAndAWinningSeedIsKept) {
  // A 10^4-point space, 60 trials: random sampling alone rarely comes near the optimum, but a
  // seed at the optimum (what won for a nearby shape) is measured in the first batch, right
  // after the default, and wins.
  LoadedModule m = grid_kernel(100);
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  Bowl bowl{space, 71, 23};
  const size_t optimum = bowl.argmin();
  const size_t far = *space.index_of(TuneConfig{{"A", 5}, {"B", 90}});
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    StrategyOptions o = options_with(seed, trials(60));
    o.seeds = {far, optimum, far};
    RandomHalving halving(space, o);
    EvolutionarySearch evolution(space, o);
    for (SearchStrategy* s : std::vector<SearchStrategy*>{&halving, &evolution}) {
      RunLog log = run(*s, bowl);
      const std::vector<Proposal>& first = log.batches.front();
      ASSERT_GE(first.size(), 3u) << s->name();
      EXPECT_EQ(first[0].config_index, space.default_index()) << s->name();
      EXPECT_EQ(first[1].config_index, far) << s->name();
      EXPECT_EQ(first[2].config_index, optimum) << s->name();
      std::set<size_t> in_first;
      for (const Proposal& p : first) EXPECT_TRUE(in_first.insert(p.config_index).second);
      ASSERT_TRUE(log.best) << s->name();
      EXPECT_EQ(log.best->config_index, optimum) << s->name() << " seed " << seed;
    }
  }
  // Without seeds the same budget does not find the optimum (the seeds are what helped).
  size_t found = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    RandomHalving plain(space, options_with(seed, trials(60)));
    RunLog log = run(plain, bowl);
    found += log.best && log.best->config_index == optimum;
  }
  EXPECT_LT(found, 3u);
}

TEST(WarmStart, SeedsAreTheWinnersOfTheNearestTunedShapes) {
  tune_test::TempDir dir;
  TuneDatabase db(dir.file("t.db"));
  LoadedModule m = grid_kernel(10);
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  // Winners for B = 8 (1 step from 4), 1 (2 steps), 64 (4 steps) and 32 (3 steps, the same
  // config as B = 8's); one from another GPU, and one whose config left the space.
  db.set_winner(tune_test::sample_key(8), {{"A", 3}, {"B", 4}}, 0.2);
  db.set_winner(tune_test::sample_key(1), {{"A", 7}, {"B", 1}}, 0.1);
  db.set_winner(tune_test::sample_key(64), {{"A", 2}, {"B", 2}}, 0.9);
  db.set_winner(tune_test::sample_key(32), {{"A", 3}, {"B", 4}}, 0.5);
  db.set_winner(tune_test::sample_key(16), {{"A", 42}, {"B", 0}}, 0.3);
  TuneKey other_gpu = tune_test::sample_key(4);
  other_gpu.device_name = "NVIDIA H200";
  db.set_winner(other_gpu, {{"A", 9}, {"B", 9}}, 0.1);
  auto at = [&](int64_t a, int64_t b) { return *space.index_of(TuneConfig{{"A", a}, {"B", b}}); };
  EXPECT_EQ(warm_start_seeds(db, tune_test::sample_key(4), space, 8),
            (std::vector<size_t>{at(3, 4), at(7, 1), at(2, 2)}));
  EXPECT_EQ(warm_start_seeds(db, tune_test::sample_key(4), space, 2),
            (std::vector<size_t>{at(3, 4), at(7, 1)}));
  EXPECT_TRUE(warm_start_seeds(db, tune_test::sample_key(4), space, 0).empty());
}

TEST(SearchStrategy, ReportingContractIsChecked) {
  LoadedModule m = grid_kernel(4);
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  ExhaustiveSearch search(space, options_with(1));
  auto batch = search.next_batch();
  ASSERT_TRUE(batch && batch->size() == 16);
  EXPECT_THROW(search.next_batch(), InternalError); // 16 proposals unreported
  EXPECT_THROW(search.report(999, 1.0), InternalError);
  for (const Proposal& p : *batch) search.report(p.config_index, std::nullopt);
  EXPECT_THROW(search.report((*batch)[0].config_index, 1.0), InternalError); // reported twice
  EXPECT_EQ(search.next_batch(), std::nullopt);
  EXPECT_FALSE(search.best());
  // A NaN or negative cost is a failed measurement.
  ExhaustiveSearch odd(space, options_with(1));
  auto b = *odd.next_batch();
  odd.report(b[0].config_index, std::nan(""));
  odd.report(b[1].config_index, -1.0);
  odd.report(b[2].config_index, 0.5);
  for (size_t k = 3; k < b.size(); ++k) odd.report(b[k].config_index, 2.0);
  EXPECT_TRUE(odd.failed(b[0].config_index));
  EXPECT_TRUE(odd.failed(b[1].config_index));
  EXPECT_EQ(odd.best()->config_index, b[2].config_index);
}

TEST(Budget, ParsesTrialsAndTimes) {
  EXPECT_EQ(parse_budget("200").trials, 200);
  EXPECT_FALSE(parse_budget("200").seconds);
  EXPECT_EQ(parse_budget("90s").seconds, 90.0);
  EXPECT_FALSE(parse_budget("90s").trials);
  EXPECT_EQ(parse_budget(" 2.5m ").seconds, 150.0);
  EXPECT_EQ(parse_budget("1h").seconds, 3600.0);
  EXPECT_EQ(parse_budget("30 s").seconds, 30.0);
  EXPECT_EQ(to_string(parse_budget("200")), "200 trials");
  EXPECT_EQ(to_string(parse_budget("90s")), "90 s");
  EXPECT_EQ(to_string(Budget{}), "unlimited");
  for (const char* bad : {"", "abc", "-5", "0", "10x", "1.5", "s", "0s", "-3m", "1e999s"}) {
    try {
      parse_budget(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(str("bad --budget '", bad, "'")), std::string::npos)
          << e.what();
    }
  }
}

TEST(ChooseStrategy, ExhaustiveWhenTheSpaceFitsElseHalving) {
  EXPECT_EQ(choose_strategy(64, {}), "exhaustive");
  EXPECT_EQ(choose_strategy(65, {}), "halving");
  EXPECT_EQ(choose_strategy(100, trials(100)), "exhaustive");
  EXPECT_EQ(choose_strategy(101, trials(100)), "halving");
  EXPECT_EQ(choose_strategy(50, Budget{std::nullopt, 60.0}), "exhaustive");
  EXPECT_EQ(choose_strategy(500, Budget{std::nullopt, 60.0}), "halving");
  LoadedModule m = grid_kernel(20);
  SearchSpace space(m.kernel(), {}, 48 * 1024);
  EXPECT_STREQ(make_strategy("auto", space, options_with(1))->name(), "halving");
  EXPECT_STREQ(make_strategy("auto", space, options_with(1, trials(400)))->name(), "exhaustive");
  for (const char* name : {"exhaustive", "halving", "evolutionary"})
    EXPECT_STREQ(make_strategy(name, space, options_with(1))->name(), name);
  try {
    make_strategy("annealing", space, options_with(1));
    ADD_FAILURE() << "accepted an unknown strategy";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "unknown search strategy 'annealing' (choose one of auto, "
                                     "exhaustive, halving, evolutionary)");
  }
}

} // namespace
} // namespace tilejit
