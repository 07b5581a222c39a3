// `tilejit tune` (placeholder until implemented).
#include "tools/cli/commands.h"

#include "support/error.h"

namespace tilejit::cli {

void register_tune_command(CLI::App& app, GlobalOptions& global) {
  auto* cmd = app.add_subcommand("tune", "(not implemented yet)");
  cmd->callback([] { throw Error("tilejit tune: not implemented yet"); });
}

} // namespace tilejit::cli
