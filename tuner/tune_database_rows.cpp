// Row <-> struct conversions for the tuning database's tables.
#include "tuner/tune_database_rows.h"

#include "support/error.h"

#include <nlohmann/json.hpp>

#include <chrono>

namespace tilejit::tune_rows {

const char* const kKeyColumns =
    "k.kernel, k.source_hash, k.generics, k.shape, k.shape_bucket, k.dtypes, k.device_name, "
    "k.compute_capability, k.sm_count, k.driver_version, k.compiler_version, k.tilejit_version";
const char* const kTrialColumns =
    "t.id, t.config, t.status, t.median_ms, t.spread_ms, t.error, t.created_at, t.host";
const char* const kWinnerColumns = "w.config, w.median_ms, w.pinned, w.updated_at";

namespace {

template <typename Map>
Map parse_map(const std::string& text, const char* field, const std::string& path) {
  try {
    return nlohmann::json::parse(text).get<Map>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(str("'", path, "': a stored key has a malformed ", field, " field '", text,
                    "': ", e.what()));
  }
}

TuneConfig parse_config(const std::string& text, const std::string& path) {
  try {
    return config_from_string(text);
  } catch (const Error& e) {
    throw Error(str("'", path, "': a stored row has ", e.what()));
  }
}

} // namespace

TuneKey read_key(const sqlite::Statement& row, int first, const std::string& path) {
  TuneKey key;
  int c = first;
  key.kernel = row.text(c++);
  key.source_hash = row.text(c++);
  key.generics = parse_map<std::map<std::string, std::string>>(row.text(c++), "generics", path);
  key.shape = parse_map<std::map<std::string, int64_t>>(row.text(c++), "shape", path);
  key.shape_bucket = row.text(c++);
  key.dtypes = parse_map<std::map<std::string, std::string>>(row.text(c++), "dtypes", path);
  key.device_name = row.text(c++);
  key.compute_capability = row.text(c++);
  key.sm_count = static_cast<int>(row.int64(c++));
  key.driver_version = row.text(c++);
  key.compiler_version = row.text(c++);
  key.tilejit_version = row.text(c++);
  return key;
}

TrialRecord read_trial(const sqlite::Statement& row, int first, const std::string& path) {
  TrialRecord trial;
  int c = first;
  trial.id = row.text(c++);
  trial.config = parse_config(row.text(c++), path);
  trial.result.status = trial_status_from_string(row.text(c++));
  trial.result.median_ms = row.optional_double(c++);
  trial.result.spread_ms = row.optional_double(c++);
  trial.result.error = row.text(c++);
  trial.created_at_ms = row.int64(c++);
  trial.host = row.text(c++);
  return trial;
}

Winner read_winner(const sqlite::Statement& row, int first, const std::string& path) {
  Winner winner;
  int c = first;
  winner.config = parse_config(row.text(c++), path);
  winner.median_ms = row.optional_double(c++);
  winner.pinned = row.int64(c++) != 0;
  winner.updated_at_ms = row.int64(c++);
  return winner;
}

bool insert_key(sqlite::Connection& db, const TuneKey& key, const std::string& key_hash,
                int64_t now_ms) {
  sqlite::Statement stmt(db, "INSERT OR IGNORE INTO tune_keys(key_hash, shapeless_hash, kernel, "
                             "source_hash, generics, shape, shape_bucket, dtypes, device_name, "
                             "compute_capability, sm_count, driver_version, compiler_version, "
                             "tilejit_version, created_at) VALUES "
                             "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)");
  stmt.bind(1, key_hash)
      .bind(2, key.shapeless_hash())
      .bind(3, key.kernel)
      .bind(4, key.source_hash)
      .bind(5, nlohmann::json(key.generics).dump())
      .bind(6, nlohmann::json(key.shape).dump())
      .bind(7, key.shape_bucket)
      .bind(8, nlohmann::json(key.dtypes).dump())
      .bind(9, key.device_name)
      .bind(10, key.compute_capability)
      .bind(11, key.sm_count)
      .bind(12, key.driver_version)
      .bind(13, key.compiler_version)
      .bind(14, key.tilejit_version)
      .bind(15, now_ms);
  stmt.run();
  return stmt.changes() > 0;
}

bool insert_trial(sqlite::Connection& db, const std::string& key_hash, const TrialRecord& trial) {
  sqlite::Statement stmt(db, "INSERT OR IGNORE INTO trials(id, key_hash, config, status, "
                             "median_ms, spread_ms, error, created_at, host) VALUES "
                             "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  stmt.bind(1, trial.id)
      .bind(2, key_hash)
      .bind(3, config_to_string(trial.config))
      .bind(4, to_string(trial.result.status))
      .bind(5, trial.result.median_ms)
      .bind(6, trial.result.spread_ms)
      .bind(7, trial.result.error)
      .bind(8, trial.created_at_ms)
      .bind(9, trial.host);
  stmt.run();
  return stmt.changes() > 0;
}

std::optional<Winner> find_winner(sqlite::Connection& db, const std::string& key_hash) {
  sqlite::Statement stmt(db,
                         str("SELECT ", kWinnerColumns, " FROM winners w WHERE w.key_hash = ?1"));
  stmt.bind(1, key_hash);
  if (!stmt.step()) return std::nullopt;
  return read_winner(stmt, 0, db.path());
}

void write_winner(sqlite::Connection& db, const std::string& key_hash, const Winner& winner) {
  sqlite::Statement stmt(db, "INSERT OR REPLACE INTO winners(key_hash, config, median_ms, pinned, "
                             "updated_at) VALUES (?1, ?2, ?3, ?4, ?5)");
  stmt.bind(1, key_hash)
      .bind(2, config_to_string(winner.config))
      .bind(3, winner.median_ms)
      .bind(4, winner.pinned ? 1 : 0)
      .bind(5, winner.updated_at_ms);
  stmt.run();
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace tilejit::tune_rows
