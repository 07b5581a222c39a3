// f16 and bf16 conversions of the reference interpreter: exhaustive round trips, ties to even,
// subnormals, overflow, infinities and NaNs, and agreement with the compiler's _Float16.
#include "compiler/ref/float_formats.h"
#include "compiler/ref/value.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace tilejit::ref {
namespace {

uint32_t f32_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float f32_from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

/// The classic f32 -> bf16 rounding (add 0x7FFF plus the lowest kept bit), for non-NaN inputs.
uint16_t bf16_reference(float f) {
  uint32_t b = f32_bits(f);
  return static_cast<uint16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

TEST(RefFloatFormats, F16RoundTripsEveryPattern) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    uint16_t h = static_cast<uint16_t>(bits);
    double v = f16_bits_to_f64(h);
    bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF);
    ASSERT_EQ(std::isnan(v), nan) << std::hex << h;
    if (nan) {
      uint16_t back = f64_to_f16_bits(v);
      EXPECT_EQ(back & 0x7E00, 0x7E00) << "NaN must stay a quiet NaN: " << std::hex << h;
      continue;
    }
    EXPECT_EQ(f64_to_f16_bits(v), h) << std::hex << h;
    EXPECT_EQ(f32_to_f16_bits(static_cast<float>(v)), h) << std::hex << h;
    EXPECT_EQ(std::signbit(v), (h & 0x8000) != 0);
  }
}

TEST(RefFloatFormats, BF16RoundTripsEveryPattern) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    uint16_t h = static_cast<uint16_t>(bits);
    double v = bf16_bits_to_f64(h);
    bool nan = (h & 0x7F80) == 0x7F80 && (h & 0x7F);
    ASSERT_EQ(std::isnan(v), nan) << std::hex << h;
    // bf16 is the top half of an f32.
    if (!nan) {
      EXPECT_EQ(f32_bits(static_cast<float>(v)), uint32_t{h} << 16) << std::hex << h;
      EXPECT_EQ(f64_to_bf16_bits(v), h) << std::hex << h;
    } else {
      EXPECT_EQ(f64_to_bf16_bits(v) & 0x7FC0, 0x7FC0);
    }
  }
}

TEST(RefFloatFormats, F16TiesGoToEven) {
  // Every midpoint between neighbouring finite f16 values rounds to the even one; a hair above
  // or below goes to the nearer.
  for (uint16_t h = 0; h < 0x7BFF; ++h) {
    double lo = f16_bits_to_f64(h), hi = f16_bits_to_f64(static_cast<uint16_t>(h + 1));
    double mid = (lo + hi) / 2; // exact in double
    uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : h;
    ASSERT_EQ(f64_to_f16_bits(mid), even) << std::hex << h;
    ASSERT_EQ(f64_to_f16_bits(-mid), even | 0x8000) << std::hex << h;
    ASSERT_EQ(f64_to_f16_bits(std::nextafter(mid, 0.0)), h) << std::hex << h;
    ASSERT_EQ(f64_to_f16_bits(std::nextafter(mid, 1e9)), h + 1) << std::hex << h;
  }
}

