// `tilejit cache list|show|export|import|clear`: look into and manage the tuning database.
#include "tools/cli/commands.h"

#include "support/error.h"
#include "support/text.h"
#include "tuner/import_checks.h"
#include "tuner/tune_database.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

namespace tilejit::cli {

namespace {

struct CacheOptions {
  std::string target; ///< show: kernel name or key-hash prefix
  std::string file;   ///< export/import file
  std::string kernel; ///< export/clear: only this kernel
  bool no_binaries = false;
  bool yes = false;
};

std::string database_path(const GlobalOptions& global) {
  return global.db_path.empty() ? TuneDatabase::default_path() : global.db_path;
}

bool database_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

// list, show and export only read: they never create, convert or take over a file, and work on
// a read-only directory or file system.
TuneDatabaseOptions read_only() {
  TuneDatabaseOptions options;
  options.read_only = true;
  return options;
}

std::string format_ms(const std::optional<double>& ms) {
  if (!ms) return "-";
  return fmt::format("{:.4f}", *ms);
}

std::string format_time(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%SZ", &utc);
  return buf;
}

std::string format_strings(const std::map<std::string, std::string>& map) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : map) parts.push_back(name + "=" + value);
  return parts.empty() ? "-" : join(parts, ",");
}

std::string format_shape(const TuneKey& key) {
  std::string sizes = key.shape.empty() ? "-" : config_to_string(key.shape);
  return key.shape_bucket.empty() ? sizes : str("bucket ", key.shape_bucket, " (", sizes, ")");
}

std::string format_winner(const std::optional<Winner>& winner) {
  if (!winner) return "-";
  std::string config = winner->config.empty() ? "(defaults)" : config_to_string(winner->config);
  return winner->pinned ? config + " (pinned)" : config;
}

std::string first_line(const std::string& text, size_t limit) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > limit) line = line.substr(0, limit - 3) + "...";
  return line;
}

// Prints rows as left-aligned columns two spaces apart.
void print_table(const std::vector<std::vector<std::string>>& rows, const std::string& indent) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    line.erase(line.find_last_not_of(' ') + 1); // an empty last column leaves no trailing blanks
    std::cout << line << "\n";
  }
}

void run_list(const GlobalOptions& global) {
  std::string path = database_path(global);
  if (!database_exists(path)) {
    std::cout << "no tuning database at '" << path << "' yet (tilejit tune creates it)\n";
    return;
  }
  TuneDatabase db(path, read_only());
  std::vector<KeySummary> keys = db.list();
  if (keys.empty()) {
    std::cout << "no tuning results in '" << path << "'\n";
    return;
  }
  std::vector<std::vector<std::string>> rows = {
      {"KEY", "KERNEL", "SHAPE", "DEVICE", "WINNER", "MS", "TRIALS"}};
  for (const KeySummary& summary : keys) {
    rows.push_back({summary.key_hash.substr(0, 12), summary.key.kernel, format_shape(summary.key),
                    summary.key.device_name, format_winner(summary.winner),
                    format_ms(summary.winner ? summary.winner->median_ms : std::nullopt),
                    str(summary.trial_count, " (", summary.ok_count, " ok)")});
  }
  print_table(rows, "");
  if (global.verbose) std::cout << keys.size() << " keys in '" << path << "'\n";
}

void print_key(TuneDatabase& db, const KeySummary& summary) {
  const TuneKey& key = summary.key;
  std::cout << "key " << summary.key_hash << "\n";
  print_table({{"kernel", key.kernel},
               {"source_hash", key.source_hash},
               {"generics", format_strings(key.generics)},
               {"shape", format_shape(key)},
               {"dtypes", format_strings(key.dtypes)},
               {"device", str(key.device_name, " (compute capability ", key.compute_capability,
                              ", ", key.sm_count, " SMs)")},
               {"driver", key.driver_version},
               {"compiler", key.compiler_version},
               {"tilejit", key.tilejit_version},
               {"winner", summary.winner ? str(format_winner(summary.winner), "  ",
                                               format_ms(summary.winner->median_ms), " ms")
                                         : "-"}},
              "  ");
  std::vector<TrialRecord> trials = db.trials_for_hash(summary.key_hash);
  // Fastest successful trials first, then the failures in the order they happened.
  std::stable_sort(trials.begin(), trials.end(), [](const TrialRecord& a, const TrialRecord& b) {
    bool a_ok = a.result.status == TrialStatus::ok && a.result.median_ms;
    bool b_ok = b.result.status == TrialStatus::ok && b.result.median_ms;
    if (a_ok != b_ok) return a_ok;
    return a_ok && *a.result.median_ms < *b.result.median_ms;
  });
  std::cout << "  trials: " << trials.size() << "\n";
  if (trials.empty()) return;
  std::vector<std::vector<std::string>> rows = {
      {"CONFIG", "STATUS", "MEDIAN_MS", "SPREAD_MS", "HOST", "WHEN", "ERROR"}};
  for (const TrialRecord& trial : trials) {
    rows.push_back({config_to_string(trial.config), std::string(to_string(trial.result.status)),
                    format_ms(trial.result.median_ms), format_ms(trial.result.spread_ms),
                    trial.host, format_time(trial.created_at_ms),
                    first_line(trial.result.error, 72)});
  }
  print_table(rows, "    ");
}

