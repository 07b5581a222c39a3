// The tuning database as a store of compiled modules (no GPU: NVRTC compiles for sm_90a).
// A module compiled once and put in the database is what a fresh runtime gets instead of
// compiling, also on another "machine" after export and import; a lookup that fails is a miss.
#include "tuner/db_binary_source.h"

#include "nvrtc_test_support.h"
#include "runtime/jit_compiler.h"
#include "runtime/runtime_access.h"
#include "tune_test_util.h"

#include <gtest/gtest.h>

#include <tilejit/tilejit.h>

#include <string>
#include <vector>

namespace tilejit {
namespace {

/// A fresh runtime (as in a new process) that compiles the softmax example for sm_90a without
/// a GPU, keeps no module cache on disk, and loads modules from `db` when it can.
struct DbRuntime {
  std::vector<std::string> log;
  std::unique_ptr<Runtime> rt;
  KernelRef kernel;

  explicit DbRuntime(std::shared_ptr<TuneDatabase> db) {
    RuntimeOptions o;
    o.arch = "sm_90a";
    o.cache_dir = ""; // memory only: nothing survives the runtime but the database
    o.log = [this](const std::string& m) { log.push_back(m); };
    rt = std::make_unique<Runtime>(o);
    rt->set_binary_source(make_db_binary_source(std::move(db)));
    kernel = rt->load("embedded:examples/softmax.tile");
  }
  const CompiledVariant& compile(const Config& config) {
    return RuntimeAccess::compile(*rt, kernel, config, {});
  }
  bool logged(const std::string& text) const {
    for (const auto& m : log)
      if (m.find(text) != std::string::npos) return true;
    return false;
  }
};

TEST(DbBinarySource, AStoredModuleIsLoadedInsteadOfCompiled) {
  TJ_REQUIRE_NVRTC();
  tune_test::TempDir dir;
  auto db = std::make_shared<TuneDatabase>(dir.file("t.db"));
  const Config config = {{"T", "f32"}, {"BR", "4"}, {"BC", "512"}, {"WARPS", "4"}};

  // First runtime: the database has nothing, so it compiles; the module goes to the database
  // (what `tilejit tune` does with its winners).
  DbRuntime first(db);
  const CompiledVariant& v1 = first.compile(config);
  EXPECT_FALSE(v1.from_cache);
  ASSERT_FALSE(v1.binary.empty());
  EXPECT_FALSE(db->get_binary(v1.cache_key).has_value());
  db->put_binary(v1.cache_key, v1.arch, v1.binary, "softmax");

  // A fresh runtime: the same variant comes from the database, byte for byte.
  DbRuntime second(db);
  const CompiledVariant& v2 = second.compile(config);
  EXPECT_TRUE(v2.from_cache);
  EXPECT_EQ(v2.cache_source, "binary source");
  EXPECT_EQ(v2.binary, v1.binary);
  EXPECT_TRUE(second.logged("binary source hit for softmax")) << "log says where it came from";
  // A different configuration is not in the database: compiled.
  Config other = config;
  other["BC"] = "256";
  EXPECT_FALSE(second.compile(other).from_cache);

  // Another machine: export with binaries, import into a new database, load from there.
  const std::string file = dir.file("fleet.json");
  db->export_to(file);
  auto imported = std::make_shared<TuneDatabase>(dir.file("other.db"));
  imported->import_from(file);
  DbRuntime third(imported);
  const CompiledVariant& v3 = third.compile(config);
  EXPECT_TRUE(v3.from_cache);
  EXPECT_EQ(v3.binary, v1.binary);
}

TEST(DbBinarySource, AMissIsQuiet) {
  tune_test::TempDir dir;
  auto db = std::make_shared<TuneDatabase>(dir.file("t.db"));
  std::vector<std::string> said;
  BinarySource source = make_db_binary_source(db, [&](const std::string& m) { said.push_back(m); });
  EXPECT_FALSE(source("no-such-key").has_value());
  EXPECT_TRUE(said.empty()) << "a plain miss is not an error";
  db->put_binary("some-key", "sm_90a",
                 std::string("\x7f"
                             "ELF",
                             4));
  EXPECT_EQ(source("some-key"), std::string("\x7f"
                                            "ELF",
                                            4));
}

} // namespace
} // namespace tilejit
