#include "compiler/ref/float_formats.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace tilejit::ref {
namespace {

/// A small binary float format: `mant_bits` stored fraction bits, `exp_bits` exponent bits.
struct Format {
  int mant_bits;
  int exp_bits;
  int bias() const { return (1 << (exp_bits - 1)) - 1; }
  uint16_t exp_mask() const { return static_cast<uint16_t>(((1 << exp_bits) - 1) << mant_bits); }
  uint16_t sign_bit() const { return static_cast<uint16_t>(1u << (mant_bits + exp_bits)); }
};

constexpr Format kF16{10, 5};
constexpr Format kBF16{7, 8};

uint16_t encode(double x, Format f) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  uint16_t sign = (bits >> 63) ? f.sign_bit() : 0;
  int dexp = static_cast<int>((bits >> 52) & 0x7FF);
  uint64_t dmant = bits & ((uint64_t{1} << 52) - 1);
  if (dexp == 0x7FF) {
    if (dmant == 0) return sign | f.exp_mask(); // infinity
    // NaN: keep the top payload bits and force the quiet bit.
    uint16_t payload = static_cast<uint16_t>(dmant >> (52 - f.mant_bits));
    return sign | f.exp_mask() | payload | static_cast<uint16_t>(1u << (f.mant_bits - 1));
  }
  if (dexp == 0 && dmant == 0) return sign; // +-0
  // |x| = m * 2^(e - 52) with m a 53-bit integer (the hidden bit included for normals).
  uint64_t m = dexp == 0 ? dmant : (dmant | (uint64_t{1} << 52));
  int e = dexp == 0 ? -1022 : dexp - 1023;
  const int emin = 1 - f.bias();
  // The target's exponent for this value (subnormals share emin), and its quantum 2^(E - mant).
  int E = e < emin ? emin : e;
  int shift = (E - f.mant_bits) - (e - 52); // bits of m below the target's quantum
  uint64_t q;
  if (shift <= 0) {
    q = m << -shift; // exact (cannot happen for these formats, kept for clarity)
  } else if (shift >= 64) {
    q = 0; // far below half the smallest subnormal
  } else {
    q = m >> shift;
    uint64_t rest = m & ((uint64_t{1} << shift) - 1);
    uint64_t half = uint64_t{1} << (shift - 1);
    if (rest > half || (rest == half && (q & 1))) ++q; // round to nearest, ties to even
  }
  if (q >> (f.mant_bits + 1)) { // rounding carried into a new binade
    q >>= 1;
    ++E;
  }
  if (q == 0) return sign;
  if (E > f.bias()) return sign | f.exp_mask();                    // overflow: infinity
  if (!(q >> f.mant_bits)) return sign | static_cast<uint16_t>(q); // subnormal (E == emin)
  uint16_t exp_field = static_cast<uint16_t>(E + f.bias());
  uint16_t frac = static_cast<uint16_t>(q & ((1u << f.mant_bits) - 1));
  return sign | static_cast<uint16_t>(exp_field << f.mant_bits) | frac;
}

double decode(uint16_t bits, Format f) {
  bool negative = (bits & f.sign_bit()) != 0;
  int exp_field = (bits & f.exp_mask()) >> f.mant_bits;
  int frac = bits & ((1 << f.mant_bits) - 1);
  double v;
  if (exp_field == (1 << f.exp_bits) - 1) {
    v = frac ? std::nan("") : INFINITY;
  } else if (exp_field == 0) {
    v = std::ldexp(static_cast<double>(frac), 1 - f.bias() - f.mant_bits);
  } else {
    v = std::ldexp(static_cast<double>(frac | (1 << f.mant_bits)),
                   exp_field - f.bias() - f.mant_bits);
  }
  return negative ? -v : v;
}

} // namespace

uint16_t f64_to_f16_bits(double x) {
  return encode(x, kF16);
}
uint16_t f64_to_bf16_bits(double x) {
  return encode(x, kBF16);
}
// Both are hot in the workloads' checks (hundreds of millions of elements): bf16 is the top
// half of an f32, and the 65536 f16 values come from a table built once.
double f16_bits_to_f64(uint16_t bits) {
  static const std::vector<double> table = [] {
    std::vector<double> t(65536);
    for (uint32_t b = 0; b < 65536; ++b) t[b] = decode(static_cast<uint16_t>(b), kF16);
    return t;
  }();
  return table[bits];
}
double bf16_bits_to_f64(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f = 0;
  std::memcpy(&f, &u, 4);
  return f;
}

float round_to_tf32(float x) {
  uint32_t u = 0;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return x; // inf, NaN
  // Half of the 13 dropped bits' weight added to the magnitude, then truncated: ties go away
  // from zero; a carry into the exponent is the correct rounding up (to inf past the top).
  u = (u + 0x1000u) & 0xffffe000u;
  float r = 0;
  std::memcpy(&r, &u, 4);
  return r;
}

} // namespace tilejit::ref
