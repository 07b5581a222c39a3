// Worker processes of one command (`tune --devices`): each started with its own arguments and
// environment, their standard error merged into one stream as they run (finished lines
// prefixed with the worker's label, their progress lines, written with '\r', combined into one
// line), their standard output kept and printed after all have exited, in order.
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace tilejit::cli {

struct Worker {
  std::string label;                                    ///< "gpu1": prefixes its lines
  std::vector<std::string> argv;                        ///< argv[0]: the program's path
  std::vector<std::pair<std::string, std::string>> env; ///< set on top of this process's
};

struct WorkerResult {
  int exit_code = 0; ///< the process's exit status; 128 + N when killed by signal N
  std::string stdout_text;
  std::string last_line; ///< its last finished line on standard error (why it failed)
};

/// Runs every worker at once and waits for all; `err` gets the merged standard error as it
/// comes. Throws tilejit::Error only when a process cannot be started (then none is left
/// running).
std::vector<WorkerResult> run_workers(const std::vector<Worker>& workers, std::ostream& err);

/// One progress line for all workers from their latest ones: "[gpu0 3/60 ~12s | gpu1 5/60
/// ~9s]" where a line has the tuner's "[done/total]" and "~Ns left", else its text cut short.
std::string combined_progress(const std::vector<std::pair<std::string, std::string>>& latest);

} // namespace tilejit::cli
