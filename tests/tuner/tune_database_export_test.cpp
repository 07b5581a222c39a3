// Export / import: a fleet tunes once. Round trips are exact, merges keep every trial and
// never drop a pinned winner, and a bad file changes nothing.
#include "tuner/tune_database.h"

#include "support/error.h"
#include "tests/tuner/tune_test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>

namespace tilejit {
namespace {

using tune_test::sample_key;
using tune_test::TempDir;

TrialResult ok_result(double median) {
  return TrialResult{TrialStatus::ok, median, 0.02, ""};
}

void expect_same_trials(const std::vector<TrialRecord>& a, const std::vector<TrialRecord>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id);
    EXPECT_EQ(a[i].config, b[i].config);
    EXPECT_EQ(a[i].result.status, b[i].result.status);
    EXPECT_EQ(a[i].result.median_ms, b[i].result.median_ms);
    EXPECT_EQ(a[i].result.spread_ms, b[i].result.spread_ms);
    EXPECT_EQ(a[i].result.error, b[i].result.error);
    EXPECT_EQ(a[i].created_at_ms, b[i].created_at_ms);
    EXPECT_EQ(a[i].host, b[i].host);
  }
}

void expect_same_winner(const std::optional<Winner>& a, const std::optional<Winner>& b) {
  ASSERT_EQ(a.has_value(), b.has_value());
  if (!a) return;
  EXPECT_EQ(a->config, b->config);
  EXPECT_EQ(a->median_ms, b->median_ms);
  EXPECT_EQ(a->pinned, b->pinned);
  EXPECT_EQ(a->updated_at_ms, b->updated_at_ms);
}

// Three keys: a tuned one, a pinned one, one with only failed trials; two binaries.
void fill(TuneDatabase& db) {
  TuneKey tuned = sample_key(1), pinned = sample_key(8), failed = sample_key(64);
  db.record_trial(tuned, {{"BN", 32}, {"S", 2}}, ok_result(0.123456789012345));
  db.record_trial(tuned, {{"BN", 64}, {"S", 2}}, ok_result(1.0 / 3.0));
  db.set_winner(tuned, {{"BN", 32}, {"S", 2}}, 0.123456789012345);
  db.record_trial(pinned, {{"BN", 16}}, ok_result(2.5));
  db.pin(pinned, {{"BN", 16}});
  db.record_trial(failed, {{"BN", 128}},
                  TrialResult{TrialStatus::compile_error, {}, {}, "line 1\n\"quoted\"\ttab \xff"});
  db.put_binary("module-a", "sm_90a", std::string("\0\x01\x02\xfe\xff", 5), "decode_partial");
  db.put_binary("module-b", "sm_80", "abcd");
}

TEST(TuneDatabaseExport, RoundTripIntoAFreshFileIsExact) {
  TempDir dir;
  TuneDatabase source(dir.file("a.db"));
  fill(source);
  ExportSummary wrote = source.export_to(dir.file("export.json"));
  EXPECT_EQ(wrote.keys, 3);
  EXPECT_EQ(wrote.trials, 4);
  EXPECT_EQ(wrote.winners, 2);
  EXPECT_EQ(wrote.binaries, 2);

  TuneDatabase copy(dir.file("b.db"));
  ImportSummary read = copy.import_from(dir.file("export.json"));
  EXPECT_EQ(read.keys_added, 3);
  EXPECT_EQ(read.trials_added, 4);
  EXPECT_EQ(read.winners_added, 2);
  EXPECT_EQ(read.binaries_added, 2);

  for (int64_t batch : {1, 8, 64}) {
    TuneKey key = sample_key(batch);
    std::vector<TrialRecord> a = source.trials_for(key), b = copy.trials_for(key);
    if (batch == 64) {
      // Invalid UTF-8 in an error log is replaced on export; everything else is exact.
      ASSERT_EQ(b.size(), 1u);
      EXPECT_EQ(b[0].result.error.substr(0, 20), a[0].result.error.substr(0, 20));
      a[0].result.error = b[0].result.error;
    }
    expect_same_trials(a, b);
    expect_same_winner(source.winner(key), copy.winner(key));
  }
  EXPECT_EQ(copy.get_binary("module-a"), source.get_binary("module-a"));
  EXPECT_EQ(copy.get_binary("module-b"), std::string("abcd"));
  EXPECT_EQ(copy.list().size(), source.list().size());
}

