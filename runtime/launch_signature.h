// The signature of a launch: everything its configuration, checks, compiled variant and
// scratch buffers depend on, in a few machine words, so that a repeated launch of a known shape
// finds its prepared launch with one hash lookup instead of re-running the host-side planning.
#pragma once

#include <tilejit/tilejit.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tilejit {

/// A launch's identity for the runtime's prepared-launch cache. Two launches with equal
/// signatures resolve to the same configuration, pass the same checks, run the same compiled
/// variant on the same scratch buffers: they differ only in data pointers and in the values of
/// scalars that reach the kernel body alone.
struct LaunchSignature {
  std::vector<int64_t> words; ///< kernel, stream, then per argument its kind, dtype, shape...
  std::string forced; ///< the forced configuration, "N=V;" per entry, then "|" and the fallback's
                      ///< entries when there is one (usually empty)
  size_t hash = 0;

  bool operator==(const LaunchSignature& o) const {
    return hash == o.hash && words == o.words && forced == o.forced;
  }
};

struct LaunchSignatureHash {
  size_t operator()(const LaunchSignature& s) const { return s.hash; }
};

/// Builds the signature of launching kernel `kernel_id` with `args` on `stream`. Per tensor:
/// dtype, device, rank, shape, strides, whether its base is 16-byte aligned and whether it
/// has data. Per scalar: its dtype, and its value where `scalar_in_plan[i]` says the host-side
/// plan reads it (a `require` or the grid), 0 otherwise. `scalar_in_plan` is indexed by the
/// caller's arguments (scratch parameters excluded).
void make_launch_signature(LaunchSignature& out, int kernel_id, void* stream, const Config& forced,
                           const std::vector<Arg>& args, const std::vector<bool>& scalar_in_plan,
                           const Config& fallback = {});

} // namespace tilejit
