// `tilejit cache ...` run in-process on a temporary database: output and errors.
#include "tools/cli/commands.h"

#include "compiler/kernel_library.h"
#include "support/error.h"
#include "support/text.h"
#include "tests/tuner/tune_test_util.h"
#include "tuner/tune_database.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <sstream>

namespace tilejit {
namespace {

using tune_test::sample_key;
using tune_test::TempDir;

// Runs `tilejit <args>` with only the global options and the cache command registered; returns
// its stdout.
std::string run_tilejit(std::vector<std::string> args) {
  CLI::App app{"test", "tilejit"};
  app.require_subcommand(1);
  cli::GlobalOptions global;
  cli::register_global_options(app, global);
  cli::register_cache_command(app, global);
  args.insert(args.begin(), "tilejit");
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  std::ostringstream out;
  std::streambuf* saved = std::cout.rdbuf(out.rdbuf());
  try {
    app.parse(static_cast<int>(argv.size()), const_cast<char**>(argv.data()));
  } catch (...) {
    std::cout.rdbuf(saved);
    throw;
  }
  std::cout.rdbuf(saved);
  return out.str();
}

// Runs `tilejit --db DB <args>`.
std::string run_cache(const std::string& db, std::vector<std::string> args) {
  args.insert(args.begin(), {"--db", db});
  return run_tilejit(std::move(args));
}

void fill(const std::string& path) {
  TuneDatabase db(path);
  TuneKey key = sample_key(4);
  db.record_trial(key, {{"BN", 32}, {"S", 16}}, TrialResult{TrialStatus::ok, 0.0123, 0.0004, ""});
  db.record_trial(key, {{"BN", 64}, {"S", 16}},
                  TrialResult{TrialStatus::compile_error, {}, {}, "ptxas error: too big\nmore"});
  db.set_winner(key, {{"BN", 32}, {"S", 16}}, 0.0123);
  TuneKey other = sample_key(8);
  other.kernel = "combine";
  db.pin(other, {{"X", 2}});
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CacheCommand, ListShowsOneLinePerKey) {
  TempDir dir;
  std::string db = dir.file("t.db");
  EXPECT_TRUE(contains(run_cache(db, {"cache", "list"}), "no tuning database at"));
  fill(db);
  std::string out = run_cache(db, {"cache", "list"});
  EXPECT_TRUE(contains(out, "KEY")) << out;
  EXPECT_TRUE(contains(out, "decode_partial")) << out;
  EXPECT_TRUE(contains(out, "B=4,HQ=32,MAXK=2048")) << out;
  EXPECT_TRUE(contains(out, "BN=32,S=16")) << out;
  EXPECT_TRUE(contains(out, "0.0123")) << out;
  EXPECT_TRUE(contains(out, "2 (1 ok)")) << out;
  EXPECT_TRUE(contains(out, "X=2 (pinned)")) << out;
  EXPECT_TRUE(contains(out, sample_key(4).hash().substr(0, 12))) << out;
}

TEST(CacheCommand, ShowByKernelOrHashPrefix) {
  TempDir dir;
  std::string db = dir.file("t.db");
  fill(db);
  std::string out = run_cache(db, {"cache", "show", "decode_partial"});
  EXPECT_TRUE(contains(out, "key " + sample_key(4).hash())) << out;
  EXPECT_TRUE(contains(out, "NVIDIA H100 80GB HBM3 (compute capability 9.0, 132 SMs)")) << out;
  EXPECT_TRUE(contains(out, "compile_error")) << out;
  EXPECT_TRUE(contains(out, "ptxas error: too big")) << out;
  EXPECT_FALSE(contains(out, "more")) << "only the first line of an error";
  EXPECT_EQ(run_cache(db, {"cache", "show", sample_key(4).hash().substr(0, 6)}), out);
  EXPECT_THROW(run_cache(db, {"cache", "show", "nothing"}), Error);
}

TEST(CacheCommand, ExportImportAndClear) {
  TempDir dir;
  std::string db = dir.file("t.db"), copy = dir.file("copy.db"), file = dir.file("e.json");
  fill(db);
  EXPECT_TRUE(contains(run_cache(db, {"cache", "export", file}), "exported 2 keys (2 trials"));
  EXPECT_TRUE(contains(run_cache(copy, {"cache", "import", file}), "2 new keys, 2 new trials"));
  EXPECT_EQ(TuneDatabase(copy).list().size(), 2u);

  // Without --yes and without a terminal to ask on, clearing refuses.
  std::FILE* in = std::freopen("/dev/null", "r", stdin);
  ASSERT_NE(in, nullptr);
  EXPECT_THROW(run_cache(copy, {"cache", "clear"}), Error);
  EXPECT_EQ(TuneDatabase(copy).list().size(), 2u);
  EXPECT_TRUE(contains(run_cache(copy, {"cache", "clear", "--kernel", "combine", "--yes"}),
                       "removed 1 keys"));
  EXPECT_EQ(TuneDatabase(copy).list().size(), 1u);
  run_cache(copy, {"cache", "clear", "--yes"});
  EXPECT_TRUE(TuneDatabase(copy).list().empty());
}

// `cache import` checks every configuration of a shipped kernel against its tunables, choices
// and constraints (here the example gemm): BN=7, STAGES=99 or ZZZ=1 refuse the file; a winner
// that no trial measured never replaces the measured one here.
TEST(CacheCommand, ImportChecksConfigurationsAgainstTheShippedKernel) {
  TempDir dir;
  std::string db = dir.file("t.db");
  LoadedModule gemm = load_embedded_tile("examples/gemm.tile");
  TuneKey key = sample_key(4);
  key.kernel = "gemm";
  key.source_hash = gemm.source_hash;
  key.generics = {{"T", "f16"}};
  key.shape = {{"M", 256}, {"N", 256}, {"K", 256}};
  TuneConfig good = {{"BM", 64}, {"BN", 64}, {"BK", 32}, {"WARPS", 4}, {"STAGES", 2}};
  {
    TuneDatabase here(db);
    here.record_trial(key, good, TrialResult{TrialStatus::ok, 0.5, 0.01, ""});
    here.set_winner(key, good, 0.5);
  }
  auto import_text = [&](const std::string& winner_config, double median) {
    std::string file = dir.file("in.json");
    nlohmann::json doc = nlohmann::json::parse(read_file(dir.file("good.json")));
    doc["keys"][0]["winner"]["config"] = winner_config;
    doc["keys"][0]["winner"]["median_ms"] = median;
    write_file_atomic(file, doc.dump());
    try {
      return run_cache(db, {"cache", "import", file});
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  run_cache(db, {"cache", "export", dir.file("good.json")});
  std::string out = import_text("BM=64,BN=7,BK=32,WARPS=4,STAGES=99", 0.5);
  EXPECT_TRUE(contains(out, "keys[0].winner: config 'BK=32,BM=64,BN=7,STAGES=99,WARPS=4' is not "
                            "a configuration of kernel 'gemm': BN=7 is not one of its choices "
                            "16|32|64|128"))
      << out;
  out = import_text("ZZZ=1", 0.5);
  EXPECT_TRUE(contains(out, "ZZZ is not a tunable of 'gemm' (its tunables: BM, BN, BK, WARPS, "
                            "STAGES)"))
      << out;
  // In the choice sets but against a `where` constraint (BM * BN >= WARPS * 32 * 8).
  out = import_text("BM=16,BN=16,BK=32,WARPS=8,STAGES=1", 0.5);
  EXPECT_TRUE(contains(out, "is not a configuration of kernel 'gemm'")) << out;
  EXPECT_TRUE(contains(out, "gemm.tile:")) << out;
  // A valid configuration no trial measured, claimed faster: kept out.
  out = import_text("BM=32,BN=64,BK=32,WARPS=4,STAGES=2", 0.001);
  EXPECT_TRUE(contains(out, "1 not imported (no trial measured them)")) << out;
  EXPECT_EQ(TuneDatabase(db).winner(key)->config, good);
}

TEST(CacheCommand, RefusesAForeignFileWithItsName) {
  TempDir dir;
  std::string bad = dir.file("notes.txt");
  std::FILE* f = std::fopen(bad.c_str(), "w");
  std::fputs("this is not a database, just some notes that are long enough to matter\n", f);
  std::fputs("more notes more notes more notes more notes more notes more notes\n", f);
  std::fclose(f);
  try {
    run_cache(bad, {"cache", "list"});
    ADD_FAILURE() << "listed a text file";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "'" + bad + "' is not a tilejit tuning database")) << e.what();
  }
}

TEST(CacheCommand, GlobalOptionsGoBeforeOrAfterTheSubcommand) {
  TempDir dir;
  std::string db = dir.file("t.db");
  fill(db);
  const std::string verbose_line = "2 keys in '" + db + "'";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--db", db, "cache", "list"},
        {"cache", "--db", db, "list"},
        {"cache", "list", "--db", db}}) {
    std::string out = run_tilejit(args);
    EXPECT_TRUE(contains(out, "decode_partial")) << out;
    EXPECT_FALSE(contains(out, verbose_line)) << out;
  }
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-v", "cache", "list", "--db", db},
        {"cache", "-v", "--db", db, "list"},
        {"cache", "list", "--db", db, "--verbose"},
        {"cache", "list", "-v", "--db", db}}) {
    std::string out = run_tilejit(args);
    EXPECT_TRUE(contains(out, "decode_partial")) << out;
    EXPECT_TRUE(contains(out, verbose_line)) << out;
  }
  // A subcommand's own options and positionals still work with --db after them.
  EXPECT_TRUE(contains(run_tilejit({"cache", "show", "combine", "--db", db}), "X=2 (pinned)"));
}

TEST(CacheCommand, UnknownOptionsAreStillRefused) {
  TempDir dir;
  std::string db = dir.file("t.db");
  fill(db);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"cache", "list", "--db", db, "--bogus"},
        {"--bogus", "cache", "list", "--db", db},
        {"cache", "--bogus", "list", "--db", db}}) {
    try {
      run_tilejit(args);
      ADD_FAILURE() << "accepted --bogus";
    } catch (const CLI::ExtrasError& e) {
      EXPECT_TRUE(contains(e.what(), "--bogus")) << e.what();
    }
  }
  // The database option needs its value.
  EXPECT_THROW(run_tilejit({"cache", "list", "--db"}), CLI::ArgumentMismatch);
}

TEST(CacheCommand, EverySubcommandHasHelp) {
  TempDir dir;
  for (const char* sub : {"list", "show", "export", "import", "clear"}) {
    try {
      run_cache(dir.file("t.db"), {"cache", sub, "--help"});
      ADD_FAILURE() << sub << " --help did not stop parsing";
    } catch (const CLI::CallForHelp&) {
    }
  }
}

} // namespace
} // namespace tilejit
