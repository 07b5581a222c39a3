#include "support/deadline.h"

#include <atomic>
#include <thread>

namespace tilejit {
namespace {

std::atomic<int> running{0};

} // namespace

void run_detached(std::function<void()> work) {
  ++running;
  std::thread([work = std::move(work)] {
    struct Done {
      ~Done() { --running; }
    } done; // counted down even when `work` throws
    work();
  }).detach();
}

int detached_work_running() {
  return running.load();
}

} // namespace tilejit
