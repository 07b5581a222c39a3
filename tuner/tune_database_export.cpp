// Export to and import from the portable JSON file that lets a fleet tune once.
// Format "tilejit-tuning-export" version 1 is described at TuneDatabase::export_to.
#include "tuner/tune_database.h"

#include "support/error.h"
#include "support/text.h"
#include "support/version.h"
#include "tuner/tune_database_rows.h"
#include "tuner/tune_database_sqlite.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <map>
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

// Readers of an export file's fields. Each checks the JSON type and the range and names the
// field; the caller adds the file and the entry ("keys[2].trials[0]: ").

const char* type_name(const json& value) {
  if (value.is_number_integer()) return "an integer";
  if (value.is_number_float()) return "a number with a fraction or exponent";
  return value.type_name();
}

const json& field(const json& object, const char* name) {
  if (!object.is_object()) throw Error(str("expected an object, got ", type_name(object)));
  auto it = object.find(name);
  if (it == object.end()) throw Error(str("field \"", name, "\" is missing"));
  return *it;
}

std::string read_string(const json& object, const char* name) {
  const json& value = field(object, name);
  if (!value.is_string())
    throw Error(str("field \"", name, "\" must be a string, got ", type_name(value)));
  return value.get<std::string>();
}

bool read_bool(const json& object, const char* name) {
  const json& value = field(object, name);
  if (!value.is_boolean())
    throw Error(str("field \"", name, "\" must be true or false, got ", type_name(value)));
  return value.get<bool>();
}

// An integer in [low, high]: a fraction (3.5), an exponent form (1e30) or a value out of range
// is refused, never rounded or wrapped.
int64_t checked_integer(const json& value, const std::string& name, int64_t low, int64_t high) {
  if (value.is_number_unsigned() &&
      value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    throw Error(
        str("field \"", name, "\" is ", value.dump(), ", out of range (", low, "..", high, ")"));
  if (!value.is_number_integer())
    throw Error(str("field \"", name, "\" must be an integer, got ", type_name(value),
                    value.is_number() ? str(" (", value.dump(), ")") : std::string()));
  int64_t number = value.get<int64_t>();
  if (number < low || number > high)
    throw Error(str("field \"", name, "\" is ", number, ", out of range (", low, "..", high, ")"));
  return number;
}

int64_t read_integer(const json& object, const char* name, int64_t low, int64_t high) {
  return checked_integer(field(object, name), name, low, high);
}

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// A time in milliseconds: null or a non-negative finite number.
std::optional<double> read_time_ms(const json& object, const char* name, bool positive) {
  const json& value = field(object, name);
  if (value.is_null()) return std::nullopt;
  if (!value.is_number())
    throw Error(str("field \"", name, "\" must be a number or null, got ", type_name(value)));
  double number = value.get<double>();
  if (!std::isfinite(number) || number < 0 || (positive && number == 0))
    throw Error(str("field \"", name, "\" is ", value.dump(), "; a time in milliseconds must be ",
                    positive ? "greater than 0" : "0 or more", " and finite"));
  return number;
}

std::map<std::string, std::string> read_string_map(const json& object, const char* name) {
  const json& value = field(object, name);
  if (!value.is_object())
    throw Error(str("field \"", name, "\" must be an object, got ", type_name(value)));
  std::map<std::string, std::string> out;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string())
      throw Error(str("field \"", name, ".", key, "\" must be a string, got ", type_name(item)));
    out[key] = item.get<std::string>();
  }
  return out;
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
  key.kernel = read_string(j, "kernel");
  if (key.kernel.empty()) throw Error("field \"kernel\" is empty");
  key.source_hash = read_string(j, "source_hash");
  key.generics = read_string_map(j, "generics");
  const json& shape = field(j, "shape");
  if (!shape.is_object())
    throw Error(str("field \"shape\" must be an object, got ", type_name(shape)));
  for (const auto& [name, size] : shape.items())
    key.shape[name] = checked_integer(size, str("shape.", name), 0, kInt64Max);
  key.shape_bucket = read_string(j, "shape_bucket");
  key.dtypes = read_string_map(j, "dtypes");
  key.device_name = read_string(j, "device_name");
  key.compute_capability = read_string(j, "compute_capability");
  key.sm_count = static_cast<int>(read_integer(j, "sm_count", 0, std::numeric_limits<int>::max()));
  key.driver_version = read_string(j, "driver_version");
  key.compiler_version = read_string(j, "compiler_version");
  key.tilejit_version = read_string(j, "tilejit_version");
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
  winner.config = config_from_string(read_string(j, "config"));
  winner.median_ms = read_time_ms(j, "median_ms", /*positive=*/true);
  winner.pinned = read_bool(j, "pinned");
  winner.updated_at_ms = read_integer(j, "updated_at_ms", 0, kInt64Max);
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
  trial.id = read_string(j, "id");
  if (trial.id.empty()) throw Error("a trial has an empty id");
  trial.config = config_from_string(read_string(j, "config"));
  trial.result.status = trial_status_from_string(read_string(j, "status"));
  trial.result.median_ms = read_time_ms(j, "median_ms", /*positive=*/true);
  trial.result.spread_ms = read_time_ms(j, "spread_ms", /*positive=*/false);
  if (trial.result.status == TrialStatus::ok && !trial.result.median_ms)
    throw Error("an ok trial has no median_ms");
  trial.result.error = read_string(j, "error");
  trial.created_at_ms = read_integer(j, "created_at_ms", 0, kInt64Max);
  trial.host = read_string(j, "host");
  return trial;
}

