// The tuning database's tables, and the checks that decide whether a file is one we may use
// (internal to tuner/). Nothing here writes to a file that failed a check.
#pragma once

#include "tuner/tune_database_sqlite.h"

#include <string>

namespace tilejit::tune_schema {

/// What an SQLite file holds, as far as tilejit is concerned.
enum class FileState {
  empty,   ///< no tables and no application id: ours to initialise
  current, ///< a tilejit database of the schema version this build writes
};

/// Inspects an existing, non-empty file without modifying it: its header bytes (magic,
/// truncation), then through a read-only connection its application id, schema version,
/// tables and PRAGMA quick_check. Throws tilejit::Error naming `path` and the problem.
FileState check_existing_file(const std::string& path, int busy_timeout_ms);

/// The application id / schema version / tables check alone, on an open connection (run
/// again inside the creating transaction, since another process may have created the file).
FileState check_state(sqlite::Connection& db);

/// Creates every table and index and stamps application_id, user_version and meta rows.
/// Call inside a write transaction on a file whose state is FileState::empty.
void create_schema(sqlite::Connection& db);

/// The message tail shared by every "not ours" error: how to get going again.
inline constexpr const char* kMoveAwayHint = "; move it away or pass --db (tilejit left it as is)";

} // namespace tilejit::tune_schema
