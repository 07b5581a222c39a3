// `tune --devices` (tools/cli/devices.h, workers.h): what --devices accepts and the errors for
// everything else, the workers' slices covering the run's shapes once each (with and without a
// --shard of the run's own), CUDA_VISIBLE_DEVICES through a parent's, and the worker processes:
// started with their arguments and environment, standard error merged with labels and one
// progress line, standard output kept in order, exit codes and the last line of a failure.
#include "tools/cli/devices.h"
#include "tools/cli/workers.h"

#include "support/error.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <sstream>

namespace tilejit::cli {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_devices(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Devices, ParsesAllOrAList) {
  EXPECT_FALSE(parse_devices("").given());
  EXPECT_TRUE(parse_devices("all").all);
  EXPECT_EQ(parse_devices("0").indices, std::vector<int>{0});
  EXPECT_EQ(parse_devices("3,0,7").indices, (std::vector<int>{3, 0, 7}));
  EXPECT_EQ(resolve_devices(parse_devices("all"), 4), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(resolve_devices(parse_devices("2,0"), 4), (std::vector<int>{2, 0}));
}

TEST(Devices, BadInputIsNamed) {
  for (const char* bad :
       {"x", "0,", ",0", "0,,1", "-1", "+1", " 0", "0 ", "1.5", "ALL", "all,0", "0x1", "99999"})
    EXPECT_NE(error_of(bad).find(std::string("--devices '") + bad + "'"), std::string::npos)
        << bad << ": " << error_of(bad);
  EXPECT_NE(error_of("1,2,1").find("device 1 is listed twice"), std::string::npos);
  EXPECT_NE(error_of("1024").find("device 1024 is past 1023"), std::string::npos);
  try {
    resolve_devices(parse_devices("0,1"), 1);
    ADD_FAILURE() << "device 1 of a one-GPU host accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--devices: device 1 does not exist (this host has 1 "
                                         "GPU: 0)"),
              std::string::npos)
        << e.what();
  }
}

// Random text: accepted or an error naming --devices, never another exception or a crash.
TEST(Devices, RandomTextIsAListOrAnError) {
  std::mt19937 rng(20261129);
  const std::string alphabet = "0123456789,,, -+xal";
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    for (size_t n = rng() % 10; n > 0; --n) text += alphabet[rng() % alphabet.size()];
    try {
      const DeviceSpec s = parse_devices(text);
      EXPECT_EQ(s.given(), !text.empty()) << text;
      std::set<int> distinct(s.indices.begin(), s.indices.end());
      EXPECT_EQ(distinct.size(), s.indices.size()) << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--devices"), std::string::npos) << text;
    }
  }
}

TEST(Devices, TheWorkersSlicesAreTheRunsShapesOnceEach) {
  for (size_t n_items : {0u, 1u, 7u, 24u, 100u})
    for (const Shard& outer : {Shard{0, 1}, Shard{1, 3}, Shard{2, 3}, Shard{0, 5}})
      for (size_t workers : {1u, 2u, 3u, 8u}) {
        std::vector<int> all(n_items);
        for (size_t i = 0; i < n_items; ++i) all[i] = static_cast<int>(i);
        const std::vector<int> mine = take_shard(all, outer);
        std::multiset<int> seen;
        for (size_t j = 0; j < workers; ++j) {
          const std::vector<int> part = take_shard(all, worker_shard(outer, j, workers));
          seen.insert(part.begin(), part.end());
        }
        EXPECT_EQ(seen, std::multiset<int>(mine.begin(), mine.end()))
            << n_items << " items, shard " << outer.index << "/" << outer.count << ", " << workers
            << " workers";
      }
}

TEST(Devices, VisibleDevicesFollowTheParents) {
  EXPECT_EQ(visible_device(1, nullptr), "1");
  EXPECT_EQ(visible_device(1, ""), "1");
  EXPECT_EQ(visible_device(1, "4,6,7"), "6");
  EXPECT_EQ(visible_device(0, "GPU-0a1b"), "GPU-0a1b");
}

TEST(Devices, ProgressLinesCombine) {
  EXPECT_EQ(combined_progress({{"gpu0", "attn_fwd [3/60] best 1.2 us BM=64  5s elapsed, ~12s "
                                        "left   "},
                               {"gpu1", ""},
                               {"gpu2", "compiling something rather long and wordy here"}}),
            "[gpu0 3/60 ~12s | gpu2 compiling something rather lon...]");
  EXPECT_EQ(combined_progress({{"gpu0", ""}}), "");
}

