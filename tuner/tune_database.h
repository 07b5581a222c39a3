// The tuning database: one SQLite file holding every trial, the winner per TuneKey, and
// compiled binaries, shared safely by concurrent `tilejit tune` processes and the runtime.
// The tables are in tune_database_schema.cpp; the export file format is described at
// export_to() below.
#pragma once

#include "tuner/tune_key.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilejit {

namespace sqlite {
class Connection;
}

/// How one candidate configuration fared.
enum class TrialStatus { ok, compile_error, launch_error, wrong_result, timeout, pruned };

/// "ok", "compile_error", ... (the text stored in the database).
std::string_view to_string(TrialStatus status);
/// Inverse of to_string; throws tilejit::Error naming the text when it is not a status.
TrialStatus trial_status_from_string(std::string_view text);

/// What the tuner measured for one configuration (median/spread only when it ran).
struct TrialResult {
  TrialStatus status = TrialStatus::ok;
  std::optional<double> median_ms;
  std::optional<double> spread_ms;
  std::string error; ///< compiler log, launch error, mismatch summary...
};

/// A stored trial: the result plus where and when it was taken.
struct TrialRecord {
  std::string id; ///< unique across machines, so imports can tell trials apart
  TuneConfig config;
  TrialResult result;
  int64_t created_at_ms = 0; ///< Unix time in milliseconds
  std::string host;
};

/// The configuration to launch for a key.
struct Winner {
  TuneConfig config;
  std::optional<double> median_ms; ///< empty when pinned to a config never timed
  bool pinned = false;             ///< set by the user; tuning never replaces it
  int64_t updated_at_ms = 0;
};

/// A winner of a key that differs from the asked-for key only in shape.
struct NearestWinner {
  std::string key_hash;
  TuneKey key; ///< the tuned key; key.shape is the shape it was tuned for
  Winner winner;
  /// Sum over the shape's sizes of |log2(tuned / asked)|; sizes missing on one side count 64.
  double distance = 0;
};

/// One key's summary, for `tilejit cache list`.
struct KeySummary {
  std::string key_hash;
  TuneKey key;
  std::optional<Winner> winner;
  int64_t trial_count = 0;
  int64_t ok_count = 0;
  int64_t last_trial_at_ms = 0; ///< 0 when there are no trials
};

/// What clear() removed.
struct ClearSummary {
  int64_t keys = 0, trials = 0, winners = 0, binaries = 0;
};

/// What export_to() wrote.
struct ExportSummary {
  int64_t keys = 0, trials = 0, winners = 0, binaries = 0;
};

/// What import_from() merged in.
struct ImportSummary {
  int64_t keys_added = 0;
  int64_t trials_added = 0;
  int64_t trials_present = 0;  ///< already here (same trial id): skipped
  int64_t winners_added = 0;   ///< key had no winner here
  int64_t winners_updated = 0; ///< incoming was pinned, or faster than an unpinned local one
  int64_t winners_kept = 0;    ///< local was pinned, or as fast or faster
  /// Not imported: no ok trial (in the file or here) measured the winner's configuration at its
  /// median, and the key has a winner here or its kernel could not be checked.
  int64_t winners_unsupported = 0;
  int64_t keys_unchecked = 0; ///< keys whose kernel this build could not find to check against
  int64_t binaries_added = 0;
};

/// Options for export_to().
struct ExportOptions {
  std::string kernel;   ///< only this kernel's keys (and binaries); empty = everything
  bool binaries = true; ///< include compiled binaries (base64)
};

/// Why `config` cannot be a configuration of a key's kernel ("" when it can be one). A
/// `measured` configuration (an ok trial, a winner) must also meet the kernel's `where`
/// constraints; a failed or pruned trial's needs only the kernel's tunables and their choices.
using ConfigCheck = std::function<std::string(const TuneConfig& config, bool measured)>;
/// The ConfigCheck of a key's kernel, or an empty function when the kernel cannot be found
/// (by name and source hash). The database needs no compiler: the caller supplies this.
using KernelConfigChecks = std::function<ConfigCheck(const TuneKey& key)>;

/// Options for import_from().
struct ImportOptions {
  /// Checks every configuration of a key whose kernel it finds; a bad one refuses the file.
  KernelConfigChecks kernel_checks;
};

/// Options for opening.
struct TuneDatabaseOptions {
  /// How long one SQLite call waits for another process's lock before retrying.
  int busy_timeout_ms = 5000;
  /// How long a write keeps retrying in total before giving up with "is locked".
  int lock_wait_ms = 60000;
  /// Read without ever writing: the file must exist; nothing is created or converted (no
  /// schema, no WAL switch), so a database on a read-only directory or file system can be
  /// read, and a file that is not (yet) a tilejit database is never taken over. Writes throw.
  bool read_only = false;
};

/// The tuning database file. Thread-safe: calls serialize on an internal mutex. Several
/// processes may use one file at once (WAL mode, busy timeout, retried write transactions).
class TuneDatabase {
public:
  /// $TILEJIT_DB, else $XDG_CACHE_HOME/tilejit/tilejit.db, else ~/.cache/tilejit/tilejit.db.
  /// Pure: the directory is created when a database is first opened there.
  static std::string default_path();

  /// Opens `path`, creating the file (and its directory) when missing (unless read-only). An
  /// existing file must
  /// be a tilejit database this version understands; otherwise throws tilejit::Error naming
  /// the path and the problem (not SQLite, corrupt or truncated, another application's
  /// database, a newer schema) and leaves the file untouched.
  explicit TuneDatabase(const std::string& path, const TuneDatabaseOptions& options = {});
  ~TuneDatabase();
  TuneDatabase(const TuneDatabase&) = delete;
  TuneDatabase& operator=(const TuneDatabase&) = delete;

