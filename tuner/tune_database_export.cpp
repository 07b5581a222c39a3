// Export to and import from the portable JSON file that lets a fleet tune once.
// Format "tilejit-tuning-export" version 1 is described at TuneDatabase::export_to.
#include "tuner/tune_database.h"

#include "support/error.h"
#include "support/text.h"
#include "support/version.h"
#include "tuner/tune_database_rows.h"
#include "tuner/tune_database_sqlite.h"

#include <nlohmann/json.hpp>

#include <limits>
#include <unistd.h>


namespace tilejit {

using nlohmann::json;

namespace {

constexpr const char* kFormat = "tilejit-tuning-export";
constexpr int kFormatVersion = 1;

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    out += kBase64[v >> 18];
    out += kBase64[(v >> 12) & 63];
    out += kBase64[(v >> 6) & 63];
    out += kBase64[v & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = uint8_t(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= uint8_t(bytes[i + 1]) << 8;
    out += kBase64[v >> 18];
    out += kBase64[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kBase64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// Throws a plain message; the caller adds the file and the entry.
std::string base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) throw Error("data_base64 is not base64 (length not a multiple of 4)");
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int pad = (text[i + 3] == '=') + (text[i + 2] == '=');
    if (pad && i + 4 != text.size()) throw Error("data_base64 has '=' before its end");
    int a = value(text[i]), b = value(text[i + 1]);
    int c = pad >= 2 ? 0 : value(text[i + 2]), d = pad >= 1 ? 0 : value(text[i + 3]);
    if (a < 0 || b < 0 || c < 0 || d < 0) throw Error("data_base64 has a non-base64 character");
    uint32_t v = (a << 18) | (b << 12) | (c << 6) | d;
    out += char(v >> 16);
    if (pad < 2) out += char((v >> 8) & 0xff);
    if (pad < 1) out += char(v & 0xff);
  }
  return out;
}

json optional_number(const std::optional<double>& value) {
  return value ? json(*value) : json(nullptr);
}

std::optional<double> read_optional_number(const json& object, const char* field) {
  const json& value = object.at(field);
  if (value.is_null()) return std::nullopt;
  return value.get<double>();
}

json key_json(const TuneKey& key) {
  return json{{"kernel", key.kernel},
              {"source_hash", key.source_hash},
              {"generics", key.generics},
              {"shape", key.shape},
              {"shape_bucket", key.shape_bucket},
              {"dtypes", key.dtypes},
              {"device_name", key.device_name},
              {"compute_capability", key.compute_capability},
              {"sm_count", key.sm_count},
              {"driver_version", key.driver_version},
              {"compiler_version", key.compiler_version},
              {"tilejit_version", key.tilejit_version}};
}

TuneKey key_from_json(const json& j) {
  TuneKey key;
  j.at("kernel").get_to(key.kernel);
  j.at("source_hash").get_to(key.source_hash);
  j.at("generics").get_to(key.generics);
  j.at("shape").get_to(key.shape);
  j.at("shape_bucket").get_to(key.shape_bucket);
  j.at("dtypes").get_to(key.dtypes);
  j.at("device_name").get_to(key.device_name);
  j.at("compute_capability").get_to(key.compute_capability);
  j.at("sm_count").get_to(key.sm_count);
  j.at("driver_version").get_to(key.driver_version);
  j.at("compiler_version").get_to(key.compiler_version);
  j.at("tilejit_version").get_to(key.tilejit_version);
  return key;
}

json winner_json(const Winner& winner) {
  return json{{"config", config_to_string(winner.config)},
              {"median_ms", optional_number(winner.median_ms)},
              {"pinned", winner.pinned},
              {"updated_at_ms", winner.updated_at_ms}};
}

Winner winner_from_json(const json& j) {
  Winner winner;
  winner.config = config_from_string(j.at("config").get<std::string>());
  winner.median_ms = read_optional_number(j, "median_ms");
  j.at("pinned").get_to(winner.pinned);
  j.at("updated_at_ms").get_to(winner.updated_at_ms);
  return winner;
}

json trial_json(const TrialRecord& trial) {
  return json{{"id", trial.id},
              {"config", config_to_string(trial.config)},
              {"status", to_string(trial.result.status)},
              {"median_ms", optional_number(trial.result.median_ms)},
              {"spread_ms", optional_number(trial.result.spread_ms)},
              {"error", trial.result.error},
              {"created_at_ms", trial.created_at_ms},
              {"host", trial.host}};
}

TrialRecord trial_from_json(const json& j) {
  TrialRecord trial;
  j.at("id").get_to(trial.id);
  if (trial.id.empty()) throw Error("a trial has an empty id");
  trial.config = config_from_string(j.at("config").get<std::string>());
  trial.result.status = trial_status_from_string(j.at("status").get<std::string>());
  trial.result.median_ms = read_optional_number(j, "median_ms");
  trial.result.spread_ms = read_optional_number(j, "spread_ms");
  j.at("error").get_to(trial.result.error);
  j.at("created_at_ms").get_to(trial.created_at_ms);
  j.at("host").get_to(trial.host);
  return trial;
}

/// One key of an export file, fully parsed before anything is written.
struct ImportedKey {
  std::string key_hash;
  TuneKey key;
  std::optional<Winner> winner;
  std::vector<TrialRecord> trials;
};

struct ImportedBinary {
  std::string cache_key, arch, kernel, data;
  int64_t created_at_ms = 0;
};

// An unpinned winner is replaced only by a faster one; an untimed median never wins.
bool faster(const std::optional<double>& incoming, const std::optional<double>& local) {
  double inf = std::numeric_limits<double>::infinity();
  return incoming.value_or(inf) < local.value_or(inf);
}

} // namespace

ExportSummary TuneDatabase::export_to(const std::string& file, const ExportOptions& options) {
  ExportSummary summary;
  json keys = json::array();
  json binaries = json::array();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    read_transaction([&] {
      sqlite::Statement key_rows(
          *db_, str("SELECT k.key_hash, ", tune_rows::kKeyColumns,
                    " FROM tune_keys k WHERE ?1 = '' OR k.kernel = ?1 ORDER BY k.key_hash"));
      key_rows.bind(1, options.kernel);
      while (key_rows.step()) {
        std::string key_hash = key_rows.text(0);
        json entry{{"key_hash", key_hash},
                   {"key", key_json(tune_rows::read_key(key_rows, 1, path_))}};
        std::optional<Winner> winner = tune_rows::find_winner(*db_, key_hash);
        entry["winner"] = winner ? winner_json(*winner) : json(nullptr);
        summary.winners += winner ? 1 : 0;
        json trials = json::array();
        sqlite::Statement trial_rows(*db_, str("SELECT ", tune_rows::kTrialColumns,
                                               " FROM trials t WHERE t.key_hash = ?1 "
                                               "ORDER BY t.created_at, t.rowid"));
        trial_rows.bind(1, key_hash);
        while (trial_rows.step())
          trials.push_back(trial_json(tune_rows::read_trial(trial_rows, 0, path_)));
        summary.trials += static_cast<int64_t>(trials.size());
        entry["trials"] = std::move(trials);
        keys.push_back(std::move(entry));
        ++summary.keys;
      }
      if (options.binaries) {
        sqlite::Statement rows(*db_, "SELECT cache_key, arch, kernel, created_at, data FROM "
                                     "binaries WHERE ?1 = '' OR kernel = ?1 ORDER BY cache_key");
        rows.bind(1, options.kernel);
        while (rows.step()) {
          binaries.push_back(json{{"cache_key", rows.text(0)},
                                  {"arch", rows.text(1)},
                                  {"kernel", rows.text(2)},
                                  {"created_at_ms", rows.int64(3)},
                                  {"data_base64", base64_encode(rows.blob(4))}});
          ++summary.binaries;
        }
      }
    });
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  json document{{"format", kFormat},
                {"format_version", kFormatVersion},
                {"tilejit_version", tilejit_version()},
                {"exported_at_ms", tune_rows::now_ms()},
                {"exported_from", str(host, ":", path_)},
                {"keys", std::move(keys)},
                {"binaries", std::move(binaries)}};
  // Error logs may hold bytes that are not UTF-8; replace them rather than fail the export.
  write_file_atomic(file, document.dump(1, ' ', false, json::error_handler_t::replace) + "\n");
  return summary;
}

ImportSummary TuneDatabase::import_from(const std::string& file) {
  std::string text = read_file(file);
  json document;
  try {
    document = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(str("'", file, "' is not a tilejit export file: ", e.what()));
  }
  if (!document.is_object() || document.value("format", std::string()) != kFormat) {
    throw Error(
        str("'", file, "' is not a tilejit export file: its \"format\" is not \"", kFormat, "\""));
  }
  int version = document.value("format_version", 0);
  if (version > kFormatVersion) {
    throw Error(str("'", file, "' is a tilejit export of format version ", version,
                    ", newer than this build reads (", kFormatVersion, "); upgrade tilejit"));
  }

  // Parse and validate everything first, so a bad entry leaves the database untouched.
  std::vector<ImportedKey> keys;
  std::vector<ImportedBinary> binaries;
  std::string where;
  try {
    const json& key_list = document.at("keys");
    for (size_t i = 0; i < key_list.size(); ++i) {
      where = str("keys[", i, "]: ");
      const json& entry = key_list.at(i);
      ImportedKey imported;
      imported.key = key_from_json(entry.at("key"));
      imported.key_hash = imported.key.hash();
      std::string stated = entry.value("key_hash", imported.key_hash);
      if (stated != imported.key_hash) {
        throw Error(str("key_hash ", stated, " does not match the key's fields (hash ",
                        imported.key_hash, "); the file was edited or is damaged"));
      }
      if (!entry.at("winner").is_null()) imported.winner = winner_from_json(entry.at("winner"));
      const json& trials = entry.at("trials");
      for (size_t t = 0; t < trials.size(); ++t) {
        where = str("keys[", i, "].trials[", t, "]: ");
        imported.trials.push_back(trial_from_json(trials.at(t)));
      }
      keys.push_back(std::move(imported));
    }
    const json& binary_list = document.value("binaries", json::array());
    for (size_t i = 0; i < binary_list.size(); ++i) {
      where = str("binaries[", i, "]: ");
      const json& entry = binary_list.at(i);
      ImportedBinary binary;
      entry.at("cache_key").get_to(binary.cache_key);
      entry.at("arch").get_to(binary.arch);
      binary.kernel = entry.value("kernel", std::string());
      entry.at("created_at_ms").get_to(binary.created_at_ms);
      binary.data = base64_decode(entry.at("data_base64").get<std::string>());
      binaries.push_back(std::move(binary));
    }
  } catch (const json::exception& e) {
    throw Error(str("'", file, "' is a malformed tilejit export: ", where, e.what()));
  } catch (const Error& e) {
    throw Error(str("'", file, "' is a malformed tilejit export: ", where, e.what()));
  }

  std::lock_guard<std::mutex> lock(mutex_);
  ImportSummary summary;
  write_transaction([&] {
    summary = ImportSummary{};
    int64_t now = tune_rows::now_ms();
    for (const ImportedKey& imported : keys) {
      if (tune_rows::insert_key(*db_, imported.key, imported.key_hash, now)) ++summary.keys_added;
      for (const TrialRecord& trial : imported.trials) {
        if (tune_rows::insert_trial(*db_, imported.key_hash, trial)) {
          ++summary.trials_added;
        } else {
          ++summary.trials_present;
        }
      }
      if (!imported.winner) continue;
      std::optional<Winner> local = tune_rows::find_winner(*db_, imported.key_hash);
      const Winner& incoming = *imported.winner;
      if (!local) {
        tune_rows::write_winner(*db_, imported.key_hash, incoming);
        ++summary.winners_added;
      } else if (local->pinned ||
                 !(incoming.pinned || faster(incoming.median_ms, local->median_ms))) {
        // A local pin is the user's decision here; it outranks anything imported.
        ++summary.winners_kept;
      } else {
        tune_rows::write_winner(*db_, imported.key_hash, incoming);
        ++summary.winners_updated;
      }
    }
    for (const ImportedBinary& binary : binaries) {
      sqlite::Statement stmt(*db_, "INSERT OR IGNORE INTO binaries(cache_key, arch, kernel, "
                                   "data, created_at) VALUES (?1, ?2, ?3, ?4, ?5)");
      stmt.bind(1, binary.cache_key).bind(2, binary.arch).bind(3, binary.kernel);
      stmt.bind_blob(4, binary.data).bind(5, binary.created_at_ms).run();
      if (stmt.changes() > 0) ++summary.binaries_added;
    }
  });
  return summary;
}

} // namespace tilejit
