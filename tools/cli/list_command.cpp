// `tilejit list`: the workloads and the kernels shipped in the library.
#include "tools/cli/cli_support.h"
#include "tools/cli/commands.h"

#include "dsl/ast_printer.h"
#include "support/text.h"
#include "workloads/registry.h"

#include <iostream>

namespace tilejit::cli {

void register_list_command(CLI::App& app, GlobalOptions& global) {
  auto* cmd = app.add_subcommand("list", "List the workloads and the kernels shipped with tilejit");
  cmd->callback([] {
    std::vector<std::vector<std::string>> rows;
    for (const auto& w : workloads::all_workloads())
      rows.push_back({w.name, w.implemented ? "yes" : "not yet", w.summary});
    std::cout << "Workloads (tilejit tune|bench|run --workload NAME):\n"
              << format_table({"workload", "implemented", "what"}, rows) << "\n";
    rows.clear();
    for (const std::string& path : embedded_tile_paths()) {
      LoadedModule m = load_embedded_tile(path);
      for (const auto& k : m.module->kernels) {
        std::vector<std::string> gen, tun;
        for (const auto& g : k->generics) gen.push_back(g.name);
        for (const auto& t : k->tunables) tun.push_back(t.name);
        rows.push_back({"embedded:" + path, k->name, join(gen, " "), join(tun, " ")});
      }
    }
    std::cout << "Kernels (tilejit inspect|run SOURCE):\n"
              << format_table({"source", "kernel", "generics", "tunables"}, rows);
  });
  (void)global;
}

} // namespace tilejit::cli
