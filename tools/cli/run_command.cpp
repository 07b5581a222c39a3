// `tilejit run` (placeholder until implemented).
#include "tools/cli/commands.h"

#include "support/error.h"

namespace tilejit::cli {

void register_run_command(CLI::App& app, GlobalOptions& global) {
  auto* cmd = app.add_subcommand("run", "(not implemented yet)");
  cmd->callback([] { throw Error("tilejit run: not implemented yet"); });
}

} // namespace tilejit::cli
