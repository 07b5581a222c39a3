// Running external tools (disassemblers, git) without a shell: an argument vector, so no path
// or environment value can ever be read as shell syntax.
#pragma once

#include <string>
#include <vector>

namespace tilejit {

/// How a child process ended, and what it printed.
struct ProcessResult {
  int exit_code = -1; ///< the exit status, or -1 when killed by a signal
  int signal = 0;     ///< the signal that killed it, else 0
  std::string output; ///< stdout, with stderr interleaved unless discarded
  bool ok() const { return exit_code == 0; }
};

/// Runs argv[0] (searched on PATH when it holds no '/') with these arguments, no shell
/// involved, and waits for it. Its stdout is captured; stderr too, or sent to /dev/null when
/// `capture_stderr` is false. Throws tilejit::Error naming the program when it cannot be
/// started (not found, not executable).
ProcessResult run_process(const std::vector<std::string>& argv, bool capture_stderr = true);

/// "prog 'arg with space' ..." for messages (never for running).
std::string describe_command(const std::vector<std::string>& argv);

} // namespace tilejit
