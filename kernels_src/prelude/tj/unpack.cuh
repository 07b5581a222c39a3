// unpack4<T>(words[, zero]): the eight 4-bit fields of a 32-bit word as T values, field i (bits
// 4i..4i+3) into out[i] (interleaved: fields i, i + 4 into out[2i], out[2i + 1]), minus a zero
// point (its low 4 bits). Two fields per instruction, not
// one conversion per field: lop3 drops a field into the low mantissa bits of a 16-bit float
// whose exponent makes it 1024 + q (f16) or 128 + q (bf16); one packed subtraction of that base
// plus the zero point leaves q - z exactly. Fields i and i + 4 sit at bits 4i and 4i + 16, one in
// each half of a 32-bit register, so each step makes the pair (q_i - z, q_{i+4} - z).
#pragma once
#include "types.cuh"

namespace tj {

#ifdef TJ_AMD
// AMD (no lop3, prmt or packed 16-bit arithmetic in PTX's spelling): one field or byte at a
// time through f32, exact for these small integers; the same values in the same order.
template <bool INTERLEAVED = false, class T> TJ_DEVICE void unpack4(unsigned w, int zero, T* out) {
  const int z = zero & 15;
  TJ_UNROLL for (int i = 0; i < 8; ++i) out[INTERLEAVED ? (i % 4) * 2 + i / 4 : i] =
      cvt<T>(static_cast<float>(static_cast<int>((w >> (4 * i)) & 15u) - z));
}
template <class T, class B> TJ_DEVICE void cast_bytes4(const B* src, T* out) {
  TJ_UNROLL for (int i = 0; i < 4; ++i) out[i] = cvt<T>(static_cast<float>(src[i]));
}
#else
/// (a & mask) | magic in one instruction (lop3 truth table 0xEA = (A & B) | C).
TJ_DEVICE unsigned and_or(unsigned a, unsigned mask, unsigned magic) {
  unsigned r;
  asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(r) : "r"(a), "r"(mask), "r"(magic));
  return r;
}

/// prmt: bytes of {b, a} (a's are 0-3, b's 4-7) picked by the four nibbles of `sel`.
TJ_DEVICE unsigned permute(unsigned a, unsigned b, unsigned sel) {
  unsigned r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
  return r;
}

/// a * b for two pairs of T values (each rounded to T once, as cast<T>(a * b) of f32 products):
/// a 4-bit dot's unpacked pairs times their row's scale.
template <class T> TJ_DEVICE unsigned mul2(unsigned a, unsigned b);
template <> TJ_DEVICE unsigned mul2<f16>(unsigned a, unsigned b) {
  unsigned r;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
template <> TJ_DEVICE unsigned mul2<bf16>(unsigned a, unsigned b) {
  unsigned r; // (a * b + -0: fma.bf16x2 is sm_80's, mul.bf16x2 only sm_90's)
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(0x80008000u));
  return r;
}

/// The four pairs p[i] = (q_i - z, q_{i+4} - z) of a word as two 16-bit T values each (lo half
/// first): the registers the tensor cores and the unpacked tiles are built from.
template <class T> TJ_DEVICE void unpack4_pairs(unsigned w, int zero, unsigned (&p)[4]);

template <> TJ_DEVICE void unpack4_pairs<f16>(unsigned w, int zero, unsigned (&p)[4]) {
  const unsigned z = static_cast<unsigned>(zero) & 15u;
  const unsigned base = 0x64006400u;                          // 1024 in each half
  const unsigned base_z = (0x6400u + z) * 0x10001u;           // 1024 + z
  const unsigned sixteenth = 0x2c002c00u;                     // 1/16
  const unsigned minus_64_z = (0xd400u + 16u * z) * 0x10001u; // -(64 + z): steps of 1/16 there
  // Fields 0/4 and 2/6 sit at bits 0-3 of each half: 1024 + q, minus 1024 + z. Fields 1/5 and
  // 3/7 at bits 4-7: 1024 + 16q, times 1/16 minus 64 + z (one fma, no shift). All exact.
  const unsigned w8 = w >> 8;
  p[0] = and_or(w, 0x000f000fu, base);
  p[1] = and_or(w, 0x00f000f0u, base);
  p[2] = and_or(w8, 0x000f000fu, base);
  p[3] = and_or(w8, 0x00f000f0u, base);
  asm("sub.f16x2 %0, %0, %1;" : "+r"(p[0]) : "r"(base_z));
  asm("sub.f16x2 %0, %0, %1;" : "+r"(p[2]) : "r"(base_z));
  asm("fma.rn.f16x2 %0, %0, %1, %2;" : "+r"(p[1]) : "r"(sixteenth), "r"(minus_64_z));
  asm("fma.rn.f16x2 %0, %0, %1, %2;" : "+r"(p[3]) : "r"(sixteenth), "r"(minus_64_z));
}

template <> TJ_DEVICE void unpack4_pairs<bf16>(unsigned w, int zero, unsigned (&p)[4]) {
  // bf16 has 7 mantissa bits: a field at bits 4-7 would reach the exponent, so each pair is
  // shifted down first; 128 + q minus 128 + z by one fma (sub.bf16x2 needs sm_90).
  const unsigned z = static_cast<unsigned>(zero) & 15u;
  const unsigned base = 0x43004300u;                     // 128 in each half
  const unsigned one = 0x3f803f80u;                      // 1
  const unsigned minus_128_z = (0xc300u + z) * 0x10001u; // -(128 + z)
  TJ_UNROLL for (int i = 0; i < 4; ++i) {
    p[i] = and_or(w >> (4 * i), 0x000f000fu, base);
    asm("fma.rn.bf16x2 %0, %0, %1, %2;" : "+r"(p[i]) : "r"(one), "r"(minus_128_z));
  }
}

