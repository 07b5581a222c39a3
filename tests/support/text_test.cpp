// support/: str() prints as std::ostream would, format_double's shortest round-trip spelling,
// SHA-256 against the FIPS 180-4 examples.
#include "support/error.h"
#include "support/sha256.h"
#include "support/text.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>

namespace tilejit {
namespace {

struct Point {
  int x = 0, y = 0;
};
std::ostream& operator<<(std::ostream& os, const Point& p) {
  return os << "(" << p.x << ", " << p.y << ")";
}

enum class Colour { Red, Green };
std::ostream& operator<<(std::ostream& os, Colour c) {
  return os << (c == Colour::Red ? "red" : "green");
}

enum Plain { kZero, kOne };

// What `std::ostream << args...` prints: the behaviour str() keeps.
template <typename... Args> std::string streamed(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

TEST(Str, PrintsEveryArgumentAsAStreamWould) {
  const char* text = "text";
  std::string_view view = "view";
  signed char sc = 'a';
  unsigned char uc = 'b';
  EXPECT_EQ(str("tile ", std::string("x"), " has rank ", 2), "tile x has rank 2");
  EXPECT_EQ(str(), "");
  EXPECT_EQ(str(text, view, 'c', sc, uc), streamed(text, view, 'c', sc, uc));
  EXPECT_EQ(str(true, false), "10");
  EXPECT_EQ(str(int64_t{-7}, size_t{42}, short{3}, 5u), streamed(int64_t{-7}, size_t{42}, 3, 5u));
  EXPECT_EQ(str(Point{1, 2}, " ", Colour::Green, " ", kOne), "(1, 2) green 1");
  std::filesystem::path path = "/tmp/a b";
  EXPECT_EQ(str(path), streamed(path)); // quoted, as operator<< quotes a path
  const char* null_text = nullptr;
  EXPECT_EQ(str("a", null_text, "b"), "ab");
}

TEST(Str, FloatingPointAsStreamDefaultSixDigits) {
  for (double v : {0.0, -0.0, 0.5, 1.0 / 3, 1e-5, 123456.0, 1234567.0, 1e300, 5e-324,
                   std::numeric_limits<double>::infinity(), -2.5e-7}) {
    EXPECT_EQ(str(v), streamed(v)) << v;
    EXPECT_EQ(str(static_cast<float>(v)), streamed(static_cast<float>(v))) << v;
  }
  EXPECT_EQ(str(0.1 + 0.2), "0.3");
  EXPECT_EQ(str(std::nan("")), "nan");
}

TEST(FormatDouble, ShortestRoundTripInPrintfGStyle) {
  EXPECT_EQ(format_double(0.5), "0.5");
  EXPECT_EQ(format_double(3.0), "3");
  EXPECT_EQ(format_double(1e-5), "1e-05");
  EXPECT_EQ(format_double(90.0), "9e+01"); // "%g" at one digit, not "90"
  EXPECT_EQ(format_double(100000.0), "1e+05");
  EXPECT_EQ(format_double(0.1), "0.1");
  EXPECT_EQ(format_double(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(format_double(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(format_double(-0.0), "-0");
  EXPECT_EQ(format_double(5e-324), "5e-324");
  EXPECT_EQ(format_double(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(format_double(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(format_double(std::nan("")), "nan");
}

// The definition: "%g" at the first precision that reads back as the same double.
std::string first_round_trip(double v) {
  std::string text;
  for (int precision = 1; precision <= 17; ++precision) {
    text = fmt::format("{:.{}g}", v, precision);
    if (std::strtod(text.c_str(), nullptr) == v) break;
  }
  return text;
}

TEST(FormatDouble, IsTheFirstPrecisionThatReadsBack) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 30000; ++i) {
    double v;
    if (i % 2) {
      v = std::ldexp(static_cast<double>(rng() % 100000), static_cast<int>(rng() % 60) - 30);
    } else {
      uint64_t bits = rng();
      std::memcpy(&v, &bits, sizeof v);
    }
    std::string text = format_double(v);
    ASSERT_EQ(text, first_round_trip(v));
    if (!std::isnan(v)) {
      ASSERT_EQ(std::strtod(text.c_str(), nullptr), v) << text;
    }
  }
}

TEST(Sha256, MatchesTheStandardExamples) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

} // namespace
} // namespace tilejit
