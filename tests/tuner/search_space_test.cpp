// SearchSpace: size and pruning against brute force and against specialise's own constraint
// check, declared defaults (valid or not), neighbours, pinned tunables, and errors.
#include "tuner/search_space.h"
#include "tuner/tuner.h"

#include "compiler/kernel_library.h"
#include "compiler/specialise.h"
#include "support/error.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <set>

namespace tilejit {
namespace {

/// A kernel over X: T[N, D] whose tunables, constraints and threads are given as DSL text.
std::string tile_text(const std::string& tune, const std::string& where,
                      const std::string& threads = "") {
  std::string text = "kernel tiles<T: f16|bf16, D: 64|128>(X: T[N, D])\n  tune " + tune + "\n";
  if (!where.empty()) text += "  where " + where + "\n";
  text += "  grid (1)\n";
  if (!threads.empty()) text += "  threads " + threads + "\n";
  text += "{\n  let r0 = program_id(0);\n}\n";
  return text;
}

const char* kTune = "BN: 16|32|64|128 = 64, STAGES: 1..4 = 2, WARPS: 1|2|4|8 = 4";
const char* kWhere = "BN * D * STAGES * 2 <= SMEM";
const Bindings kF16D64 = {{"T", "f16"}, {"D", "64"}};

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SearchSpace, SizeAndPruningMatchBruteForce) {
  LoadedModule m = load_tile_text("tiles.tile", tile_text(kTune, kWhere, "WARPS * 32"));
  for (int d : {64, 128}) {
    SearchSpace space(m.kernel(), {{"T", "f16"}, {"D", std::to_string(d)}}, 48 * 1024);
    size_t expected = 0;
    for (int bn : {16, 32, 64, 128})
      for (int s = 1; s <= 4; ++s) expected += 4 * (bn * d * s * 2 <= 48 * 1024);
    EXPECT_EQ(space.size(), expected) << "D=" << d;
    EXPECT_EQ(space.product_size(), 64u);
    EXPECT_EQ(space.pruned(), 64 - expected);
    auto reasons = space.prune_reasons();
    ASSERT_EQ(reasons.size(), 1u);
    EXPECT_EQ(reasons[0].count, 64 - expected);
    EXPECT_NE(reasons[0].constraint.find("tiles.tile:3: "), std::string::npos)
        << reasons[0].constraint;
    EXPECT_NE(reasons[0].constraint.find("SMEM"), std::string::npos);
    EXPECT_EQ(space.pruned_configs().size(), space.pruned());
    EXPECT_EQ(space.pruned_configs(2).size(), 2u);
    for (const auto& p : space.pruned_configs())
      EXPECT_GT(p.config.at("BN") * d * p.config.at("STAGES") * 2, 48 * 1024);
  }
  // A larger SMEM prunes nothing.
  SearchSpace roomy(m.kernel(), kF16D64, 1 << 20);
  EXPECT_EQ(roomy.size(), 64u);
  EXPECT_EQ(roomy.pruned(), 0u);
  EXPECT_TRUE(roomy.prune_reasons().empty());
}

TEST(SearchSpace, ConfigsAreCompleteOrderedAndIndexable) {
  LoadedModule m = load_tile_text("tiles.tile", tile_text(kTune, kWhere));
  SearchSpace space(m.kernel(), kF16D64, 48 * 1024);
  std::set<std::string> seen;
  for (size_t i = 0; i < space.size(); ++i) {
    Bindings b = space.config(i);
    EXPECT_EQ(b.size(), 5u);
    EXPECT_EQ(b.at("T"), "f16");
    EXPECT_EQ(b.at("D"), "64");
    EXPECT_EQ(complete_bindings(m.kernel(), b), b); // complete and every value a choice
    EXPECT_EQ(space.index_of(b), i);
    EXPECT_EQ(space.index_of(space.tune_config(i)), i);
    EXPECT_EQ(space.describe(i), config_to_string(space.tune_config(i)));
    EXPECT_TRUE(seen.insert(space.describe(i)).second);
    EXPECT_EQ(space.why_not(space.tune_config(i)), "");
  }
  // The first tunable varies slowest.
  EXPECT_EQ(space.describe(0), "BN=16,STAGES=1,WARPS=1");
  EXPECT_EQ(space.describe(1), "BN=16,STAGES=1,WARPS=2");
  EXPECT_EQ(space.describe(4), "BN=16,STAGES=2,WARPS=1");
  // Not in the space: pruned, a value that is no choice, a missing or unknown tunable, or a
  // different generic.
  TuneConfig pruned{{"BN", 128}, {"STAGES", 4}, {"WARPS", 1}};
  EXPECT_EQ(space.index_of(pruned), std::nullopt);
  EXPECT_NE(space.why_not(pruned).find("breaks constraint 'tiles.tile:3"), std::string::npos)
      << space.why_not(pruned);
  TuneConfig odd{{"BN", 48}, {"STAGES", 1}, {"WARPS", 1}};
  EXPECT_EQ(space.index_of(odd), std::nullopt);
  EXPECT_EQ(space.why_not(odd), "BN=48 is not one of 16|32|64|128");
  EXPECT_EQ(space.index_of(TuneConfig{{"BN", 16}, {"STAGES", 1}}), std::nullopt);
  EXPECT_EQ(space.why_not(TuneConfig{{"BN", 16}, {"STAGES", 1}}), "tunable WARPS has no value");
  TuneConfig extra{{"BN", 16}, {"STAGES", 1}, {"WARPS", 1}, {"XX", 1}};
  EXPECT_EQ(space.index_of(extra), std::nullopt);
  EXPECT_EQ(space.why_not(extra), "kernel 'tiles' has no tunable XX");
  Bindings other = space.config(0);
  other["D"] = "128";
  EXPECT_EQ(space.index_of(other), std::nullopt);
}

TEST(SearchSpace, AgreesWithSpecialiseOnEveryPoint) {
  // The space prunes exactly what specialise would refuse with a ConstraintError: checked on
  // the shipped paged_sparse kernel and the gemm example (threads = WARPS * 32 there).
  struct Case {
    std::string path;
    Bindings generics;
    int smem;
  };
  for (const Case& c : {Case{"workloads/paged_sparse.tile",
                             {{"T", "f16"}, {"D", "128"}, {"G", "4"}, {"PS", "16"}},
                             48 * 1024},
                        Case{"examples/gemm.tile", {{"T", "f16"}}, 48 * 1024},
                        Case{"examples/gemm.tile", {{"T", "bf16"}}, 227 * 1024}}) {
    LoadedModule m = load_embedded_tile(c.path);
    SearchSpace space(m.kernel(), c.generics, c.smem);
    EXPECT_GT(space.size(), 0u) << c.path;
    if (c.smem == 48 * 1024) {
      EXPECT_GT(space.pruned(), 0u) << c.path;
    }
    SpecialiseOptions options;
    options.smem_limit = c.smem;
    for (size_t i = 0; i < space.size(); ++i)
      EXPECT_NO_THROW(specialise(m.kernel(), space.config(i), options))
          << c.path << " " << space.describe(i);
    for (const auto& p : space.pruned_configs()) {
      Bindings b = c.generics;
      for (const auto& [n, v] : p.config) b[n] = std::to_string(v);
      EXPECT_THROW(specialise(m.kernel(), b, options), ConstraintError)
          << c.path << " " << config_to_string(p.config);
    }
  }
}

TEST(SearchSpace, ThreadsOutsideTheHardwareRangeArePruned) {
  LoadedModule m =
      load_tile_text("t.tile", tile_text("BN: 16|32 = 16, WARPS: 1|2|40|64 = 2", "", "WARPS * 32"));
  SearchSpace space(m.kernel(), kF16D64, 48 * 1024);
  EXPECT_EQ(space.size(), 4u); // WARPS 40 and 64 give 1280 and 2048 threads
  auto reasons = space.prune_reasons();
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0].count, 4u);
  EXPECT_NE(reasons[0].constraint.find("must be a multiple of 32 in 32..1024"), std::string::npos)
      << reasons[0].constraint;
}

