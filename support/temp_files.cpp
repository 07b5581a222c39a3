// The temporary-file registry and its signal handler. Only async-signal-safe calls happen in
// the handler: unlink(2)/rmdir(2) on paths already written into static buffers, then re-raising.
#include "support/temp_files.h"

#include <atomic>
#include <csignal>
#include <cstring>
#include <mutex>
#include <unistd.h>

namespace tilejit {

namespace {

constexpr int kSlots = 64;
constexpr size_t kPathBytes = 4096;

struct Slot {
  std::atomic<int> state{0}; ///< 0 free, 1 being written, 2 holds a path to unlink
  char path[kPathBytes];
};

Slot g_slots[kSlots];
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[3];

extern "C" void remove_temp_files_and_reraise(int signal) {
  // Files first, then (now empty) directories.
  for (Slot& slot : g_slots)
    if (slot.state.load(std::memory_order_acquire) == 2) ::unlink(slot.path);
  for (Slot& slot : g_slots)
    if (slot.state.load(std::memory_order_acquire) == 2) ::rmdir(slot.path);
  // Let the signal do what it did before we were installed (usually: terminate).
  for (int i = 0; i < 3; ++i)
    if (kSignals[i] == signal) ::sigaction(signal, &g_previous[i], nullptr);
  ::raise(signal);
}

void install_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int i = 0; i < 3; ++i) {
      struct sigaction current {};
      ::sigaction(kSignals[i], nullptr, &current);
      g_previous[i] = current;
      // An ignored signal (nohup) stays ignored.
      if (current.sa_handler == SIG_IGN) continue;
      struct sigaction action {};
      action.sa_handler = remove_temp_files_and_reraise;
      sigemptyset(&action.sa_mask);
      action.sa_flags = SA_RESETHAND;
      ::sigaction(kSignals[i], &action, nullptr);
    }
  });
}

} // namespace

TempFileGuard::TempFileGuard(const std::string& path) {
  install_handlers();
  if (path.size() >= kPathBytes) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (g_slots[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
      g_slots[i].state.store(2, std::memory_order_release);
      slot_ = i;
      return;
    }
  }
}

TempFileGuard::~TempFileGuard() {
  if (slot_ >= 0) g_slots[slot_].state.store(0, std::memory_order_release);
}

} // namespace tilejit
