// The tuning database as a store of compiled modules (no GPU: NVRTC compiles for sm_90a).
// A module compiled once and put in the database is what a fresh runtime gets instead of
// compiling, also on another "machine" after export and import; a lookup that fails is a miss.
#include "tuner/db_binary_source.h"

#include "nvrtc_test_support.h"
#include "runtime/jit_compiler.h"
#include "tune_test_util.h"

#include <gtest/gtest.h>

#include <tilejit/tilejit.h>

#include <string>
#include <vector>

namespace tilejit {
namespace {

/// A runtime that compiles for sm_90a without a GPU, with no module cache on disk, logging to
/// `log`.
std::unique_ptr<Runtime> compile_only_runtime(std::vector<std::string>& log) {
  RuntimeOptions o;
  o.arch = "sm_90a";
  o.cache_dir = ""; // memory only: nothing survives the runtime but the database
  o.log = [&log](const std::string& m) { log.push_back(m); };
  return std::make_unique<Runtime>(o);
}

bool logged(const std::vector<std::string>& log, const std::string& text) {
  for (const auto& m : log)
    if (m.find(text) != std::string::npos) return true;
  return false;
}

TEST(DbBinarySource, AStoredModuleIsLoadedInsteadOfCompiled) {
  TJ_REQUIRE_NVRTC();
  tune_test::TempDir dir;
  auto db = std::make_shared<TuneDatabase>(dir.file("t.db"));
  const Config config = {{"T", "f32"}, {"BR", "4"}, {"BC", "512"}, {"WARPS", "4"}};

  // First runtime: the database has nothing, so it compiles; the module goes to the database
  // (what `tilejit tune` does with its winners).
  std::vector<std::string> log1;
  auto rt1 = compile_only_runtime(log1);
  rt1->set_binary_source(make_db_binary_source(db));
  KernelRef k1 = rt1->load("embedded:examples/softmax.tile");
  const CompiledVariant& v1 = rt1->compile(k1, config, {});
  EXPECT_FALSE(v1.from_cache);
  ASSERT_FALSE(v1.cubin.empty());
  EXPECT_FALSE(db->get_binary(v1.cache_key).has_value());
  db->put_binary(v1.cache_key, v1.arch, v1.cubin, "softmax");

  // A fresh runtime: the same variant comes from the database, byte for byte.
  std::vector<std::string> log2;
  auto rt2 = compile_only_runtime(log2);
  rt2->set_binary_source(make_db_binary_source(db));
  KernelRef k2 = rt2->load("embedded:examples/softmax.tile");
  const CompiledVariant& v2 = rt2->compile(k2, config, {});
  EXPECT_TRUE(v2.from_cache);
  EXPECT_EQ(v2.cache_source, "binary source");
  EXPECT_EQ(v2.cubin, v1.cubin);
  EXPECT_TRUE(logged(log2, "binary source hit for softmax")) << "log says where it came from";
  // A different configuration is not in the database: compiled.
  Config other = config;
  other["BC"] = "256";
  EXPECT_FALSE(rt2->compile(k2, other, {}).from_cache);

  // Another machine: export with binaries, import into a new database, load from there.
  const std::string file = dir.file("fleet.json");
  db->export_to(file);
  auto imported = std::make_shared<TuneDatabase>(dir.file("other.db"));
  imported->import_from(file);
  std::vector<std::string> log3;
  auto rt3 = compile_only_runtime(log3);
  rt3->set_binary_source(make_db_binary_source(imported));
  KernelRef k3 = rt3->load("embedded:examples/softmax.tile");
  const CompiledVariant& v3 = rt3->compile(k3, config, {});
  EXPECT_TRUE(v3.from_cache);
  EXPECT_EQ(v3.cubin, v1.cubin);
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
