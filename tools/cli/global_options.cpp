// The options every subcommand sees (--db, -v), accepted before or after the subcommand.
#include "tools/cli/commands.h"

namespace tilejit::cli {

void register_global_options(CLI::App& app, GlobalOptions& global) {
  // A subcommand copies its parent's fallthrough setting when it is created, so this reaches
  // every subcommand added after it, nested ones (`cache list`) included: an option a
  // subcommand does not know is tried on its parent, and so up to the app.
  app.fallthrough();
  app.add_flag("-v,--verbose", global.verbose, "Say what happens and why (cache hits, lookups)");
  app.add_option("--db", global.db_path,
                 "Tuning database file (default: $TILEJIT_DB or ~/.cache/tilejit/tilejit.db)");
}

} // namespace tilejit::cli