// On a target with wavefronts of 64 (gfx90a) a block of one warp of 32 cannot run: pruned with
// the reason, and a default that asks for it gets the nearest configuration that holds.
TEST(SearchSpace, ThreadsFollowTheTargetsWavefront) {
  LoadedModule m =
      load_tile_text("t.tile", tile_text("BN: 16|32 = 16, WARPS: 1|2|4 = 1", "", "WARPS * 32"));
  SearchSpace nvidia(m.kernel(), kF16D64, 48 * 1024);
  EXPECT_EQ(nvidia.size(), 6u);
  SearchSpace amd(m.kernel(), kF16D64, 64 * 1024, 64);
  EXPECT_EQ(amd.size(), 4u); // WARPS = 1: 32 threads, half a wavefront
  auto reasons = amd.prune_reasons();
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_NE(reasons[0].constraint.find("must be a multiple of 64 in 64..1024 (the target's "
                                       "wavefront)"),
            std::string::npos)
      << reasons[0].constraint;
  EXPECT_EQ(amd.describe(amd.default_index()), "BN=16,WARPS=2");
  EXPECT_NE(amd.default_note().find("breaks constraint"), std::string::npos) << amd.default_note();
  std::string note;
  Bindings b = complete_valid_bindings(m.kernel(), kF16D64, 64 * 1024, &note, 64);
  EXPECT_EQ(b.at("WARPS"), "2");
  EXPECT_NE(note.find("wavefront"), std::string::npos) << note;
  EXPECT_EQ(complete_valid_bindings(m.kernel(), kF16D64, 64 * 1024).at("WARPS"), "1");
}