TEST(RefFloatFormats, F16SpecialValues) {
  EXPECT_EQ(f32_to_f16_bits(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16_bits(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_f16_bits(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7BFF);  // largest finite
  EXPECT_EQ(f32_to_f16_bits(65519.99f), 0x7BFF); // below the midpoint to 65536
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7C00);  // the midpoint: ties to even = inf
  EXPECT_EQ(f32_to_f16_bits(1e10f), 0x7C00);
  EXPECT_EQ(f32_to_f16_bits(-1e10f), 0xFC00);
  EXPECT_EQ(f32_to_f16_bits(INFINITY), 0x7C00);
  EXPECT_EQ(f32_to_f16_bits(-INFINITY), 0xFC00);
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -14)), 0x0400);    // smallest normal
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);    // smallest subnormal
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);    // half of it: ties to even (0)
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.5f, -25)), 0x0001);    // above half
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(3.0f, -25)), 0x0002);    // 1.5 ulp: tie -> even (2)
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1023.5f, -24)), 0x0400); // rounds up into the normals
  EXPECT_EQ(f32_to_f16_bits(1e-30f), 0x0000);
  EXPECT_EQ(f32_to_f16_bits(-1e-30f), 0x8000);
  EXPECT_EQ(f32_to_f16_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(f32_to_f16_bits(NAN) & 0x7E00, 0x7E00);
  EXPECT_EQ(f16_bits_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_bits_to_f32(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(f16_bits_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_bits_to_f32(0x7C00), INFINITY);
  EXPECT_EQ(f16_bits_to_f32(0xFC00), -INFINITY);
  EXPECT_TRUE(std::isnan(f16_bits_to_f32(0x7E00)));
  EXPECT_TRUE(std::signbit(f16_bits_to_f32(0x8000)));
  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: even is 1; 1 + 3*2^-11 ties up to 1 + 2^-9.
  EXPECT_EQ(round_to_f16(1.0 + std::ldexp(1.0, -11)), 1.0);
  EXPECT_EQ(round_to_f16(1.0 + 3 * std::ldexp(1.0, -11)), 1.0 + std::ldexp(1.0, -9));
}

TEST(RefFloatFormats, BF16SpecialValues) {
  EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80); // rounds up to inf
  EXPECT_EQ(f32_to_bf16_bits(INFINITY), 0x7F80);
  EXPECT_EQ(f32_to_bf16_bits(-INFINITY), 0xFF80);
  EXPECT_EQ(f32_to_bf16_bits(NAN) & 0x7FC0, 0x7FC0);
  EXPECT_EQ(f32_to_bf16_bits(f32_from_bits(0x3F808000)), 0x3F80); // tie, even below
  EXPECT_EQ(f32_to_bf16_bits(f32_from_bits(0x3F818000)), 0x3F82); // tie, even above
  EXPECT_EQ(f32_to_bf16_bits(f32_from_bits(0x3F808001)), 0x3F81);
  EXPECT_EQ(f32_to_bf16_bits(f32_from_bits(0x00000001)), 0x0000); // f32 subnormals
  EXPECT_EQ(f32_to_bf16_bits(f32_from_bits(0x00008000)), 0x0000); // tie to even (0)
  EXPECT_EQ(f32_to_bf16_bits(f32_from_bits(0x00018000)), 0x0002);
  EXPECT_EQ(f32_to_bf16_bits(f32_from_bits(0x007FFFFF)), 0x0080); // rounds into the normals
  EXPECT_EQ(bf16_bits_to_f32(0x0001), f32_from_bits(0x00010000));
}

TEST(RefFloatFormats, BF16MatchesReferenceOnRandomF32) {
  uint32_t seed = test::fresh_seed();
  SCOPED_TRACE(str("seed=", seed));
  std::mt19937 rng(seed);
  for (int n = 0; n < 2000000; ++n) {
    uint32_t b = static_cast<uint32_t>(rng());
    float f = f32_from_bits(b);
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_bf16_bits(f), bf16_reference(f)) << std::hex << b;
  }
}