/// One key of an export file, fully parsed before anything is written.
struct ImportedKey {
  std::string key_hash;
  bool checked = false; ///< its configurations were checked against the kernel
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

// Whether an ok trial of the key measured the winner's configuration at the winner's median
// (the tuner's winner is always one of its trials; a pin takes the latest ok trial's median).
bool measured_by_a_trial(sqlite::Connection& db, const std::string& key_hash,
                         const Winner& winner) {
  if (!winner.median_ms) return false;
  sqlite::Statement stmt(db, "SELECT median_ms FROM trials WHERE key_hash = ?1 AND config = ?2 "
                             "AND status = 'ok' AND median_ms IS NOT NULL");
  stmt.bind(1, key_hash).bind(2, config_to_string(winner.config));
  while (stmt.step()) {
    double median = *stmt.optional_double(0);
    if (std::fabs(median - *winner.median_ms) <= 1e-9 * *winner.median_ms) return true;
  }
  return false;
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

ImportSummary TuneDatabase::import_from(const std::string& file, const ImportOptions& options) {
  std::string text = read_file(file);
  json document;
  try {
    document = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(str("'", file, "' is not a tilejit export file: ", e.what()));
  }
  if (!document.is_object())
    throw Error(str("'", file, "' is not a tilejit export file: it holds ", type_name(document),
                    ", not an object"));
  auto format = document.find("format");
  if (format == document.end() || !format->is_string() || *format != kFormat) {
    throw Error(str("'", file, "' is not a tilejit export file: its \"format\" is ",
                    format == document.end() ? std::string("missing") : format->dump(), ", not \"",
                    kFormat, "\""));
  }
  int64_t version = 0;
  try {
    version = read_integer(document, "format_version", 1, std::numeric_limits<int>::max());
  } catch (const Error& e) {
    throw Error(str("'", file, "' is a malformed tilejit export: ", e.what()));
  }
  if (version > kFormatVersion) {
    throw Error(str("'", file, "' is a tilejit export of format version ", version,
                    ", newer than this build reads (", kFormatVersion, "); upgrade tilejit"));
  }

  // Parse and validate everything first, so a bad entry leaves the database untouched.
  std::vector<ImportedKey> keys;
  std::vector<ImportedBinary> binaries;
  std::string where;
  try {
    const json& key_list = field(document, "keys");
    if (!key_list.is_array())
      throw Error(str("field \"keys\" must be an array, got ", type_name(key_list)));
    for (size_t i = 0; i < key_list.size(); ++i) {
      where = str("keys[", i, "]: ");
      const json& entry = key_list.at(i);
      ImportedKey imported;
      imported.key = key_from_json(field(entry, "key"));
      imported.key_hash = imported.key.hash();
      auto stated_field = entry.find("key_hash");
      if (stated_field != entry.end() && !stated_field->is_string())
        throw Error(str("field \"key_hash\" must be a string, got ", type_name(*stated_field)));
      std::string stated = entry.value("key_hash", imported.key_hash);
      if (stated != imported.key_hash) {
        throw Error(str("key_hash ", stated, " does not match the key's fields (hash ",
                        imported.key_hash, "); the file was edited or is damaged"));
      }
      ConfigCheck check;
      if (options.kernel_checks) check = options.kernel_checks(imported.key);
      imported.checked = static_cast<bool>(check);
      if (!field(entry, "winner").is_null()) {
        where = str("keys[", i, "].winner: ");
        imported.winner = winner_from_json(entry.at("winner"));
        if (check) {
          std::string why = check(imported.winner->config, /*measured=*/true);
          if (!why.empty())
            throw Error(str("config '", config_to_string(imported.winner->config),
                            "' is not a configuration of kernel '", imported.key.kernel,
                            "': ", why));
        }
      }
      where = str("keys[", i, "]: ");
      const json& trials = field(entry, "trials");
      if (!trials.is_array())
        throw Error(str("field \"trials\" must be an array, got ", type_name(trials)));
      for (size_t t = 0; t < trials.size(); ++t) {
        where = str("keys[", i, "].trials[", t, "]: ");
        TrialRecord trial = trial_from_json(trials.at(t));
        if (check) {
          std::string why = check(trial.config, trial.result.status == TrialStatus::ok);
          if (!why.empty())
            throw Error(str("config '", config_to_string(trial.config),
                            "' is not a configuration of kernel '", imported.key.kernel,
                            "': ", why));
        }
        imported.trials.push_back(std::move(trial));
      }
      keys.push_back(std::move(imported));
    }
    where.clear();
    auto binary_field = document.find("binaries");
    json no_binaries = json::array();
    const json& binary_list = binary_field == document.end() ? no_binaries : *binary_field;
    if (!binary_list.is_array())
      throw Error(str("field \"binaries\" must be an array, got ", type_name(binary_list)));
    for (size_t i = 0; i < binary_list.size(); ++i) {
      where = str("binaries[", i, "]: ");
      const json& entry = binary_list.at(i);
      ImportedBinary binary;
      binary.cache_key = read_string(entry, "cache_key");
      binary.arch = read_string(entry, "arch");
      binary.kernel = entry.is_object() && entry.contains("kernel") ? read_string(entry, "kernel")
                                                                    : std::string();
      binary.created_at_ms = read_integer(entry, "created_at_ms", 0, kInt64Max);
      binary.data = base64_decode(read_string(entry, "data_base64"));
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
      if (!imported.checked) ++summary.keys_unchecked;
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
      // Trials are in by now, so this sees the file's and the database's measurements.
      bool measured = measured_by_a_trial(*db_, imported.key_hash, incoming);
      if (!measured && (local || !imported.checked)) {
        // A claim no trial backs never replaces a winner here; for a kernel this build
        // cannot find, it is not imported at all (its configuration cannot be checked).
        ++summary.winners_unsupported;
      } else if (!local) {
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
