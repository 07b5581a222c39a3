// Conversions between database rows and TuneKey / TrialRecord / Winner (internal to tuner/),
// shared by the database's own queries and by export/import.
#pragma once

#include "tuner/tune_database.h"
#include "tuner/tune_database_sqlite.h"

#include <optional>
#include <string>

namespace tilejit::tune_rows {

/// The tune_keys columns that make up a TuneKey, in read_key's order ("k." prefixed).
extern const char* const kKeyColumns;
/// The trials columns read_trial expects, in order ("t." prefixed).
extern const char* const kTrialColumns;
/// The winners columns read_winner expects, in order ("w." prefixed).
extern const char* const kWinnerColumns;

/// Reads kKeyColumns starting at `first`; malformed JSON fields throw Error naming the file.
TuneKey read_key(const sqlite::Statement& row, int first, const std::string& path);
/// Reads kTrialColumns starting at `first`.
TrialRecord read_trial(const sqlite::Statement& row, int first, const std::string& path);
/// Reads kWinnerColumns starting at `first`.
Winner read_winner(const sqlite::Statement& row, int first, const std::string& path);

/// Inserts the key's row unless present; returns whether it was new.
bool insert_key(sqlite::Connection& db, const TuneKey& key, const std::string& key_hash,
                int64_t now_ms);
/// Inserts a trial unless one with its id is present; returns whether it was new.
bool insert_trial(sqlite::Connection& db, const std::string& key_hash, const TrialRecord& trial);
/// The key's winner, if any.
std::optional<Winner> find_winner(sqlite::Connection& db, const std::string& key_hash);
/// Inserts or replaces the key's winner.
void write_winner(sqlite::Connection& db, const std::string& key_hash, const Winner& winner);

/// Milliseconds since the Unix epoch.
int64_t now_ms();

} // namespace tilejit::tune_rows
