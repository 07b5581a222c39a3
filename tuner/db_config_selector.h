// The runtime's configuration choice backed by the tuning database: the exact key's winner,
// else the winner of the nearest tuned shape, else the kernel's defaults; TILEJIT_FORCE_CONFIG
// overrides all. make_tune_key is the one place keys are built, for the tuner and the runtime.
#pragma once

#include "tuner/tune_database.h"
#include "tuner/tune_key.h"

#include <tilejit/tilejit.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace tilejit {

struct DeviceInfo;

/// The device and toolchain part of a TuneKey: what a winner is valid for besides the kernel
/// and the shape. A plain struct so that tests need no GPU.
struct TuneIdentity {
  std::string device_name;        ///< "NVIDIA H100 80GB HBM3"
  std::string compute_capability; ///< "9.0"
  int sm_count = 0;
  std::string driver_version;   ///< "13000" (cuDriverGetVersion)
  std::string compiler_version; ///< NVRTC version, "13.0"
  std::string tilejit_version;  ///< "0.1.0"
};

/// The identity of `device` in the form keys use (compute capability "major.minor", driver
/// version as cuDriverGetVersion's number).
TuneIdentity tune_identity(const DeviceInfo& device, const std::string& compiler_version,
                           const std::string& tilejit_version);

/// An AMD GPU's identity in the same fields (there is no compute capability or SM count on
/// AMD): the device name, its ISA with features ("gfx90a:sramecc+:xnack-") where the compute
/// capability goes, its compute units as the SM count, the HIP runtime and driver versions as
/// "hip <runtime> driver <driver>", the HIPRTC version. A winner tuned on one AMD GPU, ROCm or
/// HIPRTC is not reused on another, as on NVIDIA.
TuneIdentity tune_identity_amd(const std::string& name, const std::string& gfx, int compute_units,
                               int runtime_version, int driver_version,
                               const std::string& hiprtc_version,
                               const std::string& tilejit_version);

/// The key of one tuning problem. `generics` are the generic values (T=f16, D=128); those
/// whose value is a dtype name are also put in the key's dtypes (every tensor's dtype follows
/// from them and the kernel's source). `sizes` are the named runtime sizes the runtime passes
/// to a ConfigSelector (what Runtime::resolve_config gathers), used as the exact shape.
TuneKey make_tune_key(const std::string& kernel, const std::string& source_hash,
                      const std::map<std::string, std::string>& generics,
                      const std::map<std::string, int64_t>& sizes, const TuneIdentity& identity);

/// Environment variable that forces a configuration for every launch: "BN=64,CHUNK=256".
inline constexpr const char* force_config_env = "TILEJIT_FORCE_CONFIG";

/// A ConfigSelector for Runtime::set_config_selector. Per launch, in order:
///   1. $TILEJIT_FORCE_CONFIG, when set and not empty (a malformed value throws
///      tilejit::Error naming the variable); names the kernel lacks are ignored by the runtime;
///   2. the winner of the exact key;
///   3. the winner of the nearest tuned shape of the same kernel, generics and identity;
///   4. nullopt: the kernel's defaults.
/// `why` says which, with the shape and its distance. A database error during lookup falls
/// back to the defaults and is reported in `why` rather than failing the launch.
ConfigSelector make_db_config_selector(std::shared_ptr<TuneDatabase> db, TuneIdentity identity);

} // namespace tilejit
