// unpack4<T>(words): the eight 4-bit fields of a 32-bit word as T values 0..15, field i (bits
// 4i..4i+3) into out[i]. Two fields per instruction, not one conversion per field: lop3 drops a
// field into the low mantissa bits of a 16-bit float whose exponent makes it 1024 + q (f16) or
// 128 + q (bf16); one packed subtraction of that base leaves q exactly. Fields i and i + 4 sit
// at bits 4i and 4i + 16, one in each half of a 32-bit register, so each step makes two values.
#pragma once
#include "types.cuh"

namespace tj {

/// (a & mask) | magic in one instruction (lop3 truth table 0xEA = (A & B) | C).
TJ_DEVICE unsigned and_or(unsigned a, unsigned mask, unsigned magic) {
  unsigned r;
  asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(r) : "r"(a), "r"(mask), "r"(magic));
  return r;
}

TJ_DEVICE void store_pair(unsigned pair, f16* out, int i) {
  out[i].bits = static_cast<unsigned short>(pair & 0xffffu);
  out[i + 4].bits = static_cast<unsigned short>(pair >> 16);
}
TJ_DEVICE void store_pair(unsigned pair, bf16* out, int i) {
  out[i].bits = static_cast<unsigned short>(pair & 0xffffu);
  out[i + 4].bits = static_cast<unsigned short>(pair >> 16);
}

TJ_DEVICE void unpack4(unsigned w, f16* out) {
  const unsigned base = 0x64006400u;  // 1024 in each half
  const unsigned sixteenth = 0x2c002c00u; // 1/16
  const unsigned minus64 = 0xd400d400u;   // -64
  // Fields 0/4 and 2/6 at bits 0-3 of each half: 1024 + q, minus 1024. Fields 1/5 and 3/7 at
  // bits 4-7: 1024 + 16q, times 1/16 minus 64 (one fma, no shift). All exact.
  const unsigned w8 = w >> 8;
  unsigned q04 = and_or(w, 0x000f000fu, base), q15 = and_or(w, 0x00f000f0u, base);
  unsigned q26 = and_or(w8, 0x000f000fu, base), q37 = and_or(w8, 0x00f000f0u, base);
  asm("sub.f16x2 %0, %0, %1;" : "+r"(q04) : "r"(base));
  asm("sub.f16x2 %0, %0, %1;" : "+r"(q26) : "r"(base));
  asm("fma.rn.f16x2 %0, %0, %1, %2;" : "+r"(q15) : "r"(sixteenth), "r"(minus64));
  asm("fma.rn.f16x2 %0, %0, %1, %2;" : "+r"(q37) : "r"(sixteenth), "r"(minus64));
  store_pair(q04, out, 0);
  store_pair(q15, out, 1);
  store_pair(q26, out, 2);
  store_pair(q37, out, 3);
}

TJ_DEVICE void unpack4(unsigned w, bf16* out) {
  // bf16 has 7 mantissa bits: a field at bits 4-7 would reach the exponent, so each pair is
  // shifted down first; 128 + q minus 128 by one fma (sub.bf16x2 needs sm_90).
  const unsigned base = 0x43004300u;    // 128 in each half
  const unsigned one = 0x3f803f80u;     // 1
  const unsigned minus128 = 0xc300c300u; // -128
  TJ_UNROLL for (int i = 0; i < 4; ++i) {
    unsigned q = and_or(w >> (4 * i), 0x000f000fu, base);
    asm("fma.rn.bf16x2 %0, %0, %1, %2;" : "+r"(q) : "r"(one), "r"(minus128));
    store_pair(q, out, i);
  }
}

TJ_DEVICE void unpack4(unsigned w, float* out) {
  // 2^23 + q as f32 bits, minus 2^23: one lop3 and one add per field.
  TJ_UNROLL for (int i = 0; i < 8; ++i)
    out[i] = __uint_as_float(and_or(w >> (4 * i), 0xfu, 0x4b000000u)) - 8388608.0f;
}

TJ_DEVICE void unpack4(int w, f16* out) { unpack4(static_cast<unsigned>(w), out); }
TJ_DEVICE void unpack4(int w, bf16* out) { unpack4(static_cast<unsigned>(w), out); }
TJ_DEVICE void unpack4(int w, float* out) { unpack4(static_cast<unsigned>(w), out); }

} // namespace tj