// Real processes (/bin/sh): labels on finished lines, progress ('\r') combined, standard output
// kept per worker in order, the environment given, exit codes and the last line of a failure,
// a program that cannot run.
TEST(Workers, RunTogetherWithTheirOutputKeptApart) {
  auto sh = [](const std::string& label, const std::string& script,
               std::vector<std::pair<std::string, std::string>> env = {}) {
    return Worker{label, {"/bin/sh", "-c", script}, std::move(env)};
  };
  std::vector<Worker> workers = {
      sh("gpu0",
         "printf 'k [1/4] ~3s left\\r' >&2; printf 'shape A: done\\n' >&2; echo table0; "
         "echo more0",
         {}),
      sh("gpu1", "echo \"visible=$CUDA_VISIBLE_DEVICES\" >&2; echo table1; exit 3",
         {{"CUDA_VISIBLE_DEVICES", "5"}}),
      sh("gpu2", "printf 'no newline at the end' >&2; exit 0", {}),
      {"gpu3", {"/nonexistent/tilejit"}, {}}};
  std::ostringstream err;
  const std::vector<WorkerResult> r = run_workers(workers, err);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].exit_code, 0);
  EXPECT_EQ(r[0].stdout_text, "table0\nmore0\n");
  EXPECT_EQ(r[1].exit_code, 3);
  EXPECT_EQ(r[1].stdout_text, "table1\n");
  EXPECT_EQ(r[1].last_line, "visible=5");
  EXPECT_EQ(r[2].exit_code, 0);
  EXPECT_EQ(r[2].last_line, "no newline at the end");
  EXPECT_EQ(r[3].exit_code, 127);
  EXPECT_EQ(r[3].last_line, "cannot execute the worker program");
  const std::string e = err.str();
  EXPECT_NE(e.find("[gpu1] visible=5\n"), std::string::npos) << e;
  EXPECT_NE(e.find("[gpu2] no newline at the end\n"), std::string::npos) << e;
  EXPECT_NE(e.find("[gpu3] cannot execute the worker program\n"), std::string::npos) << e;
  EXPECT_NE(e.find("[gpu0] shape A: done\n"), std::string::npos) << e;
  EXPECT_NE(e.find("[gpu0 1/4 ~3s]"), std::string::npos) << e; // the combined progress line
  EXPECT_EQ(e.find("table"), std::string::npos) << e;          // standard output kept apart
}

// The worker's command line, run by the real tilejit: every option it repeats parses (with every
// optional one given), and the worker gets as far as this machine allows (no GPU in CI: exit 3
// and "no GPU"; with one, a tuning run of one small shape).
TEST(Workers, TheTuneWorkersCommandLineParses) {
  TuneWorkerArgs a;
  a.workload = "paged_sparse";
  a.dtype = "f16";
  a.case_filter = "";
  a.shape = {"HQ=8,HKV=2,D=64,CTX=300,R=0.05"};
  a.strategy = "exhaustive";
  a.budget = "2";
  a.seed = 7;
  a.repeats = 3;
  a.warm_start = 0;
  a.retune = true;
  a.verbose = true;
  const std::string db = testing::TempDir() + "devices_test.db";
  const std::vector<std::string> argv = tune_worker_argv(TILEJIT_BINARY, db, a, Shard{1, 2});
  EXPECT_EQ(std::vector<std::string>(argv.end() - 3, argv.end()),
            (std::vector<std::string>{"--shard", "1/2", "--retune"}));
  std::ostringstream err;
  const std::vector<WorkerResult> r =
      run_workers({{"gpu0", argv, {{"CUDA_VISIBLE_DEVICES", "0"}}}}, err);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(err.str().find("unknown option"), std::string::npos) << err.str();
  EXPECT_EQ(err.str().find("unexpected argument"), std::string::npos) << err.str();
  if (r[0].exit_code == 3)
    EXPECT_NE(r[0].last_line.find("no GPU"), std::string::npos) << err.str();
  else
    EXPECT_EQ(r[0].exit_code, 0) << err.str();
  // The other slice (0/2) holds the one shape; this one tunes nothing, which is not an error.
}

} // namespace
} // namespace tilejit::cli
