// tilejit: compile, inspect, run and tune tile kernels. `tilejit --help` lists the commands.
#include "tools/cli/commands.h"

#include "dsl/diagnostics.h"
#include "support/error.h"
#include "support/version.h"

#include <cstdio>
#include <iostream>

int main(int argc, char** argv) {
  CLI::App app{"tilejit: a JIT compiler and autotuner for tile kernels (CUDA via NVRTC)",
               "tilejit"};
  app.require_subcommand(1);
  app.set_version_flag("--version", tilejit::tilejit_version());
  tilejit::cli::GlobalOptions global;
  tilejit::cli::register_global_options(app, global); // before the subcommands: they inherit it
  tilejit::cli::register_list_command(app, global);
  tilejit::cli::register_inspect_command(app, global);
  tilejit::cli::register_run_command(app, global);
  tilejit::cli::register_tune_command(app, global);
  tilejit::cli::register_bench_command(app, global);
  tilejit::cli::register_cache_command(app, global);
  try {
    app.parse(argc, argv);
    // A full disk or a closed pipe must not look like success: what was printed is the
    // command's result (inspect's IR, an export's JSON on stdout...).
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0)
      throw tilejit::Error("writing to standard output failed (a full disk or a closed pipe?)");
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const tilejit::NoGpuError& e) {
    std::cerr << "tilejit: no GPU: " << e.what() << "\n";
    return 3;
  } catch (const tilejit::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const tilejit::InternalError& e) {
    std::cerr << "tilejit: " << e.what() << "\n";
    return 70;
  }
  return 0;
}
