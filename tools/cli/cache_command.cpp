// `tilejit cache` (placeholder until implemented).
#include "tools/cli/commands.h"

#include "support/error.h"

namespace tilejit::cli {

void register_cache_command(CLI::App& app, GlobalOptions& global) {
  auto* cmd = app.add_subcommand("cache", "(not implemented yet)");
  cmd->callback([] { throw Error("tilejit cache: not implemented yet"); });
}

} // namespace tilejit::cli
