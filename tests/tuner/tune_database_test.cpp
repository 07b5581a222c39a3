// TuneDatabase behaviour in one process: schema, trials, winners and pins, key completeness,
// nearest shapes, binaries, listing and clearing.
#include "tuner/tune_database.h"

#include "support/error.h"
#include "tests/tuner/tune_test_util.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
#include <fstream>

namespace tilejit {
namespace {

using tune_test::sample_key;
using tune_test::TempDir;

TrialResult ok_result(double median) {
  return TrialResult{TrialStatus::ok, median, 0.01, ""};
}

int64_t pragma(const std::string& path, const char* name) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, (std::string("PRAGMA ") + name).c_str(), -1, &stmt, nullptr);
  int64_t value = -1;
  if (sqlite3_step(stmt) == SQLITE_ROW) value = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

TEST(TuneDatabase, CreatesSchemaAndDirectoryAndReopens) {
  TempDir dir;
  std::string path = dir.file("nested/deeper/tilejit.db");
  {
    TuneDatabase db(path);
    db.record_trial(sample_key(), {{"BN", 32}}, ok_result(0.5));
  }
  EXPECT_EQ(pragma(path, "application_id"), TuneDatabase::application_id);
  EXPECT_EQ(pragma(path, "user_version"), TuneDatabase::schema_version);
  TuneDatabase again(path);
  EXPECT_EQ(again.trials_for(sample_key()).size(), 1u);
}

TEST(TuneDatabase, UsesWalMode) {
  TempDir dir;
  std::string path = dir.file("t.db");
  TuneDatabase db(path);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(raw, "PRAGMA journal_mode", -1, &stmt, nullptr);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "wal");
  sqlite3_finalize(stmt);
  sqlite3_close(raw);
}

TEST(TuneDatabase, EmptyFileIsInitialised) {
  TempDir dir;
  std::string path = dir.file("empty.db");
  { std::ofstream touch(path); }
  TuneDatabase db(path);
  EXPECT_EQ(pragma(path, "application_id"), TuneDatabase::application_id);
}

TEST(TuneDatabase, RecordsTrialsAndFindsThemByConfig) {
  TempDir dir;
  TuneDatabase db(dir.file("t.db"));
  TuneKey key = sample_key();
  TrialRecord first = db.record_trial(key, {{"BN", 32}, {"S", 4}}, ok_result(0.25));
  db.record_trial(key, {{"BN", 64}, {"S", 4}},
                  TrialResult{TrialStatus::compile_error, std::nullopt, std::nullopt,
                              "ptxas: too much shared memory"});
  db.record_trial(key, {{"BN", 16}, {"S", 4}}, TrialResult{TrialStatus::pruned, {}, {}, "smem"});
  EXPECT_EQ(first.id.size(), 32u);
  EXPECT_FALSE(first.host.empty());
  EXPECT_GT(first.created_at_ms, 0);

  std::vector<TrialRecord> trials = db.trials_for(key);
  ASSERT_EQ(trials.size(), 3u);
  EXPECT_EQ(trials[0].id, first.id);
  EXPECT_EQ(trials[0].config, (TuneConfig{{"BN", 32}, {"S", 4}}));
  EXPECT_EQ(trials[0].result.median_ms, 0.25);
  EXPECT_EQ(trials[0].result.spread_ms, 0.01);
  EXPECT_EQ(trials[1].result.status, TrialStatus::compile_error);
  EXPECT_FALSE(trials[1].result.median_ms.has_value());
  EXPECT_EQ(trials[1].result.error, "ptxas: too much shared memory");
  EXPECT_EQ(trials[2].result.status, TrialStatus::pruned);

  std::optional<TrialRecord> found = db.find_trial(key, {{"S", 4}, {"BN", 64}});
  ASSERT_TRUE(found);
  EXPECT_EQ(found->result.status, TrialStatus::compile_error);
  EXPECT_FALSE(db.find_trial(key, {{"BN", 128}, {"S", 4}}));

  // A re-timed config: every trial is kept, find_trial gives the latest.
  TrialRecord again = db.record_trial(key, {{"BN", 32}, {"S", 4}}, ok_result(0.2));
  EXPECT_EQ(db.trials_for(key).size(), 4u);
  EXPECT_EQ(db.find_trial(key, {{"BN", 32}, {"S", 4}})->id, again.id);
}