TEST(SearchSpace, DefaultIsTheDeclaredOneOrTheFirstChoice) {
  LoadedModule m = load_tile_text("tiles.tile", tile_text(kTune, kWhere));
  SearchSpace space(m.kernel(), kF16D64, 48 * 1024);
  EXPECT_EQ(space.describe(space.default_index()), "BN=64,STAGES=2,WARPS=4");
  EXPECT_EQ(space.default_note(), "");
  LoadedModule bare = load_tile_text("b.tile", tile_text("BN: 32|16, WARPS: 4|8", ""));
  SearchSpace first(bare.kernel(), kF16D64, 48 * 1024);
  EXPECT_EQ(first.describe(first.default_index()), "BN=32,WARPS=4");
}

TEST(SearchSpace, InvalidDefaultFallsBackToTheNearestValidConfig) {
  // A + B <= 5 over 1..4 x 1..4: valid product points 0-3, 4-6, 8-9, 12.
  auto space_with_default = [](int a, int b) {
    static std::vector<LoadedModule> keep; // the kernel must outlive the space
    keep.push_back(load_tile_text(
        "ab.tile", tile_text("A: 1..4 = " + std::to_string(a) + ", B: 1..4 = " + std::to_string(b),
                             "A + B <= 5")));
    return SearchSpace(keep.back().kernel(), kF16D64, 48 * 1024);
  };
  // One tunable changes, by as few steps as possible, the earlier one kept on a tie.
  SearchSpace s44 = space_with_default(4, 4); // A=1,B=4 and A=4,B=1 both move 3 steps
  EXPECT_EQ(s44.size(), 10u);
  EXPECT_EQ(s44.describe(s44.default_index()), "A=4,B=1");
  EXPECT_NE(s44.default_note().find("the declared default A=4,B=4 breaks constraint 'ab.tile:3"),
            std::string::npos)
      << s44.default_note();
  EXPECT_NE(s44.default_note().find("using the valid config nearest to it, A=4,B=1"),
            std::string::npos);
  SearchSpace s34 = space_with_default(3, 4); // B two steps down, not A two steps down
  EXPECT_EQ(s34.describe(s34.default_index()), "A=3,B=2");
  SearchSpace s24 = space_with_default(2, 4); // one step of B
  EXPECT_EQ(s24.describe(s24.default_index()), "A=2,B=3");
  SearchSpace s11 = space_with_default(1, 1);
  EXPECT_EQ(s11.describe(s11.default_index()), "A=1,B=1");
  EXPECT_EQ(s11.default_note(), "");
}

