// tilejit: compile, inspect, run and tune tile kernels. `tilejit --help` lists the commands.
#include "tools/cli/commands.h"

#include "dsl/diagnostics.h"
#include "support/deadline.h"
#include "support/error.h"
#include "support/version.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace {

std::string command_names(CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (!names.empty()) names += ", ";
    names += sub->get_name();
  }
  return names;
}

// The deepest subcommand that was given (the app itself when none was), and its full name.
CLI::App& deepest_command(CLI::App& app, std::string& name) {
  for (CLI::App* sub : app.get_subcommands()) {
    name += " " + sub->get_name();
    return deepest_command(*sub, name);
  }
  return app;
}

// The first argument left over after parsing, from the deepest subcommand that ran.
std::string unknown_argument(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands()) {
    std::string deeper = unknown_argument(*sub);
    if (!deeper.empty()) return deeper;
  }
  std::vector<std::string> left = app.remaining();
  return left.empty() ? std::string() : left.front();
}

} // namespace

/// The command line's work; main() adds the exit path.
static int run_command_line(int argc, char** argv) {
  CLI::App app{"tilejit: a JIT compiler and autotuner for tile kernels (CUDA via NVRTC)",
               "tilejit"};
  // At most one command; none is reported below, after CLI11 has named any unknown argument
  // (with require_subcommand(1) it says only "A subcommand is required" for `tilejit --bogus`).
  app.require_subcommand(0, 1);
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
    if (app.get_subcommands().empty()) {
      std::cerr << "tilejit: give a command: " << command_names(app)
                << " (tilejit --help says more)\n";
      return 1;
    }
    // A full disk or a closed pipe must not look like success: what was printed is the
    // command's result (inspect's IR, an export's JSON on stdout...).
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0)
      throw tilejit::Error("writing to standard output failed (a full disk or a closed pipe?)");
  } catch (const CLI::ExtrasError& e) {
    // Name the first argument CLI11 could not place as what it looks like.
    std::string first = unknown_argument(app);
    std::string where = "tilejit";
    CLI::App& leaf = deepest_command(app, where);
    if (first.empty()) return app.exit(e);
    if (first[0] == '-') {
      std::cerr << where << ": unknown option '" << first << "' (" << where
                << " --help lists them)\n";
    } else if (!leaf.get_subcommands({}).empty()) {
      std::cerr << where << ": unknown command '" << first << "'; commands: " << command_names(leaf)
                << "\n";
    } else {
      std::cerr << where << ": unexpected argument '" << first << "'\n";
    }
    return e.get_exit_code();
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

int main(int argc, char** argv) {
  int code = run_command_line(argc, argv);
  // A compile past its deadline may still run on a detached thread (NVRTC cannot be
  // cancelled): leave without running static destructors under it. Finished ones are joined
  // first, so that none is still tearing down when the program ends.
  if (tilejit::reap_detached_work() > 0) {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    std::_Exit(code);
  }
  return code;
}
