// `tilejit list`: the workloads (their kernels, shapes and peers) and the kernels shipped in the
// library.
#include "tools/cli/cli_support.h"
#include "tools/cli/commands.h"

#include "support/text.h"
#include "workloads/workload.h"

#include <fmt/format.h>

#include <iostream>
#include <map>

namespace tilejit::cli {

void register_list_command(CLI::App& app, GlobalOptions& global) {
  auto* cmd = app.add_subcommand("list", "List the workloads and the kernels shipped with tilejit");
  cmd->callback([] {
    std::vector<std::vector<std::string>> rows;
    for (const auto& w : workloads::registered_workloads()) {
      std::vector<std::string> kernels, dtypes;
      for (const auto& k : w->kernels()) kernels.push_back(k.name);
      for (DType t : w->dtypes()) dtypes.push_back(dtype_name(t));
      rows.push_back(
          {w->name(), "yes", join(kernels, " "),
           std::to_string(w->cases(w->dtypes().front()).size()) + " x " + join(dtypes, "|"),
           w->summary()});
    }
    for (const auto& [name, summary] : workloads::planned_workloads())
      rows.push_back({name, "not yet", "", "", summary});
    std::cout << "Workloads (tilejit run|tune|bench --workload NAME [--case TEXT | --shape ...]):\n"
              << format_table({"workload", "implemented", "kernels", "shapes", "what"}, rows)
              << "\n";
    for (const auto& w : workloads::registered_workloads()) {
      std::cout << w->name() << " --shape takes:\n";
      for (const std::string& line : split(w->shape_help(), '\n'))
        std::cout << "  " << line << "\n";
      // Plans: the ways a shape can be computed, from every shape of the workload's grid (a
      // plan some shapes lack, such as one only dense attention has, is listed once).
      std::map<std::string, std::string> plans;
      for (DType t : w->dtypes())
        for (const auto& p : w->cases(t))
          for (const workloads::Plan& plan : p->plans()) plans.emplace(plan.name, plan.summary);
      if (plans.size() > 1) {
        std::cout << w->name()
                  << " plans (the tuner times each per shape and keeps the fastest; run and "
                     "bench take --plan NAME):\n";
        for (const auto& [name, summary] : plans)
          std::cout << "  " << name << ": " << summary << "\n";
      }
      std::cout << w->name() << " is measured against:\n";
      for (const std::string& p : w->peers()) std::cout << "  " << p << "\n";
      std::cout << "\n";
    }
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
