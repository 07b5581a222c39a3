// The `tilejit` command line: one file per subcommand, each registering itself on the app.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace tilejit::cli {

/// Options every subcommand sees.
struct GlobalOptions {
  bool verbose = false;
  std::string db_path; ///< --db, else $TILEJIT_DB, else ~/.cache/tilejit/tilejit.db
};

/// Adds --db and -v/--verbose to `app` and lets every subcommand registered after this call
/// (and theirs) pass options it does not know up to its parent, so the global options work
/// before or after any subcommand: `tilejit cache list --db F` as `tilejit --db F cache list`.
void register_global_options(CLI::App& app, GlobalOptions& global);

void register_list_command(CLI::App& app, GlobalOptions& global);
void register_inspect_command(CLI::App& app, GlobalOptions& global);
void register_run_command(CLI::App& app, GlobalOptions& global);
void register_tune_command(CLI::App& app, GlobalOptions& global);
void register_bench_command(CLI::App& app, GlobalOptions& global);
void register_cache_command(CLI::App& app, GlobalOptions& global);

} // namespace tilejit::cli
