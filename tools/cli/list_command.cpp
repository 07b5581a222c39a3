// `tilejit list` (placeholder until implemented).
#include "tools/cli/commands.h"

#include "support/error.h"

namespace tilejit::cli {

void register_list_command(CLI::App& app, GlobalOptions& global) {
  auto* cmd = app.add_subcommand("list", "(not implemented yet)");
  cmd->callback([] { throw Error("tilejit list: not implemented yet"); });
}

} // namespace tilejit::cli