TEST(TuneDatabase, WinnerIsReplacedByTuningButNotWhenPinned) {
  TempDir dir;
  TuneDatabase db(dir.file("t.db"));
  TuneKey key = sample_key();
  EXPECT_FALSE(db.winner(key));
  EXPECT_TRUE(db.set_winner(key, {{"BN", 32}}, 0.5));
  EXPECT_EQ(db.winner(key)->config, (TuneConfig{{"BN", 32}}));
  EXPECT_FALSE(db.winner(key)->pinned);
  EXPECT_TRUE(db.set_winner(key, {{"BN", 64}}, 0.4));
  EXPECT_EQ(db.winner(key)->config, (TuneConfig{{"BN", 64}}));
  EXPECT_EQ(db.winner(key)->median_ms, 0.4);

  db.record_trial(key, {{"BN", 16}}, ok_result(0.9));
  db.pin(key, {{"BN", 16}});
  std::optional<Winner> pinned = db.winner(key);
  ASSERT_TRUE(pinned);
  EXPECT_TRUE(pinned->pinned);
  EXPECT_EQ(pinned->config, (TuneConfig{{"BN", 16}}));
  EXPECT_EQ(pinned->median_ms, 0.9) << "median comes from the config's ok trial";

  EXPECT_FALSE(db.set_winner(key, {{"BN", 128}}, 0.1)) << "tuning must not replace a pin";
  EXPECT_EQ(db.winner(key)->config, (TuneConfig{{"BN", 16}}));

  db.pin(key, {{"BN", 256}});
  EXPECT_EQ(db.winner(key)->config, (TuneConfig{{"BN", 256}})) << "a new pin replaces a pin";
  EXPECT_FALSE(db.winner(key)->median_ms) << "never timed";

  db.unpin(key);
  EXPECT_FALSE(db.winner(key)->pinned);
  EXPECT_TRUE(db.set_winner(key, {{"BN", 128}}, 0.1));
  EXPECT_EQ(db.winner(key)->config, (TuneConfig{{"BN", 128}}));
}

TEST(TuneDatabase, ChangingAnyKeyFieldMisses) {
  TempDir dir;
  TuneDatabase db(dir.file("t.db"));
  const TuneKey base = sample_key();
  const TuneConfig config{{"BN", 32}};
  db.record_trial(base, config, ok_result(0.3));
  db.set_winner(base, config, 0.3);
  db.put_binary("module-1", "sm_90a", "cubin");
  ASSERT_TRUE(db.winner(base));
  for (const auto& [name, change] : tune_test::key_field_changes()) {
    TuneKey changed = base;
    change(changed);
    EXPECT_FALSE(db.winner(changed)) << "winner reused across a change of " << name;
    EXPECT_TRUE(db.trials_for(changed).empty()) << name;
    EXPECT_FALSE(db.find_trial(changed, config)) << name;
  }
  EXPECT_TRUE(db.winner(base)) << "the original still hits";
}

TEST(TuneDatabase, NearestWinnersShareEverythingButShape) {
  TempDir dir;
  TuneDatabase db(dir.file("t.db"));
  for (int64_t batch : {1, 8, 64}) db.set_winner(sample_key(batch), {{"BN", batch}}, 0.1);
  TuneKey other_device = sample_key(4);
  other_device.device_name = "NVIDIA H200";
  db.set_winner(other_device, {{"BN", 999}}, 0.1);
  TuneKey untuned = sample_key(2); // has trials but no winner
  db.record_trial(untuned, {{"BN", 7}}, ok_result(1));

  std::vector<NearestWinner> near = db.nearest_winners(sample_key(4));
  ASSERT_EQ(near.size(), 3u) << "another device's winner is never a neighbour";
  // |log2(4/1)| = |log2(4/8)|... 8 is 1 step away, 1 is 2 steps, 64 is 4 steps.
  EXPECT_EQ(near[0].key.shape.at("B"), 8);
  EXPECT_EQ(near[0].winner.config, (TuneConfig{{"BN", 8}}));
  EXPECT_DOUBLE_EQ(near[0].distance, 1.0);
  EXPECT_EQ(near[1].key.shape.at("B"), 1);
  EXPECT_EQ(near[2].key.shape.at("B"), 64);
  EXPECT_EQ(near[0].key, sample_key(8)) << "the full key comes back";
  EXPECT_EQ(near[0].key_hash, sample_key(8).hash());

  std::vector<NearestWinner> exact = db.nearest_winners(sample_key(64));
  EXPECT_EQ(exact[0].key.shape.at("B"), 64);
  EXPECT_DOUBLE_EQ(exact[0].distance, 0.0);
}

TEST(TuneDatabase, StoresBinaries) {
  TempDir dir;
  TuneDatabase db(dir.file("t.db"));
  std::string cubin("\x7f"
                    "ELF\0\0\x01\xff",
                    8);
  EXPECT_FALSE(db.get_binary("abc"));
  db.put_binary("abc", "sm_90a", cubin, "decode_partial");
  EXPECT_EQ(db.get_binary("abc"), cubin);
  db.put_binary("empty", "sm_80", "");
  EXPECT_EQ(db.get_binary("empty"), std::string());
  db.put_binary("abc", "sm_90a", "new");
  EXPECT_EQ(db.get_binary("abc"), "new");
}

