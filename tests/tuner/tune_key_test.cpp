// TuneKey: canonical text, hashes and completeness; TuneConfig text form.
#include "tuner/tune_key.h"

#include "support/error.h"
#include "support/sha256.h"
#include "tests/tuner/tune_test_util.h"

#include <gtest/gtest.h>

#include <set>

namespace tilejit {
namespace {

using tune_test::key_field_changes;
using tune_test::sample_key;

TEST(TuneKey, CanonicalNamesEveryFieldInAFixedForm) {
  // Golden text: if this changes, every stored hash changes and all tuning is lost.
  EXPECT_EQ(sample_key().canonical(), "tilejit-tune-key/1\n"
                                      "kernel=decode_partial\n"
                                      "source_hash=5f1c0de0\n"
                                      "generics={D:128,G:4,T:f16}\n"
                                      "shape={B:4,HQ:32,MAXK:2048}\n"
                                      "shape_bucket=\n"
                                      "dtypes={o_part:f32,q:f16}\n"
                                      "device_name=NVIDIA H100 80GB HBM3\n"
                                      "compute_capability=9.0\n"
                                      "sm_count=132\n"
                                      "driver_version=12040\n"
                                      "compiler_version=12.4.131\n"
                                      "tilejit_version=0.1.0\n");
}

TEST(TuneKey, HashIsSha256OfCanonical) {
  TuneKey key = sample_key();
  EXPECT_EQ(key.hash(), sha256_hex(key.canonical()));
  EXPECT_EQ(key.hash().size(), 64u);
  EXPECT_EQ(key.hash(), sample_key().hash());
}

TEST(TuneKey, EveryFieldChangesTheHash) {
  const TuneKey base = sample_key();
  std::set<std::string> hashes{base.hash()};
  for (const auto& [name, change] : key_field_changes()) {
    TuneKey changed = base;
    change(changed);
    EXPECT_NE(changed.hash(), base.hash()) << name;
    hashes.insert(changed.hash());
    if (tune_test::is_shape_change(name)) {
      EXPECT_EQ(changed.shapeless_hash(), base.shapeless_hash()) << name;
    } else {
      EXPECT_NE(changed.shapeless_hash(), base.shapeless_hash()) << name;
    }
  }
  EXPECT_EQ(hashes.size(), key_field_changes().size() + 1) << "two changes collided";
}

TEST(TuneKey, SeparatorsInValuesCannotForgeAnotherKey) {
  TuneKey a = sample_key(), b = sample_key();
  a.generics = {{"T", "f16,D:128"}};
  b.generics = {{"T", "f16"}, {"D", "128"}};
  EXPECT_NE(a.hash(), b.hash());
  TuneKey c = sample_key(), d = sample_key();
  c.device_name = "H100\nsm_count=1";
  d.device_name = "H100";
  d.sm_count = 1;
  EXPECT_NE(c.hash(), d.hash());
  EXPECT_EQ(c.canonical().find("H100\n"), std::string::npos);
}

TEST(TuneConfig, RoundTripsInSortedOrder) {
  TuneConfig config{{"S", 16}, {"BN", 32}, {"WARPS", -4}};
  EXPECT_EQ(config_to_string(config), "BN=32,S=16,WARPS=-4");
  EXPECT_EQ(config_from_string("BN=32,S=16,WARPS=-4"), config);
  EXPECT_EQ(config_from_string(" S = 16 , BN=32,WARPS=-4 "), config);
  EXPECT_EQ(config_to_string({}), "");
  EXPECT_TRUE(config_from_string("").empty());
}

TEST(TuneConfig, BadTextIsNamed) {
  auto message = [](const std::string& text) {
    try {
      config_from_string(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("BN=32,S").find("'S' is not NAME=VALUE"), std::string::npos)
      << message("BN=32,S");
  EXPECT_NE(message("BN=3x").find("value '3x' of BN"), std::string::npos);
  EXPECT_NE(message("BN=").find("value '' of BN"), std::string::npos);
  EXPECT_NE(message("9N=1").find("'9N' is not a tunable name"), std::string::npos);
  EXPECT_NE(message("BN=1,BN=2").find("BN is given twice"), std::string::npos);
  EXPECT_NE(message("BN=99999999999999999999").find("64-bit"), std::string::npos);
  EXPECT_NE(message("BN=1,,S=2").find("'' is not NAME=VALUE"), std::string::npos);
}

} // namespace
} // namespace tilejit
