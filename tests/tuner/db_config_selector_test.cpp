// The database-backed ConfigSelector: exact hit, nearest-shape fallback, default fallback,
// the TILEJIT_FORCE_CONFIG override, and key completeness (any identity field changed: miss).
#include "tuner/db_config_selector.h"

#include "runtime/device_info.h"
#include "runtime/hip_event_timer.h"
#include "support/error.h"
#include "tests/tuner/tune_test_util.h"
#include "tuner/tuner.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <tilejit/errors.h>

namespace tilejit {
namespace {

using tune_test::TempDir;

TuneIdentity h100() {
  return TuneIdentity{"NVIDIA H100 80GB HBM3", "9.0", 132, "13000", "13.0", "0.1.0"};
}

const Config kGenerics = {{"T", "f16"}, {"D", "128"}, {"G", "4"}};
const std::map<std::string, int64_t> kShape = {{"B", 4}, {"HQ", 32}, {"MAXK", 2048}};

/// Sets or clears TILEJIT_FORCE_CONFIG for one scope.
class ForcedConfig {
public:
  explicit ForcedConfig(const char* value) { ::setenv(force_config_env, value, 1); }
  ~ForcedConfig() { ::unsetenv(force_config_env); }
};

struct Fixture : ::testing::Test {
  void SetUp() override {
    ::unsetenv(force_config_env);
    db = std::make_shared<TuneDatabase>(dir.file("tune.db"));
    select = make_db_config_selector(db, h100());
  }
  std::optional<Config> ask(const std::map<std::string, int64_t>& shape = kShape,
                            const Config& generics = kGenerics) {
    why.clear();
    return select("paged_sparse_decode", "abc123", generics, shape, &why);
  }
  TuneKey key(const std::map<std::string, int64_t>& shape = kShape) {
    return make_tune_key("paged_sparse_decode", "abc123", kGenerics, shape, h100());
  }
  TempDir dir;
  std::shared_ptr<TuneDatabase> db;
  ConfigSelector select;
  std::string why;
};

using DbConfigSelector = Fixture;

TEST(MakeTuneKey, FillsEveryFieldAndPutsDtypeGenericsInDtypes) {
  TuneKey k = make_tune_key("paged_sparse_decode", "abc123", kGenerics, kShape, h100());
  EXPECT_EQ(k.kernel, "paged_sparse_decode");
  EXPECT_EQ(k.source_hash, "abc123");
  EXPECT_EQ(k.generics, (std::map<std::string, std::string>{kGenerics.begin(), kGenerics.end()}));
  EXPECT_EQ(k.shape, kShape);
  EXPECT_EQ(k.shape_bucket, "");
  EXPECT_EQ(k.dtypes, (std::map<std::string, std::string>{{"T", "f16"}}));
  EXPECT_EQ(k.device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(k.compute_capability, "9.0");
  EXPECT_EQ(k.sm_count, 132);
  EXPECT_EQ(k.driver_version, "13000");
  EXPECT_EQ(k.compiler_version, "13.0");
  EXPECT_EQ(k.tilejit_version, "0.1.0");
  DeviceInfo d;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.driver_version = 12080;
  TuneIdentity id = tune_identity(d, "12.8", "0.1.0");
  EXPECT_EQ(id.device_name, "NVIDIA H200");
  EXPECT_EQ(id.compute_capability, "9.0");
  EXPECT_EQ(id.sm_count, 132);
  EXPECT_EQ(id.driver_version, "12080");
  EXPECT_EQ(id.compiler_version, "12.8");
  EXPECT_EQ(id.tilejit_version, "0.1.0");
}

TEST_F(DbConfigSelector, ExactShapeGivesItsWinner) {
  db->set_winner(key(), {{"CHUNK", 256}, {"BN", 32}}, 0.0125);
  auto chosen = ask();
  ASSERT_TRUE(chosen);
  EXPECT_EQ(*chosen, (Config{{"BN", "32"}, {"CHUNK", "256"}}));
  EXPECT_EQ(why, "tuned winner for the exact shape B=4,HQ=32,MAXK=2048 (BN=32,CHUNK=256, "
                 "0.0125 ms)");
  db->pin(key(), {{"CHUNK", 512}, {"BN", 16}});
  EXPECT_EQ(ask()->at("CHUNK"), "512");
  EXPECT_NE(why.find("pinned"), std::string::npos) << why;
}

TEST_F(DbConfigSelector, OtherShapesFallBackToTheNearestTunedShape) {
  db->set_winner(key({{"B", 4}, {"HQ", 32}, {"MAXK", 2048}}), {{"BN", 32}}, 0.01);
  db->set_winner(key({{"B", 64}, {"HQ", 32}, {"MAXK", 2048}}), {{"BN", 64}}, 0.05);
  auto chosen = ask({{"B", 8}, {"HQ", 32}, {"MAXK", 2048}});
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->at("BN"), "32");
  EXPECT_EQ(why, "no tuned entry for shape B=8,HQ=32,MAXK=2048; tuned winner of the nearest "
                 "shape B=4,HQ=32,MAXK=2048 at distance 1 (BN=32, 0.01 ms)");
  EXPECT_EQ(ask({{"B", 48}, {"HQ", 32}, {"MAXK", 2048}})->at("BN"), "64");
  EXPECT_NE(why.find("nearest shape B=64,"), std::string::npos) << why;
}

TEST_F(DbConfigSelector, NoEntryMeansTheKernelsDefaults) {
  EXPECT_EQ(ask(), std::nullopt);
  EXPECT_EQ(why, "no tuned entry for shape B=4,HQ=32,MAXK=2048 on NVIDIA H100 80GB HBM3; using "
                 "the kernel's defaults");
  // A null `why` is allowed.
  EXPECT_EQ(select("paged_sparse_decode", "abc123", kGenerics, kShape, nullptr), std::nullopt);
}

TEST_F(DbConfigSelector, ForcedConfigWinsOverTheDatabase) {
  db->set_winner(key(), {{"BN", 32}}, 0.01);
  {
    ForcedConfig forced("BN=64, CHUNK=256");
    auto chosen = ask();
    ASSERT_TRUE(chosen);
    EXPECT_EQ(*chosen, (Config{{"BN", "64"}, {"CHUNK", "256"}}));
    EXPECT_EQ(why, "TILEJIT_FORCE_CONFIG=BN=64,CHUNK=256 (forced)");
  }
  {
    ForcedConfig forced("BN=sixty");
    try {
      ask();
      ADD_FAILURE() << "accepted a malformed TILEJIT_FORCE_CONFIG";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("TILEJIT_FORCE_CONFIG: bad tuning config 'BN=sixty'"),
                std::string::npos)
          << e.what();
    }
  }
  ForcedConfig empty("");
  EXPECT_EQ(ask()->at("BN"), "32"); // empty: not forced
}

TEST_F(DbConfigSelector, AnyChangedKeyFieldMissesAndFallsBack) {
  db->set_winner(key(), {{"BN", 32}}, 0.01);
  ASSERT_TRUE(ask());
  // The structured binding stops compiling when TuneIdentity gains a field: add it here too.
  TuneIdentity probe;
  auto& [device_name, compute_capability, sm_count, driver_version, compiler_version,
         tilejit_version] = probe;
  (void)device_name, (void)compute_capability, (void)sm_count, (void)driver_version;
  (void)compiler_version, (void)tilejit_version;
  std::vector<std::pair<std::string, std::function<void(TuneIdentity&)>>> changes = {
      {"device_name", [](TuneIdentity& i) { i.device_name = "NVIDIA H200"; }},
      {"compute_capability", [](TuneIdentity& i) { i.compute_capability = "8.0"; }},
      {"sm_count", [](TuneIdentity& i) { i.sm_count = 114; }},
      {"driver_version", [](TuneIdentity& i) { i.driver_version = "12080"; }},
      {"compiler_version", [](TuneIdentity& i) { i.compiler_version = "12.8"; }},
      {"tilejit_version", [](TuneIdentity& i) { i.tilejit_version = "0.2.0"; }},
  };
  for (const auto& [field, change] : changes) {
    TuneIdentity other = h100();
    change(other);
    std::string reason;
    auto chosen = make_db_config_selector(db, other)("paged_sparse_decode", "abc123", kGenerics,
                                                     kShape, &reason);
    EXPECT_EQ(chosen, std::nullopt) << field;
    EXPECT_NE(reason.find("using the kernel's defaults"), std::string::npos) << field;
  }
  // The launch's own fields: kernel, source, generics (dtype generics too).
  std::string reason;
  EXPECT_EQ(select("other_kernel", "abc123", kGenerics, kShape, &reason), std::nullopt);
  EXPECT_EQ(select("paged_sparse_decode", "abc124", kGenerics, kShape, &reason), std::nullopt);
  for (const auto& [name, value] : std::map<std::string, std::string>{{"T", "bf16"}, {"D", "64"}}) {
    Config g = kGenerics;
    g[name] = value;
    EXPECT_EQ(ask(kShape, g), std::nullopt) << name;
    EXPECT_NE(why.find("using the kernel's defaults"), std::string::npos) << name;
  }
  Config fewer = kGenerics;
  fewer.erase("G");
  EXPECT_EQ(ask(kShape, fewer), std::nullopt);
  // A shape change is a miss of the exact key, caught by the nearest-shape fallback.
  ASSERT_TRUE(ask({{"B", 5}, {"HQ", 32}, {"MAXK", 2048}}));
  EXPECT_EQ(why.rfind("no tuned entry for shape B=5", 0), 0u) << why;
}

} // namespace
} // namespace tilejit

