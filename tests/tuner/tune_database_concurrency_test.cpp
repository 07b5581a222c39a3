// Two real processes tuning into one database file at the same time: both must finish and
// every trial must be there afterwards.
#include "tuner/tune_database.h"

#include "tests/tuner/tune_test_util.h"

#include <gtest/gtest.h>

#include <cstdio>

#include <set>
#include <sys/wait.h>
#include <unistd.h>

namespace tilejit {
namespace {

using tune_test::sample_key;
using tune_test::TempDir;

constexpr int kTrialsPerProcess = 250;

// The child's work: open (possibly creating) the file and write trials and winners as a tuner
// would. Returns the exit status for the parent.
int tune_in_child(const std::string& path, int worker, int start_fd) {
  char go = 0;
  if (read(start_fd, &go, 1) != 1) return 10; // wait so both start together
  try {
    TuneDatabase db(path);
    for (int i = 0; i < kTrialsPerProcess; ++i) {
      TuneKey key = sample_key(1 + i % 5); // both workers share these five keys
      db.record_trial(key, {{"BN", i}, {"WORKER", worker}},
                      TrialResult{TrialStatus::ok, 0.001 * i, 0.0001, ""});
      if (i % 25 < 5) db.set_winner(key, {{"BN", i}, {"WORKER", worker}}, 0.001 * i);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "worker %d: %s\n", worker, e.what());
    return 1;
  }
}

void expect_all_rows(const std::string& path, int workers) {
  TuneDatabase db(path);
  std::set<std::string> ids;
  std::set<std::pair<int64_t, int64_t>> configs;
  size_t total = 0;
  for (int b = 1; b <= 5; ++b) {
    for (const TrialRecord& trial : db.trials_for(sample_key(b))) {
      ids.insert(trial.id);
      configs.insert({trial.config.at("WORKER"), trial.config.at("BN")});
      ++total;
    }
    EXPECT_TRUE(db.winner(sample_key(b))) << "B=" << b;
  }
  EXPECT_EQ(total, size_t(workers * kTrialsPerProcess));
  EXPECT_EQ(ids.size(), total) << "trial ids must be unique";
  EXPECT_EQ(configs.size(), total) << "every worker's every trial must be present";
}

void run_workers(const std::string& path, int workers) {
  int start[2];
  ASSERT_EQ(pipe(start), 0);
  std::vector<pid_t> children;
  for (int w = 0; w < workers; ++w) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(start[1]);
      // _exit: the child must not run the parent's gtest teardown or atexit handlers.
      _exit(tune_in_child(path, w, start[0]));
    }
    children.push_back(pid);
  }
  close(start[0]);
  std::string go(static_cast<size_t>(workers), 'g');
  ASSERT_EQ(write(start[1], go.data(), go.size()), ssize_t(go.size()));
  close(start[1]);
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "worker process failed, status " << status;
  }
}

TEST(TuneDatabaseConcurrency, TwoProcessesCreatingAndWritingOneFileKeepEveryTrial) {
  TempDir dir;
  std::string path = dir.file("shared.db"); // does not exist yet: both race to create it
  run_workers(path, 2);
  expect_all_rows(path, 2);
}

// Several processes opening one new file at the same moment, as tune --devices' workers would
// without their parent's open: none may take another's half-made schema for a foreign file (a
// check that read the application id and the tables in separate snapshots once refused a file
// with tables but no id yet, on two H200s). Many rounds: the window is short.
TEST(TuneDatabaseConcurrency, ProcessesOpeningANewFileTogetherAllAcceptIt) {
  for (int round = 0; round < 25; ++round) {
    TempDir dir;
    const std::string path = dir.file("new.db");
    int start[2];
    ASSERT_EQ(pipe(start), 0);
    std::vector<pid_t> children;
    for (int w = 0; w < 6; ++w) {
      pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        close(start[1]);
        char go = 0;
        if (read(start[0], &go, 1) != 1) _exit(3);
        try {
          TuneDatabase db(path);
          _exit(0);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "open failed: %s\n", e.what());
          _exit(1);
        }
      }
      children.push_back(pid);
    }
    close(start[0]);
    const std::string go(6, 'g');
    ASSERT_EQ(write(start[1], go.data(), go.size()), ssize_t(go.size()));
    close(start[1]);
    for (pid_t pid : children) {
      int status = 0;
      ASSERT_EQ(waitpid(pid, &status, 0), pid);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round;
    }
  }
}

TEST(TuneDatabaseConcurrency, TwoProcessesWritingAnExistingFileKeepEveryTrial) {
  TempDir dir;
  std::string path = dir.file("shared.db");
  { TuneDatabase create(path); }
  run_workers(path, 2);
  expect_all_rows(path, 2);
}

} // namespace
} // namespace tilejit
