// `tilejit bench` (placeholder until implemented).
#include "tools/cli/commands.h"

#include "support/error.h"

namespace tilejit::cli {

void register_bench_command(CLI::App& app, GlobalOptions& global) {
  auto* cmd = app.add_subcommand("bench", "(not implemented yet)");
  cmd->callback([] { throw Error("tilejit bench: not implemented yet"); });
}

} // namespace tilejit::cli
