// support/deadline: work run with a deadline, left running detached past it, counted while it
// runs, and its thread joined (reaped) once it has finished, so that a program ending normally
// has no thread still tearing down under it.
#include "support/deadline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

namespace tilejit {
namespace {

void wait_until_none_runs() {
  for (int i = 0; i < 600 && detached_work_running() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

TEST(Deadline, WorkWithinItsDeadlineReturnsItsResult) {
  EXPECT_EQ(run_with_deadline<int>([] { return 7; }, 10.0), 7);
  EXPECT_EQ(run_with_deadline<int>([] { return 8; }, 0.0), 8); // no deadline: run here
  EXPECT_THROW(run_with_deadline<int>([]() -> int { throw std::runtime_error("no"); }, 10.0),
               std::runtime_error);
  wait_until_none_runs();
  EXPECT_EQ(reap_detached_work(), 0);
}

TEST(Deadline, WorkPastItsDeadlineRunsOnAndIsReapedWhenDone) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto result = run_with_deadline<int>(
      [release] {
        while (!release->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return 1;
      },
      0.01);
  EXPECT_FALSE(result.has_value());
  EXPECT_EQ(detached_work_running(), 1);
  EXPECT_EQ(reap_detached_work(), 1); // still running: not joined
  release->store(true);
  wait_until_none_runs();
  EXPECT_EQ(detached_work_running(), 0);
  EXPECT_EQ(reap_detached_work(), 0); // finished: joined
}

} // namespace
} // namespace tilejit