  const std::string& path() const { return path_; }

  // --- trials -------------------------------------------------------------------------------
  /// Stores one trial (a config may be tried again: every trial is kept).
  TrialRecord record_trial(const TuneKey& key, const TuneConfig& config, const TrialResult& result);
  /// Every trial of `key`, oldest first.
  std::vector<TrialRecord> trials_for(const TuneKey& key);
  /// Every trial of the key with this hash, oldest first.
  std::vector<TrialRecord> trials_for_hash(const std::string& key_hash);
  /// The latest trial of `config` under `key`, so the tuner can skip configs already timed.
  std::optional<TrialRecord> find_trial(const TuneKey& key, const TuneConfig& config);

  // --- winners ------------------------------------------------------------------------------
  /// Makes `config` the key's winner unless the current winner is pinned. Returns whether
  /// it was stored.
  bool set_winner(const TuneKey& key, const TuneConfig& config, std::optional<double> median_ms);
  std::optional<Winner> winner(const TuneKey& key);
  std::optional<Winner> winner_for_hash(const std::string& key_hash);
  /// Pins `config` as the key's winner (replacing any winner); its median is taken from the
  /// latest ok trial of that config, if any.
  void pin(const TuneKey& key, const TuneConfig& config);
  /// Makes a pinned winner an ordinary one again (tuning may then replace it).
  void unpin(const TuneKey& key);
  /// Winners of keys with the same shapeless_hash as `key` (the key itself included when
  /// tuned), nearest shape first; ties in key-hash order.
  std::vector<NearestWinner> nearest_winners(const TuneKey& key);

  // --- compiled binaries --------------------------------------------------------------------
  /// Stores a compiled module (cubin / code object) under the runtime's module cache key.
  /// `kernel` (optional) lets `clear --kernel` drop it too.
  void put_binary(const std::string& cache_key, const std::string& arch, std::string_view bytes,
                  const std::string& kernel = "");
  std::optional<std::string> get_binary(const std::string& cache_key);

  // --- whole database -----------------------------------------------------------------------
  /// One summary per key, ordered by kernel, then shape.
  std::vector<KeySummary> list();
  /// Keys whose kernel is `text` or whose hash starts with `text`.
  std::vector<KeySummary> keys_matching(const std::string& text);
  /// Deletes everything (kernel empty) or one kernel's keys, trials, winners and binaries.
  ClearSummary clear(const std::string& kernel = "");
  /// Writes a JSON export file atomically. Format (version 1), chosen over an SQLite file so
  /// that it can be read, diffed and merged by anything:
  ///   {"format": "tilejit-tuning-export", "format_version": 1, "tilejit_version": "0.1.0",
  ///    "exported_at_ms": N, "exported_from": "host:path",
  ///    "keys": [{"key_hash": "<TuneKey::hash()>",
  ///              "key": {every TuneKey field by name; generics/shape/dtypes as objects},
  ///              "winner": null | {"config": "BN=32,S=16", "median_ms": x|null,
  ///                                "pinned": bool, "updated_at_ms": N},
  ///              "trials": [{"id", "config", "status", "median_ms", "spread_ms", "error",
  ///                          "created_at_ms", "host"}]}],
  ///    "binaries": [{"cache_key", "arch", "kernel", "created_at_ms", "data_base64"}]}
  /// Times are Unix milliseconds; medians are written with full double precision.
  ExportSummary export_to(const std::string& file, const ExportOptions& options = {});
  /// Merges an export file in one transaction: all trials are kept (deduplicated by id),
  /// a local pinned winner is never replaced, otherwise the pinned or faster winner wins. Every
  /// field is checked first (type, range: a median > 0 and finite, integers that fit; every
  /// configuration against its kernel when options.kernel_checks finds it) and any problem
  /// refuses the whole file, naming the entry and field. An incoming winner that no ok trial
  /// (in the file or here) measured at its median never replaces a winner here, and is not
  /// imported at all for a kernel that could not be checked.
  ImportSummary import_from(const std::string& file, const ImportOptions& options = {});

  /// The schema version this build writes and understands (PRAGMA user_version).
  static constexpr int64_t schema_version = 1;
  /// Longest full path (symbolic links resolved) of a database file SQLite can open, in bytes.
  static constexpr size_t max_path_bytes = 504;
  /// PRAGMA application_id of tilejit databases: 'TJDB'.
  static constexpr int64_t application_id = 0x544A4442;

private:
  /// Runs `body` inside BEGIN IMMEDIATE ... COMMIT, retrying while another process holds the
  /// write lock, until options_.lock_wait_ms; `body` must be safe to run again after rollback.
  void write_transaction(const std::function<void()>& body);
  /// Runs `body` on one read snapshot.
  void read_transaction(const std::function<void()>& body);
  /// Sleeps before retrying a busy write, or throws "is locked" once lock_wait_ms has passed.
  void wait_for_lock(std::chrono::steady_clock::time_point start, int attempt,
                     const std::string& detail);
  std::vector<KeySummary> summaries(const std::string& where, const std::string& argument);
  /// The read-only connection of options_.read_only: ordinary, else the main file alone.
  void open_read_only();

  std::string path_;
  TuneDatabaseOptions options_;
  std::string host_; ///< recorded with every trial
  std::unique_ptr<sqlite::Connection> db_;
  std::mutex mutex_;
};

} // namespace tilejit
