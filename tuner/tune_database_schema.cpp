// Tables of the tuning database and the safety checks run before a file is used.
#include "tuner/tune_database_schema.h"

#include "support/error.h"
#include "support/text.h"
#include "support/version.h"
#include "tuner/tune_database.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <array>
#include <chrono>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <thread>
#include <vector>

namespace tilejit::tune_schema {

namespace {

// Version 1. A later version adds a migration step from the previous one; files of a newer
// version than this build knows are refused rather than guessed at.
constexpr const char* kSchemaSql = R"sql(
CREATE TABLE meta(
  name  TEXT PRIMARY KEY,
  value TEXT NOT NULL);

-- One row per TuneKey: every field, so the file explains itself and nearest-shape lookups can
-- read the shapes. generics, shape and dtypes are JSON objects.
CREATE TABLE tune_keys(
  key_hash           TEXT PRIMARY KEY,
  shapeless_hash     TEXT NOT NULL,
  kernel             TEXT NOT NULL,
  source_hash        TEXT NOT NULL,
  generics           TEXT NOT NULL,
  shape              TEXT NOT NULL,
  shape_bucket       TEXT NOT NULL,
  dtypes             TEXT NOT NULL,
  device_name        TEXT NOT NULL,
  compute_capability TEXT NOT NULL,
  sm_count           INTEGER NOT NULL,
  driver_version     TEXT NOT NULL,
  compiler_version   TEXT NOT NULL,
  tilejit_version    TEXT NOT NULL,
  created_at         INTEGER NOT NULL);
CREATE INDEX tune_keys_by_shapeless ON tune_keys(shapeless_hash);
CREATE INDEX tune_keys_by_kernel ON tune_keys(kernel);

-- Every trial ever run; id is unique across machines so that imports merge without loss.
CREATE TABLE trials(
  id         TEXT PRIMARY KEY,
  key_hash   TEXT NOT NULL REFERENCES tune_keys(key_hash),
  config     TEXT NOT NULL,
  status     TEXT NOT NULL CHECK (status IN
               ('ok', 'compile_error', 'launch_error', 'wrong_result', 'timeout', 'pruned')),
  median_ms  REAL,
  spread_ms  REAL,
  error      TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  host       TEXT NOT NULL);
CREATE INDEX trials_by_key_config ON trials(key_hash, config, created_at);

CREATE TABLE winners(
  key_hash   TEXT PRIMARY KEY REFERENCES tune_keys(key_hash),
  config     TEXT NOT NULL,
  median_ms  REAL,
  pinned     INTEGER NOT NULL CHECK (pinned IN (0, 1)),
  updated_at INTEGER NOT NULL);

-- Compiled modules keyed by the runtime's module cache key (source + options + arch + compiler).
CREATE TABLE binaries(
  cache_key  TEXT PRIMARY KEY,
  arch       TEXT NOT NULL,
  kernel     TEXT NOT NULL,
  data       BLOB NOT NULL,
  created_at INTEGER NOT NULL);

-- For people reading the file with the sqlite3 shell: each trial beside its key's fields.
CREATE VIEW trials_with_keys AS
  SELECT t.*, k.kernel, k.source_hash, k.generics, k.shape, k.shape_bucket, k.dtypes,
         k.device_name, k.compute_capability, k.sm_count, k.driver_version,
         k.compiler_version, k.tilejit_version
  FROM trials t JOIN tune_keys k ON k.key_hash = t.key_hash;
)sql";

constexpr std::array<const char*, 5> kTables = {"binaries", "meta", "trials", "tune_keys",
                                                "winners"};

[[noreturn]] void not_ours(const std::string& path, const std::string& reason) {
  throw Error(str("'", path, "' is not a tilejit tuning database: ", reason, kMoveAwayHint));
}

[[noreturn]] void damaged(const std::string& path, const std::string& reason) {
  throw Error(str("'", path, "' is a damaged tilejit tuning database: ", reason, kMoveAwayHint));
}

uint32_t big_endian(const unsigned char* bytes, int count) {
  uint32_t value = 0;
  for (int i = 0; i < count; ++i) value = (value << 8) | bytes[i];
  return value;
}

std::string hex32(int64_t value) {
  return fmt::format("0x{:08X}", static_cast<unsigned>(value & 0xffffffff));
}

// Reads the 100-byte SQLite header ourselves, so a file that is not SQLite at all, or was cut
// short, is refused before any SQLite code could touch it.
void check_header(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  uintmax_t size = fs::file_size(path, ec);
  if (ec) throw Error(str("cannot read '", path, "': ", ec.message()));
  std::array<unsigned char, 100> header{};
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(str("cannot read '", path, "': ", std::strerror(errno)));
  in.read(reinterpret_cast<char*>(header.data()), header.size());
  size_t got = static_cast<size_t>(in.gcount());
  static const char kMagic[] = "SQLite format 3";
  if (got < header.size() || std::memcmp(header.data(), kMagic, sizeof kMagic) != 0) {
    not_ours(path, str("not an SQLite file (", size, " bytes, no SQLite header)"));
  }
  uint32_t page_size = big_endian(&header[16], 2);
  if (page_size == 1) page_size = 65536;
  uint32_t change_counter = big_endian(&header[24], 4);
  uint32_t page_count = big_endian(&header[28], 4);
  uint32_t valid_for = big_endian(&header[92], 4);
  // The header's page count is authoritative only when valid_for matches the change counter.
  // A pending write-ahead log may legitimately hold pages beyond the main file, so the size
  // is judged only when there is none.
  uintmax_t wal_size = fs::file_size(path + "-wal", ec);
  bool has_wal = !ec && wal_size > 0;
  uintmax_t expected = static_cast<uintmax_t>(page_count) * page_size;
  if (!has_wal && valid_for == change_counter && page_count > 0 && size < expected) {
    damaged(path, str("truncated: its header says ", page_count, " pages of ", page_size,
                      " bytes (", expected, " bytes) but the file has ", size, " bytes"));
  }
}

std::vector<std::string> table_names(sqlite::Connection& db) {
  sqlite::Statement stmt(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT "
                             "LIKE 'sqlite_%' ORDER BY name");
  std::vector<std::string> names;
  while (stmt.step()) names.push_back(stmt.text(0));
  return names;
}

} // namespace