TEST(TuneDatabaseExport, ImportingTwiceAddsNothing) {
  TempDir dir;
  TuneDatabase source(dir.file("a.db"));
  fill(source);
  source.export_to(dir.file("e.json"));
  TuneDatabase copy(dir.file("b.db"));
  copy.import_from(dir.file("e.json"));
  ImportSummary again = copy.import_from(dir.file("e.json"));
  EXPECT_EQ(again.keys_added, 0);
  EXPECT_EQ(again.trials_added, 0);
  EXPECT_EQ(again.trials_present, 4);
  EXPECT_EQ(again.winners_kept, 2);
  EXPECT_EQ(again.binaries_added, 0);
  EXPECT_EQ(copy.trials_for(sample_key(1)).size(), 2u);
}

TEST(TuneDatabaseExport, MergeKeepsAllTrialsAndLocalPinsAndTakesFasterWinners) {
  TempDir dir;
  TuneDatabase fleet(dir.file("fleet.db"));
  TuneDatabase local(dir.file("local.db"));
  TuneKey pinned_here = sample_key(1), slower_here = sample_key(2), faster_here = sample_key(4),
          pinned_there = sample_key(8), only_there = sample_key(16);

  local.record_trial(pinned_here, {{"BN", 1}}, ok_result(9.0));
  local.pin(pinned_here, {{"BN", 1}});
  fleet.record_trial(pinned_here, {{"BN", 2}}, ok_result(0.1));
  fleet.pin(pinned_here, {{"BN", 2}}); // even a pin elsewhere never replaces a pin here

  // The fleet's winners are backed by its trials (a winner no trial measured never replaces
  // one here: see WinnersNoTrialMeasuredDoNotReplaceMeasuredOnes).
  local.set_winner(slower_here, {{"BN", 1}}, 0.9);
  fleet.record_trial(slower_here, {{"BN", 2}}, ok_result(0.5));
  fleet.set_winner(slower_here, {{"BN", 2}}, 0.5);

  local.set_winner(faster_here, {{"BN", 1}}, 0.2);
  fleet.record_trial(faster_here, {{"BN", 2}}, ok_result(0.5));
  fleet.set_winner(faster_here, {{"BN", 2}}, 0.5);

  local.set_winner(pinned_there, {{"BN", 1}}, 0.1);
  fleet.record_trial(pinned_there, {{"BN", 2}}, ok_result(0.3));
  fleet.pin(pinned_there, {{"BN", 2}});

  fleet.record_trial(only_there, {{"BN", 2}}, ok_result(0.5));
  fleet.set_winner(only_there, {{"BN", 2}}, 0.5);

  fleet.export_to(dir.file("fleet.json"));
  ImportSummary merged = local.import_from(dir.file("fleet.json"));
  EXPECT_EQ(merged.winners_added, 1);
  EXPECT_EQ(merged.winners_updated, 2);
  EXPECT_EQ(merged.winners_kept, 2);

  EXPECT_EQ(local.winner(pinned_here)->config, (TuneConfig{{"BN", 1}}));
  EXPECT_TRUE(local.winner(pinned_here)->pinned);
  EXPECT_EQ(local.winner(slower_here)->config, (TuneConfig{{"BN", 2}}));
  EXPECT_EQ(local.winner(faster_here)->config, (TuneConfig{{"BN", 1}}));
  EXPECT_EQ(local.winner(pinned_there)->config, (TuneConfig{{"BN", 2}}));
  EXPECT_TRUE(local.winner(pinned_there)->pinned);
  EXPECT_EQ(local.winner(only_there)->config, (TuneConfig{{"BN", 2}}));
  // Trials from both sides are all kept.
  EXPECT_EQ(local.trials_for(pinned_here).size(), 2u);
}

TEST(TuneDatabaseExport, KernelFilterAndNoBinaries) {
  TempDir dir;
  TuneDatabase db(dir.file("a.db"));
  fill(db);
  TuneKey other = sample_key(1);
  other.kernel = "combine";
  db.set_winner(other, {{"X", 1}}, 0.1);
  ExportSummary some = db.export_to(dir.file("e.json"), ExportOptions{"combine", false});
  EXPECT_EQ(some.keys, 1);
  EXPECT_EQ(some.binaries, 0);
  TuneDatabase copy(dir.file("b.db"));
  copy.import_from(dir.file("e.json"));
  ASSERT_EQ(copy.list().size(), 1u);
  EXPECT_EQ(copy.list()[0].key, other);
  EXPECT_FALSE(copy.get_binary("module-b"));
}

