#include "tools/cli/shard.h"

#include "support/error.h"
#include "support/text.h"

#include <charconv>
#include <optional>

namespace tilejit::cli {
namespace {

/// A whole decimal number and nothing else ("-3", not " 3", "+3", "3x" or "").
std::optional<int64_t> whole_number(const std::string& text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [at, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || at != end) return std::nullopt;
  return v;
}

} // namespace

Shard parse_shard(const std::string& text) {
  Shard s;
  if (text.empty()) return s;
  const size_t slash = text.find('/');
  std::optional<int64_t> i, n;
  if (slash != std::string::npos) {
    i = whole_number(text.substr(0, slash));
    n = whole_number(text.substr(slash + 1));
  }
  if (!i || !n)
    throw Error(
        str("--shard '", text, "': expected I/N, the I-th of N slices counting from 0 ",
            "(e.g. 0/4 .. 3/4; a Slurm array's $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)"));
  if (*n < 1 || *n > 1000000)
    throw Error(str("--shard ", text, ": N = ", *n, " slices is not in 1..1000000"));
  if (*i < 0 || *i >= *n)
    throw Error(str("--shard ", text, ": I = ", *i, " is not a slice of ", *n,
                    " (I counts from 0: 0..", *n - 1, ")"));
  s.index = *i;
  s.count = *n;
  return s;
}

} // namespace tilejit::cli
