// What a tuning result is valid for (TuneKey) and what was tuned (TuneConfig).
// A winner is reused only when every field of its key matches, so the key lists everything
// that can change the best configuration or make a binary invalid.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace tilejit {

/// The identity of one tuning problem: kernel variant, problem shape, device and toolchain.
/// Two keys that differ in any field never share trials or winners.
struct TuneKey {
  std::string kernel;                          ///< kernel name in its .tile file
  std::string source_hash;                     ///< sha256 of the kernel's source text
  std::map<std::string, std::string> generics; ///< generic values, e.g. T=f16, D=128
  std::map<std::string, int64_t> shape;        ///< named sizes, e.g. B=4, HQ=32
  /// Name of the declared shape bucket this key stands for; empty = `shape` is exact.
  /// With a bucket, `shape` holds the bucket's representative sizes.
  std::string shape_bucket;
  std::map<std::string, std::string> dtypes; ///< dtype per tensor argument
  std::string device_name;                   ///< e.g. "NVIDIA H100 80GB HBM3"
  std::string compute_capability;            ///< e.g. "9.0"
  int sm_count = 0;
  std::string driver_version;   ///< CUDA/HIP driver version
  std::string compiler_version; ///< NVRTC/HIPRTC version
  std::string tilejit_version;

  /// A stable text form naming every field, one `name=value` line each (values escaped).
  /// The format is versioned: changing it changes every hash, so it must stay fixed.
  std::string canonical() const;
  /// sha256 (hex) of canonical(): the key's identity in the database.
  std::string hash() const;
  /// sha256 of every field except `shape` and `shape_bucket`: keys that differ only in shape
  /// share it, which is what the runtime's nearest-shape fallback looks up.
  std::string shapeless_hash() const;

  bool operator==(const TuneKey&) const = default;
};

/// Keys of a workload's plan choice (workloads/plan_choice.h) name kernel "plan:<workload>" and
/// hold one tunable, PLAN, the index of the chosen plan.
inline constexpr const char* plan_key_prefix = "plan:";
inline constexpr const char* plan_tunable = "PLAN";
/// The most plans a problem may offer (a stored PLAN at or past it is not a plan).
inline constexpr int64_t max_plans = 64;

/// One point of a kernel's tuning space: tunable name -> value (e.g. BN=32, S=16).
using TuneConfig = std::map<std::string, int64_t>;

/// "BN=32,S=16" (names in sorted order, so equal configs give equal text); "" when empty.
std::string config_to_string(const TuneConfig& config);
/// Parses config_to_string's form (spaces around items allowed); throws tilejit::Error naming
/// the offending text on a missing '=', a bad name, a non-integer value or a repeated name.
TuneConfig config_from_string(const std::string& text);

} // namespace tilejit
