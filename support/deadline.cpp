#include "support/deadline.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tilejit {
namespace {

std::atomic<int> running{0};

/// A run_detached() task's thread, joinable until reaped, and whether its work has returned.
struct Task {
  std::thread thread;
  std::shared_ptr<std::atomic<bool>> finished;
};

std::mutex& tasks_mutex() {
  static std::mutex* m = new std::mutex;
  return *m;
}

// Never destroyed: a thread still running at exit must not be a joinable std::thread being
// destroyed (std::terminate); the program leaves with std::_Exit then (tools/cli/main.cpp).
std::vector<Task>& tasks() {
  static std::vector<Task>* t = new std::vector<Task>;
  return *t;
}

int reap_locked() {
  std::vector<Task>& all = tasks();
  int still = 0;
  for (size_t i = 0; i < all.size();) {
    if (all[i].finished->load()) {
      all[i].thread.join(); // its work returned: only the thread's own teardown is left
      all.erase(all.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++still;
      ++i;
    }
  }
  return still;
}

} // namespace

void run_detached(std::function<void()> work) {
  std::lock_guard<std::mutex> lock(tasks_mutex());
  reap_locked(); // a long-lived program does not collect finished threads
  ++running;
  auto finished = std::make_shared<std::atomic<bool>>(false);
  std::thread t([work = std::move(work), finished] {
    struct Done {
      std::atomic<bool>& finished;
      ~Done() {
        --running;
        finished.store(true);
      }
    } done{*finished}; // counted down even when `work` throws
    work();
  });
  tasks().push_back({std::move(t), std::move(finished)});
}

int detached_work_running() {
  return running.load();
}

int reap_detached_work() {
  std::lock_guard<std::mutex> lock(tasks_mutex());
  return reap_locked();
}

} // namespace tilejit