void run_show(const GlobalOptions& global, const CacheOptions& options) {
  std::string path = database_path(global);
  std::vector<KeySummary> keys;
  if (database_exists(path)) {
    TuneDatabase db(path, read_only());
    keys = db.keys_matching(options.target);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (i) std::cout << "\n";
      print_key(db, keys[i]);
    }
  }
  if (keys.empty()) {
    throw Error(str("tilejit cache show: nothing in '", path, "' matches '", options.target,
                    "' (give a kernel name or a key-hash prefix from `tilejit cache list`)"));
  }
}

void run_export(const GlobalOptions& global, const CacheOptions& options) {
  std::string path = database_path(global);
  if (!database_exists(path)) {
    throw Error(str("tilejit cache export: no tuning database at '", path, "'"));
  }
  TuneDatabase db(path, read_only());
  ExportSummary summary =
      db.export_to(options.file, ExportOptions{options.kernel, !options.no_binaries});
  std::cout << "exported " << summary.keys << " keys (" << summary.trials << " trials, "
            << summary.winners << " winners, " << summary.binaries << " binaries) from '" << path
            << "' to '" << options.file << "'\n";
}

void run_import(const GlobalOptions& global, const CacheOptions& options) {
  std::string path = database_path(global);
  TuneDatabase db(path);
  ImportSummary s = db.import_from(options.file, ImportOptions{embedded_kernel_checks()});
  std::cout << "imported '" << options.file << "' into '" << path << "': " << s.keys_added
            << " new keys, " << s.trials_added << " new trials (" << s.trials_present
            << " already here); winners: " << s.winners_added << " added, " << s.winners_updated
            << " updated, " << s.winners_kept << " kept (pinned here, or as fast here), "
            << s.winners_unsupported << " not imported (no trial measured them); "
            << s.binaries_added << " new binaries\n";
  if (s.keys_unchecked > 0) {
    std::cout << s.keys_unchecked
              << " keys are of kernels this build does not ship (a .tile file of your own): "
                 "their configurations could not be checked against the kernel\n";
  }
}

void run_clear(const GlobalOptions& global, const CacheOptions& options) {
  std::string path = database_path(global);
  if (!database_exists(path)) {
    std::cout << "no tuning database at '" << path << "': nothing to clear\n";
    return;
  }
  TuneDatabase db(path);
  std::string what =
      options.kernel.empty()
          ? str("every tuning result and compiled binary in '", path, "'")
          : str("every tuning result of kernel '", options.kernel, "' in '", path, "'");
  if (!options.yes) {
    // Deleting measurements that took hours must be a deliberate act.
    if (!isatty(STDIN_FILENO)) {
      throw Error(str("tilejit cache clear: this deletes ", what, "; pass --yes to confirm"));
    }
    std::cout << "Delete " << what << "? [y/N] " << std::flush;
    std::string answer;
    std::getline(std::cin, answer);
    if (answer != "y" && answer != "Y" && answer != "yes") {
      std::cout << "nothing deleted\n";
      return;
    }
  }
  ClearSummary removed = db.clear(options.kernel);
  std::cout << "removed " << removed.keys << " keys, " << removed.trials << " trials, "
            << removed.winners << " winners and " << removed.binaries << " binaries from '" << path
            << "'\n";
}

} // namespace

void register_cache_command(CLI::App& app, GlobalOptions& global) {
  auto options = std::make_shared<CacheOptions>();
  auto* cache =
      app.add_subcommand("cache", "Look into and manage the tuning database (--db, $TILEJIT_DB, or "
                                  "~/.cache/tilejit/tilejit.db)");
  // At most one; none is refused by the callback, so that an unknown one is named (see main).
  cache->require_subcommand(0, 1);
  cache->callback([cache] {
    if (cache->get_subcommands().empty())
      throw Error("tilejit cache: give a command: list, show, export, import or clear");
  });
  // Its subcommands inherit this: `tilejit cache list --db F` hands --db up to the app.
  cache->fallthrough();

  auto* list = cache->add_subcommand(
      "list", "One line per tuning key: kernel, shape, device, winner, time, trials");
  list->callback([&global] { run_list(global); });

  auto* show = cache->add_subcommand("show", "Every field and trial of the matching keys");
  show->add_option("target", options->target, "Kernel name, or a key-hash prefix from `list`")
      ->required();
  show->callback([&global, options] { run_show(global, *options); });

  auto* export_cmd = cache->add_subcommand(
      "export", "Write winners, trials and binaries to a JSON file another machine can import");
  export_cmd->add_option("file", options->file, "File to write (replaced atomically)")->required();
  export_cmd->add_option("--kernel", options->kernel, "Export only this kernel");
  export_cmd->add_flag("--no-binaries", options->no_binaries,
                       "Leave compiled binaries out (smaller file; the importer recompiles)");
  export_cmd->callback([&global, options] { run_export(global, *options); });

  auto* import_cmd = cache->add_subcommand(
      "import", "Merge an export file: keeps every trial, never replaces a pinned winner, "
                "otherwise keeps the faster winner");
  import_cmd->add_option("file", options->file, "File written by `tilejit cache export`")
      ->required();
  import_cmd->callback([&global, options] { run_import(global, *options); });

  auto* clear = cache->add_subcommand("clear", "Delete tuning results (all, or one kernel's)");
  clear->add_option("--kernel", options->kernel, "Delete only this kernel's results");
  clear->add_flag("-y,--yes", options->yes, "Do not ask for confirmation");
  clear->callback([&global, options] { run_clear(global, *options); });
}

} // namespace tilejit::cli
