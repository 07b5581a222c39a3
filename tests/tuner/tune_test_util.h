// Helpers for the tuning-database tests: a private temporary directory and sample keys.
// Tests never touch ~/.cache: every database lives in a TempDir.
#pragma once

#include "support/text.h"
#include "tuner/tune_key.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tilejit::tune_test {

/// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/tilejit-db-test-XXXXXX";
    char* made = ::mkdtemp(pattern.data());
    if (!made) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  /// A path inside the directory.
  std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

/// A key with every field set, as the runtime would build it on an H100.
inline TuneKey sample_key(int64_t batch = 4) {
  TuneKey key;
  key.kernel = "decode_partial";
  key.source_hash = "5f1c0de0";
  key.generics = {{"T", "f16"}, {"D", "128"}, {"G", "4"}};
  key.shape = {{"B", batch}, {"HQ", 32}, {"MAXK", 2048}};
  key.shape_bucket = "";
  key.dtypes = {{"q", "f16"}, {"o_part", "f32"}};
  key.device_name = "NVIDIA H100 80GB HBM3";
  key.compute_capability = "9.0";
  key.sm_count = 132;
  key.driver_version = "12040";
  key.compiler_version = "12.4.131";
  key.tilejit_version = "0.1.0";
  return key;
}

/// One change per TuneKey field (and per kind of map change), each named. The structured
/// binding makes this fail to compile when TuneKey gains a field, so a new field cannot be
/// left out of the key-completeness tests.
inline std::vector<std::pair<std::string, std::function<void(TuneKey&)>>> key_field_changes() {
  TuneKey probe;
  auto& [kernel, source_hash, generics, shape, shape_bucket, dtypes, device_name,
         compute_capability, sm_count, driver_version, compiler_version, tilejit_version] = probe;
  (void)kernel, (void)source_hash, (void)generics, (void)shape, (void)shape_bucket, (void)dtypes;
  (void)device_name, (void)compute_capability, (void)sm_count, (void)driver_version;
  (void)compiler_version, (void)tilejit_version;
  return {
      {"kernel", [](TuneKey& k) { k.kernel = "decode_partial2"; }},
      {"source_hash", [](TuneKey& k) { k.source_hash = "5f1c0de1"; }},
      {"generics value", [](TuneKey& k) { k.generics["D"] = "64"; }},
      {"generics added", [](TuneKey& k) { k.generics["X"] = "1"; }},
      {"generics removed", [](TuneKey& k) { k.generics.erase("G"); }},
      {"shape size", [](TuneKey& k) { k.shape["B"] += 1; }},
      {"shape added", [](TuneKey& k) { k.shape["S"] = 1; }},
      {"shape renamed",
       [](TuneKey& k) {
         k.shape["B2"] = k.shape["B"];
         k.shape.erase("B");
       }},
      {"shape_bucket", [](TuneKey& k) { k.shape_bucket = "small"; }},
      {"dtypes value", [](TuneKey& k) { k.dtypes["q"] = "bf16"; }},
      {"dtypes added", [](TuneKey& k) { k.dtypes["k_cache"] = "f16"; }},
      {"device_name", [](TuneKey& k) { k.device_name = "NVIDIA H200"; }},
      {"compute_capability", [](TuneKey& k) { k.compute_capability = "8.0"; }},
      {"sm_count", [](TuneKey& k) { k.sm_count = 114; }},
      {"driver_version", [](TuneKey& k) { k.driver_version = "12050"; }},
      {"compiler_version", [](TuneKey& k) { k.compiler_version = "12.5.82"; }},
      {"tilejit_version", [](TuneKey& k) { k.tilejit_version = "0.2.0"; }},
  };
}

/// True for the changes that only touch the shape (they keep the shapeless hash).
inline bool is_shape_change(const std::string& name) {
  return name.rfind("shape", 0) == 0;
}

/// The file's bytes (empty when missing).
inline std::string file_bytes(const std::string& path) {
  if (!std::filesystem::exists(path)) return "";
  return tilejit::read_file(path);
}

} // namespace tilejit::tune_test
