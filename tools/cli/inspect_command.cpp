// `tilejit inspect` (placeholder until implemented).
#include "tools/cli/commands.h"

#include "support/error.h"

namespace tilejit::cli {

void register_inspect_command(CLI::App& app, GlobalOptions& global) {
  auto* cmd = app.add_subcommand("inspect", "(not implemented yet)");
  cmd->callback([] { throw Error("tilejit inspect: not implemented yet"); });
}

} // namespace tilejit::cli