TEST(SearchSpace, NeighboursStepOneTunableByOneChoice) {
  LoadedModule m = load_tile_text("ab.tile", tile_text("A: 1..4, B: 1..4", "A + B <= 5"));
  SearchSpace space(m.kernel(), kF16D64, 48 * 1024);
  auto names = [&](size_t i) {
    std::vector<std::string> out;
    for (size_t j : space.neighbours(i)) out.push_back(space.describe(j));
    return out;
  };
  EXPECT_EQ(names(*space.index_of(TuneConfig{{"A", 2}, {"B", 2}})),
            (std::vector<std::string>{"A=1,B=2", "A=2,B=1", "A=2,B=3", "A=3,B=2"}));
  // A=3,B=3 and A=2,B=4 are pruned.
  EXPECT_EQ(names(*space.index_of(TuneConfig{{"A", 2}, {"B", 3}})),
            (std::vector<std::string>{"A=1,B=3", "A=2,B=2"}));
  EXPECT_EQ(names(*space.index_of(TuneConfig{{"A", 1}, {"B", 1}})),
            (std::vector<std::string>{"A=1,B=2", "A=2,B=1"}));
  // Symmetric, and always one step along one tunable's choice list.
  LoadedModule t = load_tile_text("tiles.tile", tile_text(kTune, kWhere));
  SearchSpace big(t.kernel(), {{"T", "f16"}, {"D", "128"}}, 48 * 1024);
  const std::vector<std::vector<int64_t>> lists = {{16, 32, 64, 128}, {1, 2, 3, 4}, {1, 2, 4, 8}};
  const char* axes[] = {"BN", "STAGES", "WARPS"};
  for (size_t i = 0; i < big.size(); ++i) {
    for (size_t j : big.neighbours(i)) {
      auto back = big.neighbours(j);
      EXPECT_NE(std::find(back.begin(), back.end(), i), back.end());
      TuneConfig a = big.tune_config(i), b = big.tune_config(j);
      int steps = 0;
      for (int k = 0; k < 3; ++k) {
        auto pos = [&](const TuneConfig& c) {
          return std::find(lists[k].begin(), lists[k].end(), c.at(axes[k])) - lists[k].begin();
        };
        steps += std::abs(pos(a) - pos(b));
      }
      EXPECT_EQ(steps, 1) << big.describe(i) << " vs " << big.describe(j);
    }
  }
}

TEST(SearchSpace, GivenTunablesArePinned) {
  LoadedModule m = load_tile_text("tiles.tile", tile_text(kTune, kWhere));
  Bindings fixed = kF16D64;
  fixed["BN"] = "32";
  SearchSpace space(m.kernel(), fixed, 48 * 1024);
  EXPECT_EQ(space.size(), 16u);
  for (size_t i = 0; i < space.size(); ++i) EXPECT_EQ(space.config(i).at("BN"), "32");
  EXPECT_EQ(space.describe(space.default_index()), "BN=32,STAGES=2,WARPS=4");
}

TEST(SearchSpace, ConstraintThatDividesByZeroPrunesThatPoint) {
  LoadedModule m = load_tile_text("z.tile", tile_text("A: 1..4", "8 / (A - 2) != 0"));
  SearchSpace space(m.kernel(), kF16D64, 48 * 1024);
  EXPECT_EQ(space.size(), 3u);
  EXPECT_EQ(space.index_of(TuneConfig{{"A", 2}}), std::nullopt);
}