namespace tilejit {
namespace {

// An AMD GPU's identity in the tuning key (issue 19): its ISA, compute units and HIP and HIPRTC
// versions each change the key, so a winner is not reused across AMD GPUs, ROCm or HIPRTC
// releases; none of it looks like an NVIDIA identity. On this machine (no AMD GPU) the live
// identity and HIP's event timer say "no AMD GPU".
TEST(AmdIdentity, EveryFieldReachesTheKey) {
  const TuneIdentity mi250 = tune_identity_amd("AMD Instinct MI250X", "gfx90a:sramecc+:xnack-", 110,
                                               50221153, 50221153, "5.2", "0.1.0");
  EXPECT_EQ(mi250.compute_capability, "gfx90a:sramecc+:xnack-");
  EXPECT_EQ(mi250.sm_count, 110);
  EXPECT_EQ(mi250.driver_version, "hip 50221153 driver 50221153");
  EXPECT_EQ(mi250.compiler_version, "HIPRTC 5.2");
  auto key = [](const TuneIdentity& id) {
    return make_tune_key("softmax", "abc", {{"T", "f16"}}, {{"N", 4096}}, id).hash();
  };
  const std::string base = key(mi250);
  TuneIdentity other = mi250;
  other.compute_capability = "gfx90a:sramecc-:xnack-";
  EXPECT_NE(key(other), base);
  other = tune_identity_amd("AMD Instinct MI250X", "gfx90a:sramecc+:xnack-", 104, 50221153,
                            50221153, "5.2", "0.1.0");
  EXPECT_NE(key(other), base);
  other = tune_identity_amd("AMD Instinct MI250X", "gfx90a:sramecc+:xnack-", 110, 60032830,
                            50221153, "5.2", "0.1.0");
  EXPECT_NE(key(other), base);
  other = tune_identity_amd("AMD Instinct MI250X", "gfx90a:sramecc+:xnack-", 110, 50221153,
                            50221153, "6.0", "0.1.0");
  EXPECT_NE(key(other), base);
}

TEST(AmdIdentity, WithoutAnAmdGpuTheLiveIdentityAndTimerSaySo) {
  for (const std::function<void()>& f : std::vector<std::function<void()>>{
           [] { current_identity("hip"); }, [] { HipEventTimer timer; }}) {
    try {
      f();
      ADD_FAILURE() << "an AMD GPU is here: extend this test to check its identity and timer";
    } catch (const NoGpuError& e) {
      EXPECT_NE(std::string(e.what()).find("no AMD GPU"), std::string::npos) << e.what();
    }
  }
}

} // namespace
} // namespace tilejit
