// RAII wrappers over sqlite3 / sqlite3_stmt that turn result codes into tilejit errors.
#include "tuner/tune_database_sqlite.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <iterator>

namespace tilejit::sqlite {

bool SqliteError::busy() const {
  return (code_ & 0xff) == SQLITE_BUSY || (code_ & 0xff) == SQLITE_LOCKED;
}

std::string file_uri(const std::string& path, const std::string& query) {
  std::string out = "file:";
  for (unsigned char c : path) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '/' || c == '.' || c == '-' || c == '_' || c == '~';
    if (plain) {
      out += static_cast<char>(c);
    } else {
      fmt::format_to(std::back_inserter(out), "%{:02X}", c);
    }
  }
  return query.empty() ? out : out + "?" + query;
}

Connection::Connection(const std::string& path, int flags, bool no_checkpoint_on_close,
                       const std::string& uri)
    : path_(path) {
  if (!uri.empty()) flags |= SQLITE_OPEN_URI;
  const std::string& name = uri.empty() ? path : uri;
  int rc = sqlite3_open_v2(name.c_str(), &db_, flags | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw SqliteError(str("cannot open '", path, "': ", message), rc, message);
  }
  sqlite3_extended_result_codes(db_, 1);
  if (no_checkpoint_on_close) {
    sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  }
}

Connection::~Connection() {
  // close_v2 defers the close until outstanding statements finish; none should remain.
  if (db_) sqlite3_close_v2(db_);
}

void Connection::fail(int rc, std::string_view what) const {
  const char* detail = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  throw SqliteError(str("'", path_, "': ", what, " failed: ", detail), rc, detail);
}

void Connection::exec(std::string_view sql) {
  std::string text(sql);
  char* message = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    std::string detail = message ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    throw SqliteError(str("'", path_, "': ", text, " failed: ", detail), rc, detail);
  }
}

int64_t Connection::query_int(std::string_view sql) {
  Statement stmt(*this, sql);
  if (!stmt.step()) fail(SQLITE_ERROR, str(sql, " (no row)"));
  return stmt.int64(0);
}

std::string Connection::query_text(std::string_view sql) {
  Statement stmt(*this, sql);
  if (!stmt.step()) fail(SQLITE_ERROR, str(sql, " (no row)"));
  return stmt.text(0);
}

void Connection::set_busy_timeout(int milliseconds) {
  sqlite3_busy_timeout(db_, milliseconds);
}

Statement::Statement(Connection& db, std::string_view sql) : db_(db), sql_(sql) {
  int rc = sqlite3_prepare_v2(db_.handle(), sql_.c_str(), static_cast<int>(sql_.size()), &stmt_,
                              nullptr);
  if (rc != SQLITE_OK) db_.fail(rc, str("preparing \"", sql_, "\""));
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

Statement& Statement::bind(int index, std::string_view text) {
  int rc =
      sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) db_.fail(rc, str("binding parameter ", index, " of \"", sql_, "\""));
  return *this;
}

Statement& Statement::bind(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) db_.fail(rc, str("binding parameter ", index, " of \"", sql_, "\""));
  return *this;
}

Statement& Statement::bind(int index, double value) {
  int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK) db_.fail(rc, str("binding parameter ", index, " of \"", sql_, "\""));
  return *this;
}

Statement& Statement::bind(int index, std::optional<double> value) {
  if (value) return bind(index, *value);
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) db_.fail(rc, str("binding parameter ", index, " of \"", sql_, "\""));
  return *this;
}

Statement& Statement::bind_blob(int index, std::string_view bytes) {
  int rc = sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) db_.fail(rc, str("binding parameter ", index, " of \"", sql_, "\""));
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // Reset so a retried transaction can reuse nothing stale; the error text survives reset.
  std::string detail = sqlite3_errmsg(db_.handle());
  sqlite3_reset(stmt_);
  throw SqliteError(str("'", db_.path(), "': \"", sql_, "\" failed: ", detail), rc, detail);
}

void Statement::run() {
  while (step()) {
  }
}

int64_t Statement::changes() const {
  return sqlite3_changes64(db_.handle());
}

bool Statement::is_null(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

std::string Statement::text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  int size = sqlite3_column_bytes(stmt_, column);
  return text ? std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(size))
              : std::string();
}

int64_t Statement::int64(int column) const {
  return sqlite3_column_int64(stmt_, column);
}

std::optional<double> Statement::optional_double(int column) const {
  if (is_null(column)) return std::nullopt;
  return sqlite3_column_double(stmt_, column);
}

std::string Statement::blob(int column) const {
  const void* data = sqlite3_column_blob(stmt_, column);
  int size = sqlite3_column_bytes(stmt_, column);
  // A zero-length blob comes back as a null pointer.
  return data ? std::string(static_cast<const char*>(data), static_cast<size_t>(size))
              : std::string();
}

} // namespace tilejit::sqlite
