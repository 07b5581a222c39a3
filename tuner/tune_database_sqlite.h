// A thin RAII layer over the SQLite C API for the tuning database (internal to tuner/).
// Every failure becomes a tilejit::Error that names the database file and the operation.
#pragma once

#include "support/error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

struct sqlite3;
struct sqlite3_stmt;

namespace tilejit::sqlite {

/// A failed SQLite call; `code()` is the primary result code (SQLITE_BUSY, SQLITE_CORRUPT...).
class SqliteError : public Error {
public:
  SqliteError(const std::string& message, int code, std::string detail)
      : Error(message), code_(code), detail_(std::move(detail)) {}
  int code() const { return code_; }
  /// SQLite's own words ("file is not a database"), without our context.
  const std::string& detail() const { return detail_; }
  /// Another connection holds the lock we need (worth retrying).
  bool busy() const;

private:
  int code_;
  std::string detail_;
};

/// One open connection to a database file.
class Connection {
public:
  /// Opens `path` with SQLite open flags; `no_checkpoint_on_close` keeps closing from writing
  /// to the file (used when inspecting a file that may not be ours). A non-empty `uri`
  /// ("file:...?mode=ro") is opened instead, with messages still naming `path`.
  Connection(const std::string& path, int flags, bool no_checkpoint_on_close = false,
             const std::string& uri = "");
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }
  /// Runs SQL without results (may hold several statements).
  void exec(std::string_view sql);
  /// The single value of a one-row, one-column query such as "PRAGMA user_version".
  int64_t query_int(std::string_view sql);
  std::string query_text(std::string_view sql);
  void set_busy_timeout(int milliseconds);
  /// Throws SqliteError for result code `rc`, naming the file and `what`.
  [[noreturn]] void fail(int rc, std::string_view what) const;

private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

/// "file:PATH?QUERY" with PATH percent-encoded as SQLite's URI rules require.
std::string file_uri(const std::string& path, const std::string& query);

/// A prepared statement; bind parameters by 1-based index, then step() through rows.
class Statement {
public:
  Statement(Connection& db, std::string_view sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::optional<double> value);
  Statement& bind_blob(int index, std::string_view bytes);

  /// Advances to the next row: true while there is one, false when done.
  bool step();
  /// Runs a statement that returns no rows.
  void run();
  /// Rows changed by the last run() (INSERT OR IGNORE tells whether it inserted).
  int64_t changes() const;

  bool is_null(int column) const;
  std::string text(int column) const;
  int64_t int64(int column) const;
  std::optional<double> optional_double(int column) const;
  std::string blob(int column) const;

private:
  Connection& db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
};

} // namespace tilejit::sqlite
