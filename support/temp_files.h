// Temporary files that must not outlive the process, even when it is interrupted: a fixed
// registry of paths that a SIGINT/SIGTERM/SIGHUP handler unlinks (async-signal-safe) before
// the signal takes its usual course.
#pragma once

#include <string>

namespace tilejit {

/// Registers `path` (a file, or an empty directory) for removal if the process is killed by SIGINT,
/// SIGTERM or SIGHUP while the guard lives (installing the handlers on first use). The guard does
/// not remove the file on destruction: the owner renames or removes it, then the guard forgets it.
class TempFileGuard {
public:
  explicit TempFileGuard(const std::string& path);
  ~TempFileGuard();
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;

private:
  int slot_ = -1; ///< registry slot, or -1 when the registry was full (path too long or 64 in use)
};

} // namespace tilejit
