// Work that may never finish (an NVRTC compile cannot be cancelled), run with a deadline.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>

namespace tilejit {

/// Starts `work` on a detached thread of its own. While it runs, detached_work_running()
/// counts it, so that a program ending before it can leave with std::_Exit rather than run
/// static destructors under it.
void run_detached(std::function<void()> work);

/// How many run_detached() tasks have not finished yet.
int detached_work_running();

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