TEST(SearchSpace, ErrorsNameTheProblem) {
  LoadedModule m = load_tile_text("tiles.tile", tile_text(kTune, kWhere));
  EXPECT_NE(error_of([&] {
              SearchSpace(m.kernel(), {{"T", "f16"}}, 48 * 1024);
            }).find("generic parameter 'D' has no value"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              SearchSpace(m.kernel(), {{"T", "f16"}, {"D", "96"}}, 48 * 1024);
            }).find("D=96 is not one of 64|128"),
            std::string::npos);
  Bindings unknown = kF16D64;
  unknown["BK"] = "32";
  EXPECT_NE(error_of([&] {
              SearchSpace(m.kernel(), unknown, 48 * 1024);
            }).find("has no generic or tunable 'BK'"),
            std::string::npos);
  LoadedModule none = load_tile_text("none.tile", tile_text("A: 1..4", "A > 10"));
  std::string all = error_of([&] { SearchSpace(none.kernel(), kF16D64, 48 * 1024); });
  EXPECT_NE(all.find("kernel 'tiles': all 4 configurations break a constraint"), std::string::npos)
      << all;
  EXPECT_NE(all.find("none.tile:3: (A > 10) (4)"), std::string::npos) << all;
  LoadedModule huge = load_tile_text("huge.tile", tile_text("A: 1..4096, B: 1..4096, C: 1|2", ""));
  std::string big = error_of([&] { SearchSpace(huge.kernel(), kF16D64, 48 * 1024); });
  EXPECT_NE(big.find("(A:4096 x B:4096 x C:2) has more than 16777216 points"), std::string::npos)
      << big;
}

TEST(SearchSpace, MillionPointSpaceIsQuickAndExact) {
  LoadedModule m =
      load_tile_text("mega.tile", tile_text("A: 1..1000, B: 1..1000", "(A * B) % 7 != 0"));
  auto start = std::chrono::steady_clock::now();
  SearchSpace space(m.kernel(), kF16D64, 48 * 1024);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(space.product_size(), 1000000u);
  EXPECT_EQ(space.size(), 858u * 858u); // neither A nor B a multiple of 7
  EXPECT_LT(seconds, 10.0);             // one pass (about 0.1 s in a release build)
  size_t i = *space.index_of(TuneConfig{{"A", 496}, {"B", 500}});
  EXPECT_EQ(space.describe(i), "A=496,B=500");
  EXPECT_EQ(space.neighbours(i).size(), 3u); // A=497 = 7 * 71 is pruned
  EXPECT_EQ(space.index_of(TuneConfig{{"A", 497}, {"B", 500}}), std::nullopt);
}

// A workload's suggested configurations (Step::suggested) as the tuner measures them first:
// unnamed tunables at the default's values, in order, no repeats, none already taken; the
// ones not in the space are skipped with the reason.
TEST(SuggestedSeeds, CompletedWithTheDefaultsInOrderWithoutRepeats) {
  LoadedModule m = load_tile_text("tiles.tile", tile_text(kTune, kWhere));
  SearchSpace space(m.kernel(), kF16D64, 48 * 1024);
  std::vector<std::string> skipped;
  const std::vector<size_t> seeds =
      suggested_seeds(space,
                      {{{"BN", "32"}},
                       {{"BN", "32"}, {"STAGES", "2"}},  // the same point: the default's STAGES
                       {{"BN", "128"}, {"STAGES", "4"}}, // 64 KiB of tiles: over the 48 KiB
                       {{"BN", "48"}},                   // not a choice
                       {{"XX", "1"}},                    // not a tunable
                       {{"BN", "3x"}},                   // not a number
                       {{"WARPS", "8"}, {"BN", "16"}}},
                      {}, &skipped);
  ASSERT_EQ(seeds.size(), 2u);
  EXPECT_EQ(space.describe(seeds[0]), "BN=32,STAGES=2,WARPS=4");
  EXPECT_EQ(space.describe(seeds[1]), "BN=16,STAGES=2,WARPS=8");
  ASSERT_EQ(skipped.size(), 4u);
  EXPECT_NE(skipped[0].find("BN=128,STAGES=4,WARPS=4"), std::string::npos) << skipped[0];
  EXPECT_NE(skipped[1].find("48"), std::string::npos) << skipped[1];
  EXPECT_NE(skipped[2].find("XX=1: not a tunable value"), std::string::npos) << skipped[2];
  EXPECT_NE(skipped[3].find("BN=3x"), std::string::npos) << skipped[3];
  // One already measured first (a nearby shape's winner) is not proposed again.
  EXPECT_TRUE(suggested_seeds(space, {{{"BN", "32"}}}, {seeds[0]}).empty());
  EXPECT_TRUE(suggested_seeds(space, {}, {}).empty());
}

} // namespace
} // namespace tilejit
