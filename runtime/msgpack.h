// A small MessagePack decoder: enough for the AMDGPU code object's metadata note (a map of
// strings, integers, booleans and arrays of maps) that amdgpu_code_object.cpp reads. Bounded:
// malformed or hostile bytes (truncated, nested too deep, lengths past the end) give nullopt,
// never a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace tilejit::msgpack {

struct Value {
  enum class Kind { nil, boolean, integer, floating, string, binary, array, map };
  Kind kind = Kind::nil;
  bool boolean = false;
  int64_t integer = 0; ///< signed or unsigned (values past INT64_MAX are refused)
  double floating = 0;
  std::string_view text; ///< string or binary: a view into the decoded bytes
  std::vector<Value> items;
  /// A map's entries, keys[i] -> values[i] (two vectors: a std::pair of Value would need Value
  /// complete where std::vector does not).
  std::vector<Value> keys, values;

  /// A map's value for the string key `key`, or null.
  const Value* find(std::string_view key) const;
  /// The integer at `key` of a map, or `fallback`.
  int64_t int_at(std::string_view key, int64_t fallback) const;
};

/// One value from `bytes` (the rest ignored); nullopt when malformed.
std::optional<Value> decode(std::string_view bytes);

} // namespace tilejit::msgpack