/// The word's values in element order: field i into out[i] (INTERLEAVED: fields i and i + 4
/// into out[2i] and out[2i + 1], the pairs the unpack makes, so no value moves).
template <bool INTERLEAVED = false, class T> TJ_DEVICE void unpack4(unsigned w, int zero, T* out) {
  unsigned p[4];
  unpack4_pairs<T>(w, zero, p);
  TJ_UNROLL for (int i = 0; i < 4; ++i) {
    out[INTERLEAVED ? 2 * i : i].bits = static_cast<unsigned short>(p[i] & 0xffffu);
    out[INTERLEAVED ? 2 * i + 1 : i + 4].bits = static_cast<unsigned short>(p[i] >> 16);
  }
}

template <bool INTERLEAVED = false> TJ_DEVICE void unpack4(unsigned w, int zero, float* out) {
  // 2^23 + q as f32 bits, minus 2^23 + z: one lop3 and one add per field.
  const float base_z = 8388608.0f + static_cast<float>(static_cast<unsigned>(zero) & 15u);
  TJ_UNROLL for (int i = 0; i < 8; ++i) out[INTERLEAVED ? (i % 4) * 2 + i / 4 : i] =
      __uint_as_float(and_or(w >> (4 * i), 0xfu, 0x4b000000u)) - base_z;
}

/// cast<f16|bf16> of four 8-bit integers (i8, or u8 when UNSIGNED) held in one 32-bit word,
/// byte i the i-th: two values per instruction instead of two conversions each. f16: prmt puts
/// each byte under the exponent of 1024 (0x64XX = 1024 + byte; a signed byte is first biased to
/// byte + 128 by flipping its top bit), one packed subtraction leaves it. bf16 has too few
/// mantissa bits for a byte: 2^23 + byte as f32, one subtraction, then a packed conversion.
template <bool UNSIGNED> TJ_DEVICE void bytes4_to(unsigned w, f16* out) {
  if (!UNSIGNED) w ^= 0x80808080u;
  const unsigned base = UNSIGNED ? 0x64006400u : 0x64806480u; // 1024 (+128 for the bias)
  unsigned lo = permute(w, 0x64646464u, 0x4140u), hi = permute(w, 0x64646464u, 0x4342u);
  asm("sub.f16x2 %0, %0, %1;" : "+r"(lo) : "r"(base));
  asm("sub.f16x2 %0, %0, %1;" : "+r"(hi) : "r"(base));
  out[0].bits = static_cast<unsigned short>(lo & 0xffffu);
  out[1].bits = static_cast<unsigned short>(lo >> 16);
  out[2].bits = static_cast<unsigned short>(hi & 0xffffu);
  out[3].bits = static_cast<unsigned short>(hi >> 16);
}
template <bool UNSIGNED> TJ_DEVICE void bytes4_to(unsigned w, bf16* out) {
  if (!UNSIGNED) w ^= 0x80808080u;
  const float base = UNSIGNED ? 8388608.0f : 8388736.0f; // 2^23 (+128 for the bias)
  float f[4];
  TJ_UNROLL for (int i = 0; i < 4; ++i) f[i] =
      __uint_as_float(permute(w, 0x4b000000u, 0x7440u + i)) - base;
  const unsigned lo = pack2<bf16>(f[0], f[1]), hi = pack2<bf16>(f[2], f[3]);
  out[0].bits = static_cast<unsigned short>(lo & 0xffffu);
  out[1].bits = static_cast<unsigned short>(lo >> 16);
  out[2].bits = static_cast<unsigned short>(hi & 0xffffu);
  out[3].bits = static_cast<unsigned short>(hi >> 16);
}
/// Four consecutive 8-bit integers of a register array as one word (byte i = src[i]).
template <class B> TJ_DEVICE unsigned word_of_bytes(const B* src) {
  return static_cast<unsigned char>(src[0]) |
         (static_cast<unsigned>(static_cast<unsigned char>(src[1])) << 8) |
         (static_cast<unsigned>(static_cast<unsigned char>(src[2])) << 16) |
         (static_cast<unsigned>(static_cast<unsigned char>(src[3])) << 24);
}
template <class T, class B> TJ_DEVICE void cast_bytes4(const B* src, T* out) {
  constexpr bool is_unsigned = static_cast<B>(-1) > static_cast<B>(0);
  bytes4_to<is_unsigned>(word_of_bytes(src), out);
}

#endif

template <bool INTERLEAVED = false, class T> TJ_DEVICE void unpack4(int w, int zero, T* out) {
  unpack4<INTERLEAVED>(static_cast<unsigned>(w), zero, out);
}
template <bool INTERLEAVED = false, class T> TJ_DEVICE void unpack4(int w, T* out) {
  unpack4<INTERLEAVED>(static_cast<unsigned>(w), 0, out);
}
template <bool INTERLEAVED = false, class T> TJ_DEVICE void unpack4(unsigned w, T* out) {
  unpack4<INTERLEAVED>(w, 0, out);
}

} // namespace tj