#if defined(__FLT16_MAX__) && !defined(__clang__)
TEST(RefFloatFormats, F16MatchesCompilerFloat16) {
  uint32_t seed = test::fresh_seed();
  SCOPED_TRACE(str("seed=", seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> exp(-30, 17);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  for (int n = 0; n < 2000000; ++n) {
    // Random f32 bit patterns cover little of f16's range; draw magnitudes near it as well.
    float f = n % 2 ? f32_from_bits(static_cast<uint32_t>(rng()))
                    : static_cast<float>((rng() & 1 ? -1 : 1) * std::ldexp(mant(rng), exp(rng)));
    if (std::isnan(f)) continue;
    _Float16 h = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    ASSERT_EQ(f32_to_f16_bits(f), want) << std::hex << f32_bits(f);
    double d = static_cast<double>((rng() & 1 ? -1 : 1) * std::ldexp(mant(rng), exp(rng)));
    h = static_cast<_Float16>(d);
    std::memcpy(&want, &h, 2);
    ASSERT_EQ(f64_to_f16_bits(d), want) << d;
  }
}
#endif

TEST(RefFloatFormats, IntegerAndCastRules) {
  EXPECT_EQ(wrap_int(DType::I8, 300), 44);
  EXPECT_EQ(wrap_int(DType::I8, -129), 127);
  EXPECT_EQ(wrap_int(DType::U8, -1), 255);
  EXPECT_EQ(wrap_int(DType::I32, int64_t{1} << 31), INT32_MIN);
  EXPECT_EQ(wrap_int(DType::U32, -1), 4294967295);
  EXPECT_EQ(wrap_int(DType::Bool, 7), 1);
  EXPECT_EQ(float_to_int(DType::I32, 1.9), 1);
  EXPECT_EQ(float_to_int(DType::I32, -1.9), -1);
  EXPECT_EQ(float_to_int(DType::I32, 3e9), INT32_MAX);
  EXPECT_EQ(float_to_int(DType::I32, -3e9), INT32_MIN);
  EXPECT_EQ(float_to_int(DType::I32, NAN), 0);
  EXPECT_EQ(float_to_int(DType::I32, INFINITY), INT32_MAX);
  EXPECT_EQ(float_to_int(DType::U32, -5.0), 0);
  EXPECT_EQ(float_to_int(DType::U8, 300.0), 255);
  EXPECT_EQ(float_to_int(DType::I64, 1e19), INT64_MAX);
  EXPECT_EQ(float_to_int(DType::I64, -1e19), INT64_MIN);
  EXPECT_EQ(float_to_int(DType::Bool, 0.5), 1);
  EXPECT_EQ(int_to_float(DType::F32, 16777217), 16777216.0); // one rounding to nearest even
  EXPECT_EQ(int_to_float(DType::F16, 2049), 2048.0);
  EXPECT_EQ(int_to_float(DType::F16, 70000), INFINITY);
  EXPECT_EQ(round_float(DType::BF16, 257.0), 256.0);
}

// TF32 as cvt.rna.tf32.f32 rounds: 10 mantissa bits, to nearest, ties away from zero (not to
// even), carries into the exponent, infinities and NaN kept.
TEST(RefFloatFormats, Tf32RoundsToNearestTiesAway) {
  const float ulp = std::ldexp(1.0f, -10); // TF32's spacing in [1, 2)
  EXPECT_EQ(round_to_tf32(1.0f), 1.0f);
  EXPECT_EQ(round_to_tf32(1.0f + ulp), 1.0f + ulp);
  EXPECT_EQ(round_to_tf32(1.0f + ulp * 0.49f), 1.0f);
  EXPECT_EQ(round_to_tf32(1.0f + ulp * 0.51f), 1.0f + ulp);
  EXPECT_EQ(round_to_tf32(1.0f + ulp * 0.5f), 1.0f + ulp);     // a tie: away from zero
  EXPECT_EQ(round_to_tf32(1.0f + ulp * 2.5f), 1.0f + ulp * 3); // to even would give 2 ulp
  EXPECT_EQ(round_to_tf32(-(1.0f + ulp * 0.5f)), -(1.0f + ulp));
  EXPECT_EQ(round_to_tf32(2.0f - ulp * 0.5f), 2.0f); // carries into the exponent
  EXPECT_EQ(round_to_tf32(std::numeric_limits<float>::max()), INFINITY);
  EXPECT_EQ(round_to_tf32(-INFINITY), -INFINITY);
  EXPECT_TRUE(std::isnan(round_to_tf32(NAN)));
  EXPECT_EQ(round_to_tf32(0.0f), 0.0f);
  const float tiny = std::numeric_limits<float>::denorm_min(); // subnormals: 8192 of them a step
  EXPECT_EQ(round_to_tf32(tiny * 4095), 0.0f);
  EXPECT_EQ(round_to_tf32(tiny * 12287), tiny * 8192);
  EXPECT_EQ(round_to_tf32(tiny * 12288), tiny * 16384);
}

} // namespace
} // namespace tilejit::ref
