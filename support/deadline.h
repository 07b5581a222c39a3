// Work that may never finish (an NVRTC compile cannot be cancelled), run with a deadline.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>

namespace tilejit {

/// Starts `work` on a thread of its own that nobody waits for. While it runs,
/// detached_work_running() counts it, so that a program ending before it can leave with
/// std::_Exit rather than run static destructors under it.
void run_detached(std::function<void()> work);

/// How many run_detached() tasks have not finished yet.
int detached_work_running();

/// Joins the threads of the run_detached() tasks whose work has returned and returns how many
/// still run. A program about to end normally calls it: a finished task's thread may still be
/// tearing down (NVRTC's thread-local storage), which LeakSanitizer reported as a leak when the
/// program ended under it.
int reap_detached_work();

/// Runs `work` and waits for it at most `seconds` (<= 0: as long as it takes). Returns its
/// result, rethrows its exception, or returns nullopt at the deadline, leaving `work` running
/// detached (so `work` must own, or share ownership of, everything it touches).
template <class T> std::optional<T> run_with_deadline(std::function<T()> work, double seconds) {
  if (seconds <= 0) return work();
  auto task = std::make_shared<std::packaged_task<T()>>(std::move(work));
  std::future<T> done = task->get_future();
  run_detached([task] { (*task)(); });
  if (done.wait_for(std::chrono::duration<double>(seconds)) != std::future_status::ready)
    return std::nullopt;
  return done.get();
}

} // namespace tilejit
