// SHA-256, for cache keys (compiled modules, kernel source identity, tuning keys).
#pragma once

#include <string>
#include <string_view>

namespace tilejit {

/// Lower-case hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

} // namespace tilejit
