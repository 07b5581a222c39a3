// TuneKey's canonical text and hashes, and the text form of tuning configurations.
#include "tuner/tune_key.h"

#include "support/error.h"
#include "support/sha256.h"
#include "support/text.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <iterator>
#include <type_traits>

namespace tilejit {

namespace {

// Percent-escapes the characters that separate fields in the canonical form, so that values
// containing them (a device name with ',' or '=') can never make two keys print alike.
std::string escape(const std::string& value) {
  std::string out;
  for (unsigned char c : value) {
    if (c == '%' || c == ',' || c == ':' || c == '=' || c == '{' || c == '}' || c < 0x20 ||
        c == 0x7f) {
      fmt::format_to(std::back_inserter(out), "%{:02X}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

template <typename Map> std::string map_text(const Map& map) {
  std::string out = "{";
  bool first = true;
  for (const auto& [name, value] : map) {
    if (!first) out += ',';
    first = false;
    out += escape(name);
    out += ':';
    if constexpr (std::is_same_v<typename Map::mapped_type, std::string>) {
      out += escape(value);
    } else {
      out += std::to_string(value);
    }
  }
  return out + "}";
}

// The canonical text, optionally without the shape fields (for shapeless_hash).
std::string canonical_text(const TuneKey& key, bool with_shape) {
  std::string out = "tilejit-tune-key/1\n";
  auto line = [&](const char* name, const std::string& value) {
    out += name;
    out += '=';
    out += value;
    out += '\n';
  };
  line("kernel", escape(key.kernel));
  line("source_hash", escape(key.source_hash));
  line("generics", map_text(key.generics));
  if (with_shape) {
    line("shape", map_text(key.shape));
    line("shape_bucket", escape(key.shape_bucket));
  }
  line("dtypes", map_text(key.dtypes));
  line("device_name", escape(key.device_name));
  line("compute_capability", escape(key.compute_capability));
  line("sm_count", std::to_string(key.sm_count));
  line("driver_version", escape(key.driver_version));
  line("compiler_version", escape(key.compiler_version));
  line("tilejit_version", escape(key.tilejit_version));
  return out;
}

bool is_name(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (!(alpha || (i > 0 && digit))) return false;
  }
  return true;
}

} // namespace

std::string TuneKey::canonical() const {
  return canonical_text(*this, true);
}

std::string TuneKey::hash() const {
  return sha256_hex(canonical());
}

std::string TuneKey::shapeless_hash() const {
  return sha256_hex(canonical_text(*this, false));
}

std::string config_to_string(const TuneConfig& config) {
  std::string out;
  for (const auto& [name, value] : config) {
    if (!out.empty()) out += ',';
    out += name;
    out += '=';
    out += std::to_string(value);
  }
  return out;
}

TuneConfig config_from_string(const std::string& text) {
  TuneConfig config;
  if (trim(text).empty()) return config;
  for (const std::string& item : split(text, ',')) {
    std::string_view part = trim(item);
    size_t eq = part.find('=');
    if (eq == std::string_view::npos)
      throw Error(str("bad tuning config '", text, "': '", part, "' is not NAME=VALUE"));
    std::string name(trim(part.substr(0, eq)));
    std::string value(trim(part.substr(eq + 1)));
    if (!is_name(name))
      throw Error(str("bad tuning config '", text, "': '", name, "' is not a tunable name"));
    errno = 0;
    char* end = nullptr;
    long long number = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || errno == ERANGE)
      throw Error(str("bad tuning config '", text, "': value '", value, "' of ", name,
                      " is not a 64-bit integer"));
    if (!config.emplace(name, number).second)
      throw Error(str("bad tuning config '", text, "': ", name, " is given twice"));
  }
  return config;
}

} // namespace tilejit
