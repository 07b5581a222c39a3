// TuneDatabase: opening safely, retried writes, trials, winners, binaries, listing, clearing.
#include "tuner/tune_database.h"

#include "support/error.h"
#include "support/sha256.h"
#include "tuner/tune_database_rows.h"
#include "tuner/tune_database_schema.h"
#include "tuner/tune_database_sqlite.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>
#include <thread>
#include <unistd.h>

namespace tilejit {

namespace fs = std::filesystem;

namespace {

constexpr std::array<std::string_view, 6> kStatusNames = {
    "ok", "compile_error", "launch_error", "wrong_result", "timeout", "pruned"};

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// Unique across processes and machines: host, pid, time and randomness, hashed.
std::string new_trial_id(const std::string& host) {
  static std::atomic<uint64_t> counter{0};
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  auto now = std::chrono::high_resolution_clock::now().time_since_epoch().count();
  return sha256_hex(str(host, '/', ::getpid(), '/', now, '/', counter++, '/', rng())).substr(0, 32);
}

double shape_distance(const std::map<std::string, int64_t>& a,
                      const std::map<std::string, int64_t>& b) {
  std::set<std::string> names;
  for (const auto& [name, size] : a) names.insert(name);
  for (const auto& [name, size] : b) names.insert(name);
  double distance = 0;
  for (const std::string& name : names) {
    auto ia = a.find(name), ib = b.find(name);
    if (ia == a.end() || ib == b.end()) {
      distance += 64;
      continue;
    }
    double x = static_cast<double>(std::max<int64_t>(ia->second, 1));
    double y = static_cast<double>(std::max<int64_t>(ib->second, 1));
    distance += std::fabs(std::log2(x / y));
  }
  return distance;
}

} // namespace

std::string_view to_string(TrialStatus status) {
  auto index = static_cast<size_t>(status);
  TJ_ICHECK(index < kStatusNames.size(), "TrialStatus value ", index, " has no name");
  return kStatusNames[index];
}

TrialStatus trial_status_from_string(std::string_view text) {
  for (size_t i = 0; i < kStatusNames.size(); ++i) {
    if (kStatusNames[i] == text) return static_cast<TrialStatus>(i);
  }
  throw Error(str("unknown trial status '", text,
                  "' (expected ok, compile_error, launch_error, wrong_result, timeout or pruned)"));
}

std::string TuneDatabase::default_path() {
  std::string explicit_path = env("TILEJIT_DB");
  if (!explicit_path.empty()) return explicit_path;
  // The XDG spec says relative values are to be ignored.
  std::string xdg = env("XDG_CACHE_HOME");
  if (!xdg.empty() && xdg[0] == '/') return (fs::path(xdg) / "tilejit" / "tilejit.db").string();
  std::string home = env("HOME");
  if (home.empty()) {
    throw Error("cannot find a place for the tuning database: neither TILEJIT_DB, "
                "XDG_CACHE_HOME nor HOME is set; pass --db");
  }
  return (fs::path(home) / ".cache" / "tilejit" / "tilejit.db").string();
}

TuneDatabase::TuneDatabase(const std::string& path, const TuneDatabaseOptions& options)
    : path_(path), options_(options), host_(host_name()) {
  if (path_.empty()) throw Error("the tuning database path is empty; pass --db FILE");
  std::error_code ec;
  // SQLite names files by their full path in a 512-byte buffer, suffixes ("-journal")
  // included, and fails with a bare "unable to open database file" past it.
  fs::path full = fs::weakly_canonical(fs::absolute(path_, ec), ec);
  if (!ec && full.string().size() > max_path_bytes) {
    throw Error(str("the tuning database path '", path_, "' is ", full.string().size(),
                    " bytes long as a full path; SQLite accepts at most ", max_path_bytes,
                    "; use a shorter --db path (or a symbolic link to its directory)"));
  }
  fs::file_status status = fs::status(path_, ec);
  bool exists = fs::exists(status);
  if (exists && !fs::is_regular_file(status)) {
    throw Error(str("'", path_, "' is not a tilejit tuning database: not a regular file",
                    tune_schema::kMoveAwayHint));
  }
  // An empty file holds nothing to protect (SQLite itself treats it as an empty database).
  bool has_content = exists && fs::file_size(path_, ec) > 0 && !ec;
  tune_schema::FileState state = tune_schema::FileState::empty;
  if (has_content) {
    state = tune_schema::check_existing_file(path_, options_.busy_timeout_ms);
  } else if (options_.read_only) {
    if (!exists) throw Error(str("no tuning database at '", path_, "'"));
  } else if (!exists) {
    fs::path parent = fs::path(path_).parent_path();
    if (!parent.empty()) {
      fs::create_directories(parent, ec);
      if (ec) {
        throw Error(str("cannot create the directory '", parent.string(),
                        "' for the tuning database: ", ec.message()));
      }
    }
  }

  if (options_.read_only) {
    if (state == tune_schema::FileState::empty) {
      // Nothing to read, and nothing of ours to create in a file we only read: answer every
      // query from an empty in-memory database of the same schema.
      db_ = std::make_unique<sqlite::Connection>(":memory:",
                                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
      tune_schema::create_schema(*db_);
      return;
    }
    open_read_only();
    return;
  }

  db_ = std::make_unique<sqlite::Connection>(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  db_->set_busy_timeout(options_.busy_timeout_ms);
  // WAL lets readers (the runtime) proceed while a tuner writes. Switching needs a brief
  // exclusive lock, so another process opening at the same moment may make us retry.
  auto start = std::chrono::steady_clock::now();
  for (int attempt = 0;; ++attempt) {
    try {
      db_->query_text("PRAGMA journal_mode = WAL");
      break;
    } catch (const sqlite::SqliteError& e) {
      if (!e.busy()) {
        int primary = e.code() & 0xff;
        if (primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN || primary == SQLITE_PERM)
          throw Error(str("cannot write to the tuning database '", path_, "' (", e.detail(),
                          "): its file or directory is read-only; commands that only read it "
                          "(cache list, show, export) still work, or pass --db"));
        throw;
      }
      wait_for_lock(start, attempt, e.detail());
    }
  }
  // NORMAL is durable in WAL mode except for the last commits before a power loss, which for
  // a cache of measurements is the right trade for not syncing on every trial.
  db_->exec("PRAGMA synchronous = NORMAL");
  db_->exec("PRAGMA foreign_keys = ON");
  if (state == tune_schema::FileState::empty) {
    // Another process may have created the schema since we looked: decide again under the
    // write lock, and create only a file that is still empty.
    write_transaction([&] {
      if (tune_schema::check_state(*db_) == tune_schema::FileState::empty) {
        tune_schema::create_schema(*db_);
      }
    });
  }
}

void TuneDatabase::open_read_only() {
  // An ordinary read-only connection reads a WAL-mode file through its -shm index, which it
  // must create when missing: impossible on a read-only directory. Then the main file alone is
  // read (immutable): on such a directory no tilejit can be writing to it.
  auto try_open = [&](const std::string& uri) {
    db_ = std::make_unique<sqlite::Connection>(path_, SQLITE_OPEN_READONLY,
                                               /*no_checkpoint_on_close=*/true, uri);
    db_->set_busy_timeout(options_.busy_timeout_ms);
    db_->query_int("SELECT count(*) FROM tune_keys"); // opening is lazy: read something now
  };
  try {
    try_open("");
  } catch (const sqlite::SqliteError& e) {
    int primary = e.code() & 0xff;
    if (primary != SQLITE_CANTOPEN && primary != SQLITE_READONLY && primary != SQLITE_PERM &&
        primary != SQLITE_IOERR)
      throw;
    db_.reset();
    try_open(sqlite::file_uri(path_, "mode=ro&immutable=1"));
  }
}

TuneDatabase::~TuneDatabase() = default;

void TuneDatabase::wait_for_lock(std::chrono::steady_clock::time_point start, int attempt,
                                 const std::string& detail) {
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - start)
                    .count();
  if (waited >= options_.lock_wait_ms) {
    throw Error(str("'", path_, "' is locked: another process has held its write lock for over ",
                    waited / 1000.0, " s (", detail,
                    "); wait for it to finish, or pass --db to use another file"));
  }
  // Exponential backoff with jitter, so two waiting writers do not retry in lockstep.
  static thread_local std::mt19937 rng{std::random_device{}()};
  int cap = std::min(200, 1 << std::min(attempt, 7));
  std::this_thread::sleep_for(
      std::chrono::milliseconds(1 + std::uniform_int_distribution<int>(0, cap)(rng)));
}

void TuneDatabase::write_transaction(const std::function<void()>& body) {
  if (options_.read_only)
    throw Error(str("'", path_, "' was opened read-only (a command that only reads it)"));
  auto start = std::chrono::steady_clock::now();
  auto rollback = [&] {
    if (!sqlite3_get_autocommit(db_->handle())) sqlite3_exec(db_->handle(), "ROLLBACK", 0, 0, 0);
  };
  for (int attempt = 0;; ++attempt) {
    try {
      // IMMEDIATE takes the write lock now: a deferred transaction that later upgrades can
      // fail with SQLITE_BUSY without the busy handler being consulted.
      db_->exec("BEGIN IMMEDIATE");
    } catch (const sqlite::SqliteError& e) {
      if (!e.busy()) throw;
      wait_for_lock(start, attempt, e.detail());
      continue;
    }
    try {
      body();
      db_->exec("COMMIT");
      return;
    } catch (const sqlite::SqliteError& e) {
      rollback();
      if (!e.busy()) throw;
      wait_for_lock(start, attempt, e.detail());
    } catch (...) {
      rollback();
      throw;
    }
  }
}

void TuneDatabase::read_transaction(const std::function<void()>& body) {
  // One snapshot for multi-statement reads (export), so a concurrent tuner cannot make the
  // keys, trials and winners we read disagree.
  db_->exec("BEGIN");
  try {
    body();
    db_->exec("COMMIT");
  } catch (...) {
    if (!sqlite3_get_autocommit(db_->handle())) sqlite3_exec(db_->handle(), "ROLLBACK", 0, 0, 0);
    throw;
  }
}

TrialRecord TuneDatabase::record_trial(const TuneKey& key, const TuneConfig& config,
                                       const TrialResult& result) {
  std::lock_guard<std::mutex> lock(mutex_);
  TrialRecord trial;
  trial.id = new_trial_id(host_);
  trial.config = config;
  trial.result = result;
  trial.created_at_ms = tune_rows::now_ms();
  trial.host = host_;
  std::string key_hash = key.hash();
  write_transaction([&] {
    tune_rows::insert_key(*db_, key, key_hash, trial.created_at_ms);
    TJ_ICHECK(tune_rows::insert_trial(*db_, key_hash, trial), "trial id ", trial.id, " is fresh");
  });
  return trial;
}

std::vector<TrialRecord> TuneDatabase::trials_for(const TuneKey& key) {
  return trials_for_hash(key.hash());
}

std::vector<TrialRecord> TuneDatabase::trials_for_hash(const std::string& key_hash) {
  std::lock_guard<std::mutex> lock(mutex_);
  sqlite::Statement stmt(*db_, str("SELECT ", tune_rows::kTrialColumns,
                                   " FROM trials t WHERE "
                                   "t.key_hash = ?1 ORDER BY t.created_at, t.rowid"));
  stmt.bind(1, key_hash);
  std::vector<TrialRecord> trials;
  while (stmt.step()) trials.push_back(tune_rows::read_trial(stmt, 0, path_));
  return trials;
}

std::optional<TrialRecord> TuneDatabase::find_trial(const TuneKey& key, const TuneConfig& config) {
  std::lock_guard<std::mutex> lock(mutex_);
  sqlite::Statement stmt(*db_, str("SELECT ", tune_rows::kTrialColumns,
                                   " FROM trials t WHERE "
                                   "t.key_hash = ?1 AND t.config = ?2 "
                                   "ORDER BY t.created_at DESC, t.rowid DESC LIMIT 1"));
  stmt.bind(1, key.hash()).bind(2, config_to_string(config));
  if (!stmt.step()) return std::nullopt;
  return tune_rows::read_trial(stmt, 0, path_);
}

bool TuneDatabase::set_winner(const TuneKey& key, const TuneConfig& config,
                              std::optional<double> median_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string key_hash = key.hash();
  bool stored = false;
  write_transaction([&] {
    int64_t now = tune_rows::now_ms();
    tune_rows::insert_key(*db_, key, key_hash, now);
    std::optional<Winner> current = tune_rows::find_winner(*db_, key_hash);
    stored = !(current && current->pinned);
    if (stored) tune_rows::write_winner(*db_, key_hash, Winner{config, median_ms, false, now});
  });
  return stored;
}

std::optional<Winner> TuneDatabase::winner(const TuneKey& key) {
  return winner_for_hash(key.hash());
}

std::optional<Winner> TuneDatabase::winner_for_hash(const std::string& key_hash) {
  std::lock_guard<std::mutex> lock(mutex_);
  return tune_rows::find_winner(*db_, key_hash);
}

void TuneDatabase::pin(const TuneKey& key, const TuneConfig& config) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string key_hash = key.hash();
  write_transaction([&] {
    int64_t now = tune_rows::now_ms();
    tune_rows::insert_key(*db_, key, key_hash, now);
    sqlite::Statement timed(*db_, "SELECT median_ms FROM trials WHERE key_hash = ?1 AND config = "
                                  "?2 AND status = 'ok' ORDER BY created_at DESC, rowid DESC "
                                  "LIMIT 1");
    timed.bind(1, key_hash).bind(2, config_to_string(config));
    std::optional<double> median = timed.step() ? timed.optional_double(0) : std::nullopt;
    tune_rows::write_winner(*db_, key_hash, Winner{config, median, true, now});
  });
}

void TuneDatabase::unpin(const TuneKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string key_hash = key.hash();
  write_transaction([&] {
    sqlite::Statement stmt(*db_, "UPDATE winners SET pinned = 0, updated_at = ?2 "
                                 "WHERE key_hash = ?1");
    stmt.bind(1, key_hash).bind(2, tune_rows::now_ms()).run();
  });
}

std::vector<NearestWinner> TuneDatabase::nearest_winners(const TuneKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  sqlite::Statement stmt(*db_, str("SELECT k.key_hash, ", tune_rows::kKeyColumns, ", ",
                                   tune_rows::kWinnerColumns,
                                   " FROM tune_keys k JOIN winners w ON w.key_hash = k.key_hash "
                                   "WHERE k.shapeless_hash = ?1"));
  stmt.bind(1, key.shapeless_hash());
  std::vector<NearestWinner> found;
  while (stmt.step()) {
    NearestWinner near;
    near.key_hash = stmt.text(0);
    near.key = tune_rows::read_key(stmt, 1, path_);
    near.winner = tune_rows::read_winner(stmt, 13, path_);
    near.distance = shape_distance(near.key.shape, key.shape);
    found.push_back(std::move(near));
  }
  std::sort(found.begin(), found.end(), [](const NearestWinner& a, const NearestWinner& b) {
    return a.distance != b.distance ? a.distance < b.distance : a.key_hash < b.key_hash;
  });
  return found;
}

void TuneDatabase::put_binary(const std::string& cache_key, const std::string& arch,
                              std::string_view bytes, const std::string& kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  write_transaction([&] {
    sqlite::Statement stmt(*db_, "INSERT OR REPLACE INTO binaries(cache_key, arch, kernel, data, "
                                 "created_at) VALUES (?1, ?2, ?3, ?4, ?5)");
    stmt.bind(1, cache_key).bind(2, arch).bind(3, kernel).bind_blob(4, bytes);
    stmt.bind(5, tune_rows::now_ms()).run();
  });
}

std::optional<std::string> TuneDatabase::get_binary(const std::string& cache_key) {
  std::lock_guard<std::mutex> lock(mutex_);
  sqlite::Statement stmt(*db_, "SELECT data FROM binaries WHERE cache_key = ?1");
  stmt.bind(1, cache_key);
  if (!stmt.step()) return std::nullopt;
  return stmt.blob(0);
}

std::vector<KeySummary> TuneDatabase::summaries(const std::string& where,
                                                const std::string& argument) {
  std::lock_guard<std::mutex> lock(mutex_);
  sqlite::Statement stmt(
      *db_,
      str("SELECT k.key_hash, ", tune_rows::kKeyColumns, ", w.key_hash IS NOT NULL, ",
          tune_rows::kWinnerColumns,
          ", (SELECT count(*) FROM trials t WHERE t.key_hash = k.key_hash), "
          "(SELECT count(*) FROM trials t WHERE t.key_hash = k.key_hash AND t.status = 'ok'), "
          "(SELECT coalesce(max(t.created_at), 0) FROM trials t WHERE t.key_hash = k.key_hash) "
          "FROM tune_keys k LEFT JOIN winners w ON w.key_hash = k.key_hash WHERE ",
          where));
  if (!argument.empty()) stmt.bind(1, argument);
  std::vector<KeySummary> out;
  while (stmt.step()) {
    KeySummary summary;
    summary.key_hash = stmt.text(0);
    summary.key = tune_rows::read_key(stmt, 1, path_);
    if (stmt.int64(13) != 0) summary.winner = tune_rows::read_winner(stmt, 14, path_);
    summary.trial_count = stmt.int64(18);
    summary.ok_count = stmt.int64(19);
    summary.last_trial_at_ms = stmt.int64(20);
    out.push_back(std::move(summary));
  }
  std::sort(out.begin(), out.end(), [](const KeySummary& a, const KeySummary& b) {
    if (a.key.kernel != b.key.kernel) return a.key.kernel < b.key.kernel;
    if (a.key.shape != b.key.shape) return a.key.shape < b.key.shape;
    return a.key_hash < b.key_hash;
  });
  return out;
}

std::vector<KeySummary> TuneDatabase::list() {
  return summaries("1", "");
}

std::vector<KeySummary> TuneDatabase::keys_matching(const std::string& text) {
  if (text.empty()) return {};
  return summaries("k.kernel = ?1 OR substr(k.key_hash, 1, length(?1)) = lower(?1)", text);
}

ClearSummary TuneDatabase::clear(const std::string& kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  ClearSummary summary;
  write_transaction([&] {
    summary = ClearSummary{};
    auto remove = [&](const char* sql) {
      sqlite::Statement stmt(*db_, sql);
      if (!kernel.empty()) stmt.bind(1, kernel);
      stmt.run();
      return stmt.changes();
    };
    if (kernel.empty()) {
      summary.trials = remove("DELETE FROM trials");
      summary.winners = remove("DELETE FROM winners");
      summary.keys = remove("DELETE FROM tune_keys");
      summary.binaries = remove("DELETE FROM binaries");
    } else {
      summary.trials = remove("DELETE FROM trials WHERE key_hash IN "
                              "(SELECT key_hash FROM tune_keys WHERE kernel = ?1)");
      summary.winners = remove("DELETE FROM winners WHERE key_hash IN "
                               "(SELECT key_hash FROM tune_keys WHERE kernel = ?1)");
      summary.keys = remove("DELETE FROM tune_keys WHERE kernel = ?1");
      summary.binaries = remove("DELETE FROM binaries WHERE kernel = ?1");
    }
  });
  return summary;
}

} // namespace tilejit