TEST(TuneDatabase, ListsAndMatchesKeys) {
  TempDir dir;
  TuneDatabase db(dir.file("t.db"));
  TuneKey a = sample_key(8), b = sample_key(2);
  TuneKey other = sample_key(1);
  other.kernel = "combine";
  db.record_trial(a, {{"BN", 32}}, ok_result(0.5));
  db.record_trial(a, {{"BN", 64}}, TrialResult{TrialStatus::timeout, {}, {}, "slow"});
  db.set_winner(a, {{"BN", 32}}, 0.5);
  db.record_trial(b, {{"BN", 32}}, ok_result(0.2));
  db.pin(other, {{"X", 1}});

  std::vector<KeySummary> all = db.list();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].key.kernel, "combine");
  EXPECT_EQ(all[1].key.shape.at("B"), 2) << "ordered by kernel, then shape";
  EXPECT_EQ(all[2].key.shape.at("B"), 8);
  EXPECT_EQ(all[2].trial_count, 2);
  EXPECT_EQ(all[2].ok_count, 1);
  ASSERT_TRUE(all[2].winner);
  EXPECT_EQ(all[2].winner->median_ms, 0.5);
  EXPECT_FALSE(all[1].winner);
  EXPECT_GT(all[1].last_trial_at_ms, 0);
  EXPECT_TRUE(all[0].winner->pinned);
  EXPECT_EQ(all[0].trial_count, 0);

  EXPECT_EQ(db.keys_matching("decode_partial").size(), 2u);
  std::vector<KeySummary> by_hash = db.keys_matching(a.hash().substr(0, 8));
  ASSERT_EQ(by_hash.size(), 1u);
  EXPECT_EQ(by_hash[0].key, a);
  EXPECT_TRUE(db.keys_matching("nope").empty());
  EXPECT_EQ(db.trials_for_hash(a.hash()).size(), 2u);
}

TEST(TuneDatabase, ClearsOneKernelOrEverything) {
  TempDir dir;
  TuneDatabase db(dir.file("t.db"));
  TuneKey a = sample_key(8), other = sample_key(8);
  other.kernel = "combine";
  db.record_trial(a, {{"BN", 32}}, ok_result(0.5));
  db.pin(a, {{"BN", 32}});
  db.put_binary("m1", "sm_90a", "x", "decode_partial");
  db.record_trial(other, {{"BN", 32}}, ok_result(0.5));
  db.set_winner(other, {{"BN", 32}}, 0.5);
  db.put_binary("m2", "sm_90a", "y", "combine");

  ClearSummary one = db.clear("decode_partial");
  EXPECT_EQ(one.keys, 1);
  EXPECT_EQ(one.trials, 1);
  EXPECT_EQ(one.winners, 1);
  EXPECT_EQ(one.binaries, 1);
  EXPECT_FALSE(db.winner(a));
  EXPECT_FALSE(db.get_binary("m1"));
  EXPECT_TRUE(db.winner(other));
  EXPECT_TRUE(db.get_binary("m2"));

  ClearSummary all = db.clear();
  EXPECT_EQ(all.keys, 1);
  EXPECT_EQ(all.binaries, 1);
  EXPECT_TRUE(db.list().empty());
  db.record_trial(a, {{"BN", 32}}, ok_result(0.5));
  EXPECT_EQ(db.list().size(), 1u) << "usable after clearing";
}

TEST(TuneDatabase, TrialStatusNames) {
  for (TrialStatus s : {TrialStatus::ok, TrialStatus::compile_error, TrialStatus::launch_error,
                        TrialStatus::wrong_result, TrialStatus::timeout, TrialStatus::pruned}) {
    EXPECT_EQ(trial_status_from_string(to_string(s)), s);
  }
  EXPECT_THROW(trial_status_from_string("great"), Error);
}

// Restores an environment variable when the test ends.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old) old_ = old;
    had_ = old != nullptr;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(TuneDatabase, DefaultPathFollowsEnvironment) {
  ScopedEnv db("TILEJIT_DB", "/somewhere/x.db");
  ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
  ScopedEnv home("HOME", "/home/someone");
  EXPECT_EQ(TuneDatabase::default_path(), "/somewhere/x.db");
  {
    ScopedEnv no_db("TILEJIT_DB", nullptr);
    EXPECT_EQ(TuneDatabase::default_path(), "/xdg/tilejit/tilejit.db");
    ScopedEnv relative_xdg("XDG_CACHE_HOME", "relative");
    EXPECT_EQ(TuneDatabase::default_path(), "/home/someone/.cache/tilejit/tilejit.db");
    ScopedEnv no_xdg("XDG_CACHE_HOME", nullptr);
    EXPECT_EQ(TuneDatabase::default_path(), "/home/someone/.cache/tilejit/tilejit.db");
  }
}

} // namespace
} // namespace tilejit
