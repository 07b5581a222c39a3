// Bit-exact conversions between f32/f64 and the 16-bit float formats (IEEE binary16 "f16" and
// bfloat16 "bf16"), rounding to nearest even, with infinities, NaNs and subnormals. The reference
// interpreter stores every f16/bf16 value through these, so they define the rounding of the DSL.
#pragma once

#include <cstdint>

namespace tilejit::ref {

/// Rounds `x` to the nearest f16 (ties to even); overflow gives +-inf, NaN stays NaN (quiet).
uint16_t f64_to_f16_bits(double x);
/// Rounds `x` to the nearest bf16 (ties to even); overflow gives +-inf, NaN stays NaN (quiet).
uint16_t f64_to_bf16_bits(double x);
/// The exact value of an f16 bit pattern.
double f16_bits_to_f64(uint16_t bits);
/// The exact value of a bf16 bit pattern.
double bf16_bits_to_f64(uint16_t bits);

/// f32 conveniences (an f32 converts to f64 exactly, so these round once).
inline uint16_t f32_to_f16_bits(float x) {
  return f64_to_f16_bits(x);
}
inline uint16_t f32_to_bf16_bits(float x) {
  return f64_to_bf16_bits(x);
}
inline float f16_bits_to_f32(uint16_t bits) {
  return static_cast<float>(f16_bits_to_f64(bits));
}
inline float bf16_bits_to_f32(uint16_t bits) {
  return static_cast<float>(bf16_bits_to_f64(bits));
}

/// `x` rounded to TF32 (the tensor cores' 19-bit format: f32's exponent, 10 mantissa bits), to
/// nearest with ties away from zero, as cvt.rna.tf32.f32 does; infinities and NaN unchanged.
float round_to_tf32(float x);

/// `x` rounded to the nearest f16 / bf16 value, as a double.
inline double round_to_f16(double x) {
  return f16_bits_to_f64(f64_to_f16_bits(x));
}
inline double round_to_bf16(double x) {
  return bf16_bits_to_f64(f64_to_bf16_bits(x));
}

} // namespace tilejit::ref