FileState check_state(sqlite::Connection& db) {
  const std::string& path = db.path();
  int64_t app_id = db.query_int("PRAGMA application_id");
  int64_t version = db.query_int("PRAGMA user_version");
  std::vector<std::string> tables = table_names(db);
  if (app_id == TuneDatabase::application_id) {
    if (version > TuneDatabase::schema_version) {
      throw Error(str("'", path, "' was written by a newer tilejit (schema version ", version,
                      "; this build understands up to ", TuneDatabase::schema_version,
                      "); upgrade tilejit or pass --db (tilejit left it as is)"));
    }
    if (version < 1) damaged(path, str("tilejit's application id but schema version ", version));
    // Version 1 is the first schema, so there is nothing older to migrate from yet.
    for (const char* table : kTables) {
      bool found = false;
      for (const std::string& name : tables) found = found || name == table;
      if (!found) damaged(path, str("table '", table, "' is missing"));
    }
    return FileState::current;
  }
  int64_t objects = db.query_int("SELECT count(*) FROM sqlite_master");
  // A user_version set by someone else marks the file as theirs even with no tables yet.
  if (app_id == 0 && objects == 0 && version == 0) return FileState::empty;
  not_ours(path, str("it is an SQLite database of another application (application_id ",
                     hex32(app_id), version != 0 ? str(", user_version ", version) : std::string(),
                     ", tables: ", tables.empty() ? "none" : join(tables, ", "), ")"));
}

namespace {

// What a concurrent writer would change: the main file's identity, size and mtime, and
// whether a write-ahead log with content sits beside it.
struct FileStamp {
  bool exists = false;
  ino_t inode = 0;
  off_t size = 0;
  int64_t mtime_ns = 0;
  bool has_wal = false;
  bool operator==(const FileStamp&) const = default;
};

FileStamp stamp(const std::string& path) {
  FileStamp result;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    result.exists = true;
    result.inode = st.st_ino;
    result.size = st.st_size;
    result.mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  }
  struct stat wal {};
  result.has_wal = ::stat((path + "-wal").c_str(), &wal) == 0 && wal.st_size > 0;
  return result;
}

