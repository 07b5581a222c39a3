// `tune --shard I/N` (tools/cli/shard.h): what it accepts, the errors for everything else, and
// that the N slices of a list are the list, each item once, whatever N.
#include "tools/cli/shard.h"

#include "support/error.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace tilejit::cli {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_shard(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Shard, ParsesIOfN) {
  EXPECT_EQ(parse_shard("").count, 1);
  const Shard s = parse_shard("3/8");
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.count, 8);
  EXPECT_EQ(parse_shard("0/1").count, 1);
  EXPECT_EQ(parse_shard("999999/1000000").index, 999999);
}

TEST(Shard, BadInputIsNamed) {
  for (const char* bad : {"x", "3", "3/", "/4", "1/2/3", " 1/2", "1/2 ", "+1/2", "1.5/4", "a/b",
                          "0x1/4", "99999999999999999999/4"})
    EXPECT_NE(error_of(bad).find(std::string("--shard '") + bad + "': expected I/N"),
              std::string::npos)
        << bad << ": " << error_of(bad);
  EXPECT_NE(error_of("4/4").find("--shard 4/4: I = 4 is not a slice of 4 (I counts from 0: 0..3)"),
            std::string::npos);
  EXPECT_NE(error_of("-1/4").find("I = -1 is not a slice of 4"), std::string::npos);
  EXPECT_NE(error_of("0/0").find("N = 0 slices is not in 1..1000000"), std::string::npos);
  EXPECT_NE(error_of("0/-2").find("N = -2 slices"), std::string::npos);
  EXPECT_NE(error_of("0/1000001").find("N = 1000001 slices"), std::string::npos);
}

TEST(Shard, TheSlicesPartitionTheList) {
  for (size_t n_items : {0u, 1u, 7u, 24u, 100u})
    for (int64_t n : {1, 2, 3, 5, 24, 31}) {
      std::vector<int> all(n_items);
      for (size_t i = 0; i < n_items; ++i) all[i] = static_cast<int>(i);
      std::multiset<int> seen;
      size_t largest = 0, smallest = n_items;
      for (int64_t i = 0; i < n; ++i) {
        std::vector<int> part = take_shard(all, Shard{i, n});
        largest = std::max(largest, part.size());
        smallest = std::min(smallest, part.size());
        for (size_t j = 1; j < part.size(); ++j) EXPECT_LT(part[j - 1], part[j]); // in order
        seen.insert(part.begin(), part.end());
      }
      EXPECT_EQ(seen, std::multiset<int>(all.begin(), all.end())) << n_items << " / " << n;
      EXPECT_LE(largest - std::min(smallest, largest), 1u); // balanced
    }
}

// Random text (digits, slashes, signs, spaces, letters): accepted as I/N or an error naming
// --shard, never another exception or a crash.
TEST(Shard, RandomTextIsAShardOrAnError) {
  std::mt19937 rng(20261129);
  const std::string alphabet = "0123456789//-+ x.e";
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    for (size_t n = rng() % 12; n > 0; --n) text += alphabet[rng() % alphabet.size()];
    try {
      const Shard s = parse_shard(text);
      EXPECT_TRUE(text.empty() || (s.index >= 0 && s.index < s.count)) << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--shard"), std::string::npos) << text;
    }
  }
}

} // namespace
} // namespace tilejit::cli
