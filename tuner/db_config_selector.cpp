// Database-backed configuration selection for the runtime, and the one definition of how a
// TuneKey is built from a launch, so the tuner's keys and the runtime's lookups always match.
#include "tuner/db_config_selector.h"

#include "runtime/device_info.h"
#include "support/error.h"
#include "support/text.h"

#include <tilejit/dtype.h>

#include <cstdlib>

namespace tilejit {

namespace {

Config to_runtime_config(const TuneConfig& config) {
  Config out;
  for (const auto& [name, value] : config) out[name] = std::to_string(value);
  return out;
}

std::string winner_text(const Winner& w) {
  std::string text = config_to_string(w.config);
  if (w.median_ms) text += str(", ", format_double(*w.median_ms), " ms");
  if (w.pinned) text += ", pinned";
  return text;
}

} // namespace

TuneIdentity tune_identity(const DeviceInfo& device, const std::string& compiler_version,
                           const std::string& tilejit_version) {
  TuneIdentity id;
  id.device_name = device.name;
  id.compute_capability = str(device.cc_major, ".", device.cc_minor);
  id.sm_count = device.sm_count;
  id.driver_version = std::to_string(device.driver_version);
  id.compiler_version = compiler_version;
  id.tilejit_version = tilejit_version;
  return id;
}

TuneIdentity tune_identity_amd(const std::string& name, const std::string& gfx, int compute_units,
                               int runtime_version, int driver_version,
                               const std::string& hiprtc_version,
                               const std::string& tilejit_version) {
  TuneIdentity id;
  id.device_name = name;
  id.compute_capability = gfx;
  id.sm_count = compute_units;
  id.driver_version = str("hip ", runtime_version, " driver ", driver_version);
  id.compiler_version = "HIPRTC " + hiprtc_version;
  id.tilejit_version = tilejit_version;
  return id;
}

TuneKey make_tune_key(const std::string& kernel, const std::string& source_hash,
                      const std::map<std::string, std::string>& generics,
                      const std::map<std::string, int64_t>& sizes, const TuneIdentity& identity) {
  TuneKey key;
  key.kernel = kernel;
  key.source_hash = source_hash;
  key.generics = generics;
  key.shape = sizes;
  for (const auto& [name, value] : generics)
    if (parse_dtype(value)) key.dtypes[name] = value;
  key.device_name = identity.device_name;
  key.compute_capability = identity.compute_capability;
  key.sm_count = identity.sm_count;
  key.driver_version = identity.driver_version;
  key.compiler_version = identity.compiler_version;
  key.tilejit_version = identity.tilejit_version;
  return key;
}

ConfigSelector make_db_config_selector(std::shared_ptr<TuneDatabase> db, TuneIdentity identity) {
  TJ_ICHECK(db != nullptr, "make_db_config_selector needs a database");
  return
      [db = std::move(db), identity = std::move(identity)](
          const std::string& kernel, const std::string& source_hash, const Config& generics,
          const std::map<std::string, int64_t>& sizes, std::string* why) -> std::optional<Config> {
        auto say = [&](const std::string& text) {
          if (why) *why = text;
        };
        // Read per launch, not once: a user pinning a config should not need a new Runtime.
        if (const char* forced = std::getenv(force_config_env); forced && *forced) {
          TuneConfig config;
          try {
            config = config_from_string(forced);
          } catch (const Error& e) {
            throw Error(str(force_config_env, ": ", e.what()));
          }
          say(str(force_config_env, "=", config_to_string(config), " (forced)"));
          return to_runtime_config(config);
        }
        TuneKey key = make_tune_key(kernel, source_hash, generics, sizes, identity);
        const std::string shape = config_to_string(key.shape);
        try {
          if (auto w = db->winner(key)) {
            say(str("tuned winner for the exact shape ", shape, " (", winner_text(*w), ")"));
            return to_runtime_config(w->config);
          }
          std::vector<NearestWinner> nearest = db->nearest_winners(key);
          if (!nearest.empty()) {
            const NearestWinner& n = nearest.front();
            say(str("no tuned entry for shape ", shape, "; tuned winner of the nearest shape ",
                    config_to_string(n.key.shape), " at distance ", format_double(n.distance), " (",
                    winner_text(n.winner), ")"));
            return to_runtime_config(n.winner.config);
          }
        } catch (const Error& e) {
          say(str("tuning database lookup failed (", e.what(), "); using the kernel's defaults"));
          return std::nullopt;
        }
        say(str("no tuned entry for shape ", shape, " on ", identity.device_name,
                "; using the kernel's defaults"));
        return std::nullopt;
      };
}

} // namespace tilejit