// The SQL-level checks through a read-only connection. `main_file_only` reads the main file
// without locks or a WAL (SQLite's immutable mode), which creates no -wal/-shm files.
FileState validate(const std::string& path, int busy_timeout_ms, bool main_file_only) {
  try {
    std::string uri = main_file_only ? sqlite::file_uri(path, "mode=ro&immutable=1") : "";
    // No checkpoint on close: inspecting a file must never write to it.
    sqlite::Connection db(path, SQLITE_OPEN_READONLY, /*no_checkpoint_on_close=*/true, uri);
    db.set_busy_timeout(busy_timeout_ms);
    // One read transaction for every question below: asked one by one, each sees the file as
    // it is at that moment, and a tilejit making the schema in between showed "no application
    // id" then "schema version 1 and tables" (seen with two tune workers on two GPUs: a
    // tilejit file refused as another application's).
    db.exec("BEGIN");
    FileState state = check_state(db);
    if (state == FileState::current) {
      // quick_check(1): stop at the first problem; it reads every page but skips the costly
      // index-content cross-checks of integrity_check.
      std::string verdict = db.query_text("PRAGMA quick_check(1)");
      if (verdict != "ok") damaged(path, str("PRAGMA quick_check says: ", verdict));
    }
    db.exec("COMMIT");
    return state;
  } catch (const sqlite::SqliteError& e) {
    if (e.busy()) {
      throw Error(str("'", path, "' is locked by another process (", e.detail(),
                      "); wait for it to finish or pass --db"));
    }
    int primary = e.code() & 0xff;
    if (primary == SQLITE_CORRUPT) damaged(path, e.detail());
    if (primary == SQLITE_NOTADB) not_ours(path, e.detail());
    if (primary == SQLITE_CANTOPEN || primary == SQLITE_PERM || primary == SQLITE_IOERR ||
        primary == SQLITE_READONLY) {
      throw Error(str("cannot read '", path, "': ", e.detail()));
    }
    not_ours(path, e.detail());
  }
}

} // namespace

FileState check_existing_file(const std::string& path, int busy_timeout_ms) {
  check_header(path);
  // An ordinary read-only connection to a WAL-mode file creates -wal and -shm files beside
  // it, which we must not do to a file that may not be ours. Reading the main file alone is
  // sound when it holds the whole database (no WAL with content) and did not change while we
  // read it; otherwise a concurrent tilejit is at work and the locked, ordinary way is used.
  int refusals = 0;
  for (int attempt = 0; attempt < 6; ++attempt) {
    FileStamp before = stamp(path);
    if (before.has_wal) break;
    std::exception_ptr failure;
    FileState state = FileState::empty;
    try {
      state = validate(path, busy_timeout_ms, /*main_file_only=*/true);
    } catch (const Error&) {
      failure = std::current_exception();
    }
    if (stamp(path) == before) {
      if (!failure) return state;
      // A refusal read from the main file alone stands only when it repeats: a process
      // creating the file at this moment (its checkpoint copying pages in) can leave a torn
      // first page that no stamp shows (seen under load: tables present, the application id
      // not yet there). A moment later the file is whole. A file that is really not ours is
      // refused three times in a row, about 60 ms.
      if (++refusals == 3) std::rethrow_exception(failure);
      std::this_thread::sleep_for(std::chrono::milliseconds(20 * refusals));
    }
  }
  return validate(path, busy_timeout_ms, /*main_file_only=*/false);
}

void create_schema(sqlite::Connection& db) {
  db.exec(kSchemaSql);
  db.exec(str("PRAGMA application_id = ", TuneDatabase::application_id));
  db.exec(str("PRAGMA user_version = ", TuneDatabase::schema_version));
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  sqlite::Statement meta(db, "INSERT INTO meta(name, value) VALUES (?1, ?2)");
  meta.bind(1, "created_by").bind(2, str("tilejit ", tilejit_version())).run();
  sqlite::Statement created(db, "INSERT INTO meta(name, value) VALUES (?1, ?2)");
  created.bind(1, "created_at_ms").bind(2, std::to_string(now)).run();
}

} // namespace tilejit::tune_schema