TEST(TuneDatabaseExport, FileFormatIsDocumentedJson) {
  TempDir dir;
  TuneDatabase db(dir.file("a.db"));
  fill(db);
  db.export_to(dir.file("e.json"));
  nlohmann::json doc = nlohmann::json::parse(read_file(dir.file("e.json")));
  EXPECT_EQ(doc["format"], "tilejit-tuning-export");
  EXPECT_EQ(doc["format_version"], 1);
  ASSERT_EQ(doc["keys"].size(), 3u);
  const nlohmann::json& entry = doc["keys"][0];
  EXPECT_EQ(entry["key_hash"].get<std::string>().size(), 64u);
  EXPECT_TRUE(entry["key"].contains("compute_capability"));
  EXPECT_TRUE(entry.contains("winner"));
  EXPECT_TRUE(entry["trials"].is_array());
  EXPECT_EQ(doc["binaries"][0]["data_base64"], "AAEC/v8=");
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string import_error(TuneDatabase& db, const std::string& file) {
  try {
    db.import_from(file);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(TuneDatabaseExport, BadFilesAreRefusedAndChangeNothing) {
  TempDir dir;
  TuneDatabase source(dir.file("a.db"));
  fill(source);
  source.export_to(dir.file("good.json"));
  nlohmann::json doc = nlohmann::json::parse(read_file(dir.file("good.json")));

  TuneDatabase db(dir.file("b.db"));
  std::string f = dir.file("bad.json");
  write_text(f, "{ not json");
  EXPECT_NE(import_error(db, f).find("'" + f + "' is not a tilejit export file"),
            std::string::npos);
  write_text(f, R"({"format": "something-else"})");
  EXPECT_NE(import_error(db, f).find("is not a tilejit export file"), std::string::npos);
  nlohmann::json newer = doc;
  newer["format_version"] = 2;
  write_text(f, newer.dump());
  EXPECT_NE(import_error(db, f).find("format version 2"), std::string::npos);

  // The last key is damaged: the valid keys before it must not be imported either.
  nlohmann::json edited = doc;
  edited["keys"][2]["key"]["sm_count"] = 1;
  write_text(f, edited.dump());
  std::string message = import_error(db, f);
  EXPECT_NE(message.find("keys[2]: key_hash"), std::string::npos) << message;
  nlohmann::json bad_trial = doc;
  bad_trial["keys"][2]["trials"][0]["status"] = "great";
  write_text(f, bad_trial.dump());
  message = import_error(db, f);
  EXPECT_NE(message.find("keys[2].trials[0]: unknown trial status 'great'"), std::string::npos)
      << message;
  nlohmann::json bad_config = doc;
  bad_config["keys"][1]["trials"][0]["config"] = "BN==3";
  write_text(f, bad_config.dump());
  message = import_error(db, f);
  EXPECT_NE(message.find("keys[1].trials[0]: bad tuning config 'BN==3'"), std::string::npos)
      << message;
  nlohmann::json missing = doc;
  missing["keys"][0]["trials"][0].erase("host");
  write_text(f, missing.dump());
  EXPECT_NE(import_error(db, f).find("keys[0].trials[0]"), std::string::npos);
  EXPECT_NE(import_error(db, dir.file("absent.json")).find("cannot read"), std::string::npos);
  EXPECT_TRUE(db.list().empty()) << "a refused import must change nothing";
}

// The entry of fill()'s tuned key (a winner and two ok trials) in an export.
size_t tuned_entry(const nlohmann::json& doc) {
  for (size_t i = 0; i < doc["keys"].size(); ++i)
    if (doc["keys"][i]["trials"].size() == 2) return i;
  ADD_FAILURE() << "no tuned key in the export";
  return 0;
}

// Field types and ranges are checked and named: never an uncaught JSON type error (an abort),
// never a number silently rounded or wrapped.
TEST(TuneDatabaseExport, FieldsOfTheWrongTypeOrRangeAreNamed) {
  TempDir dir;
  TuneDatabase source(dir.file("a.db"));
  fill(source);
  source.export_to(dir.file("good.json"));
  nlohmann::json doc = nlohmann::json::parse(read_file(dir.file("good.json")));
  const size_t t = tuned_entry(doc);
  const std::string at = "keys[" + std::to_string(t) + "]";
  TuneDatabase db(dir.file("b.db"));
  std::string f = dir.file("bad.json");
  auto error_for = [&](const nlohmann::json& edited) {
    write_text(f, edited.dump());
    return import_error(db, f);
  };
  EXPECT_NE(error_for({{"format", 1}}).find("its \"format\" is 1, not \"tilejit-tuning-export\""),
            std::string::npos);
  EXPECT_NE(error_for({{"format", nullptr}}).find("its \"format\" is null"), std::string::npos);
  EXPECT_NE(error_for(nlohmann::json::array()).find("it holds array, not an object"),
            std::string::npos);
  nlohmann::json edited = doc;
  edited["format_version"] = "1";
  EXPECT_NE(error_for(edited).find("field \"format_version\" must be an integer, got string"),
            std::string::npos);
  edited = doc;
  edited["keys"] = "all";
  EXPECT_NE(error_for(edited).find("field \"keys\" must be an array"), std::string::npos);

  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string expected;
  };
  std::vector<Case> cases = {
      {[&](auto& d) { d["keys"][t]["key"]["sm_count"] = 1e30; },
       at + ": field \"sm_count\" must be an integer, got a number with a fraction or "
            "exponent (1e+30)"},
      {[&](auto& d) { d["keys"][t]["key"]["sm_count"] = int64_t(1) << 40; },
       at + ": field \"sm_count\" is 1099511627776, out of range (0..2147483647)"},
      {[&](auto& d) { d["keys"][t]["key"]["sm_count"] = -1; },
       "field \"sm_count\" is -1, out of range"},
      {[&](auto& d) { d["keys"][t]["key"]["shape"]["B"] = 3.5; },
       at + ": field \"shape.B\" must be an integer, got a number with a fraction or exponent "
            "(3.5)"},
      {[&](auto& d) { d["keys"][t]["key"]["shape"]["B"] = uint64_t(1) << 63; },
       "field \"shape.B\" is 9223372036854775808, out of range"},
      {[&](auto& d) { d["keys"][t]["key"]["kernel"] = 7; },
       at + ": field \"kernel\" must be a string, got an integer"},
      {[&](auto& d) { d["keys"][t]["key"]["generics"]["D"] = 128; },
       "field \"generics.D\" must be a string"},
      {[&](auto& d) { d["keys"][t]["winner"]["median_ms"] = -1.0; },
       at + ".winner: field \"median_ms\" is -1.0; a time in milliseconds must be greater "
            "than 0"},
      {[&](auto& d) { d["keys"][t]["winner"]["median_ms"] = 0; },
       at + ".winner: field \"median_ms\" is 0"},
      {[&](auto& d) { d["keys"][t]["winner"]["pinned"] = "yes"; },
       at + ".winner: field \"pinned\" must be true or false, got string"},
      {[&](auto& d) { d["keys"][t]["trials"][0]["median_ms"] = -0.5; },
       at + ".trials[0]: field \"median_ms\" is -0.5"},
      {[&](auto& d) { d["keys"][t]["trials"][0]["median_ms"] = nullptr; },
       at + ".trials[0]: an ok trial has no median_ms"},
      {[&](auto& d) { d["keys"][t]["trials"][0]["spread_ms"] = "wide"; },
       at + ".trials[0]: field \"spread_ms\" must be a number or null, got string"},
      {[&](auto& d) { d["keys"][t]["trials"][0]["created_at_ms"] = 1.5; },
       "field \"created_at_ms\" must be an integer"},
      {[&](auto& d) { d["keys"][t]["trials"] = nlohmann::json::object(); },
       at + ": field \"trials\" must be an array, got object"},
      {[&](auto& d) { d["binaries"][0]["created_at_ms"] = "now"; },
       "binaries[0]: field \"created_at_ms\" must be an integer, got string"},
      {[&](auto& d) { d["binaries"] = 3; }, "field \"binaries\" must be an array"},
  };
  for (const Case& c : cases) {
    nlohmann::json bad = doc;
    c.edit(bad);
    std::string message = error_for(bad);
    EXPECT_NE(message.find("is a malformed tilejit export: "), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
  }
  EXPECT_TRUE(db.list().empty()) << "a refused import must change nothing";
}

// A winner is only as good as the trial that measured it: one no trial backs (a claimed 1 ns
// median, a configuration never run) never replaces a measured winner here.
TEST(TuneDatabaseExport, WinnersNoTrialMeasuredDoNotReplaceMeasuredOnes) {
  TempDir dir;
  TuneKey key = sample_key(1);
  TuneDatabase here(dir.file("here.db"));
  here.record_trial(key, {{"BN", 32}, {"S", 2}}, ok_result(0.5));
  here.set_winner(key, {{"BN", 32}, {"S", 2}}, 0.5);

  TuneDatabase other(dir.file("other.db"));
  other.record_trial(key, {{"BN", 64}, {"S", 2}}, ok_result(0.4));
  other.set_winner(key, {{"BN", 64}, {"S", 2}}, 0.4);
  other.export_to(dir.file("good.json"));
  nlohmann::json doc = nlohmann::json::parse(read_file(dir.file("good.json")));

  std::string f = dir.file("forged.json");
  nlohmann::json forged = doc;
  forged["keys"][0]["winner"]["median_ms"] = 1e-6; // faster than any trial measured
  write_text(f, forged.dump());
  ImportSummary s = here.import_from(f);
  EXPECT_EQ(s.winners_unsupported, 1);
  EXPECT_EQ(s.winners_updated, 0);
  EXPECT_EQ(here.winner(key)->config, (TuneConfig{{"BN", 32}, {"S", 2}}));
  forged = doc;
  forged["keys"][0]["winner"]["config"] = "BN=7,S=99";
  forged["keys"][0]["winner"]["pinned"] = true;
  write_text(f, forged.dump());
  s = here.import_from(f);
  EXPECT_EQ(s.winners_unsupported, 1);
  EXPECT_EQ(here.winner(key)->config, (TuneConfig{{"BN", 32}, {"S", 2}}));

  // The genuine file: its winner is backed by its trial, and faster.
  s = here.import_from(dir.file("good.json"));
  EXPECT_EQ(s.winners_updated, 1);
  EXPECT_EQ(here.winner(key)->config, (TuneConfig{{"BN", 64}, {"S", 2}}));

  // A key with no winner here, of a kernel that could not be checked: an unbacked winner is
  // kept out (inert), the trials come in.
  TuneDatabase fresh(dir.file("fresh.db"));
  forged = doc;
  forged["keys"][0]["winner"]["median_ms"] = 1e-6;
  write_text(f, forged.dump());
  s = fresh.import_from(f);
  EXPECT_EQ(s.winners_unsupported, 1);
  EXPECT_EQ(s.trials_added, 1);
  EXPECT_EQ(s.keys_unchecked, 1);
  EXPECT_FALSE(fresh.winner(key).has_value());
}

// With a kernel check, every configuration in the file must be one of the kernel's: unknown
// names and values outside the choice sets refuse the file, naming the entry.
TEST(TuneDatabaseExport, ConfigurationsAreCheckedAgainstTheKernel) {
  TempDir dir;
  TuneDatabase source(dir.file("a.db"));
  fill(source);
  source.export_to(dir.file("good.json"));
  nlohmann::json doc = nlohmann::json::parse(read_file(dir.file("good.json")));
  ImportOptions options;
  int checked = 0;
  options.kernel_checks = [&](const TuneKey&) -> ConfigCheck {
    ++checked;
    return [](const TuneConfig& config, bool) -> std::string {
      for (const auto& [name, value] : config) {
        if (name != "BN" && name != "S") return name + " is not a tunable";
        if (name == "BN" && value != 16 && value != 32 && value != 64 && value != 128)
          return "BN=" + std::to_string(value) + " is not one of its choices";
      }
      return "";
    };
  };
  TuneDatabase db(dir.file("b.db"));
  ImportSummary s = db.import_from(dir.file("good.json"), options);
  EXPECT_EQ(checked, 3);
  EXPECT_EQ(s.keys_unchecked, 0);
  EXPECT_EQ(s.winners_added, 2);

  std::string f = dir.file("bad.json");
  TuneDatabase empty(dir.file("c.db"));
  auto error_for = [&](const nlohmann::json& edited) {
    write_text(f, edited.dump());
    try {
      empty.import_from(f, options);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const size_t t = tuned_entry(doc);
  const std::string at = "keys[" + std::to_string(t) + "]";
  nlohmann::json bad = doc;
  bad["keys"][t]["winner"]["config"] = "BN=7,S=99";
  EXPECT_NE(error_for(bad).find(at + ".winner: config 'BN=7,S=99' is not a configuration of "
                                     "kernel 'decode_partial': BN=7 is not one of its choices"),
            std::string::npos)
      << error_for(bad);
  bad = doc;
  bad["keys"][t]["trials"][1]["config"] = "ZZZ=1";
  EXPECT_NE(error_for(bad).find(at + ".trials[1]: config 'ZZZ=1' is not a configuration of "
                                     "kernel 'decode_partial': ZZZ is not a tunable"),
            std::string::npos)
      << error_for(bad);
  EXPECT_TRUE(empty.list().empty());
}

} // namespace
} // namespace tilejit
