// Element types (f16/bf16 as raw 16-bit storage, converted with PTX, or on AMD with clang's
// _Float16 and bit arithmetic) and conversions.
#pragma once

#define TJ_DEVICE __device__ __forceinline__
#define TJ_UNROLL _Pragma("unroll")
// The HIP target (HIPRTC, AMD GPUs): the spellings PTX has no portable form for take the
// TJ_AMD branch. HIPRTC defines __HIP__ and not __CUDACC__.
#if defined(__HIP__)
#define TJ_AMD 1
#endif

namespace tj {

/// The block's barrier. With producer warps (the generated source defines TJ_CONSUMER_THREADS:
/// a warpgroup launched past the kernel's threads, issuing a pipeline's copies) the kernel's
/// own threads meet at named barrier 1 without them, as they never come to it.
TJ_DEVICE void block_sync() {
#if defined(TJ_CONSUMER_THREADS)
  asm volatile("bar.sync 1, %0;" ::"n"(TJ_CONSUMER_THREADS) : "memory");
#else
  __syncthreads();
#endif
}

typedef signed char i8;
typedef unsigned char u8;
typedef short i16;
typedef int i32;
typedef unsigned int u32;
typedef long long i64;
typedef float f32;
typedef double f64;

/// IEEE half, stored as bits; arithmetic goes through f32.
struct f16 {
  unsigned short bits;
};
/// bfloat16, stored as bits; arithmetic goes through f32.
struct bf16 {
  unsigned short bits;
};

#ifdef TJ_AMD
TJ_DEVICE float to_f32(f16 h) {
  return static_cast<float>(__builtin_bit_cast(_Float16, h.bits));
}
TJ_DEVICE float to_f32(bf16 h) {
  return __uint_as_float(static_cast<unsigned>(h.bits) << 16);
}
TJ_DEVICE f16 to_f16(float f) {
  return f16{__builtin_bit_cast(unsigned short, static_cast<_Float16>(f))}; // to nearest even
}
/// To nearest even, NaN kept a (quiet) NaN: what PTX's cvt.rn.bf16.f32 does.
TJ_DEVICE bf16 to_bf16(float f) {
  const unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{static_cast<unsigned short>((u >> 16) | 0x40)};
  return bf16{static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}
template <class T> TJ_DEVICE unsigned pack2(float lo, float hi);
template <> TJ_DEVICE unsigned pack2<f16>(float lo, float hi) {
  return to_f16(lo).bits | (static_cast<unsigned>(to_f16(hi).bits) << 16);
}
template <> TJ_DEVICE unsigned pack2<bf16>(float lo, float hi) {
  return to_bf16(lo).bits | (static_cast<unsigned>(to_bf16(hi).bits) << 16);
}
#else
TJ_DEVICE float to_f32(f16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
  return f;
}
TJ_DEVICE float to_f32(bf16 h) {
  return __uint_as_float(static_cast<unsigned>(h.bits) << 16);
}
TJ_DEVICE f16 to_f16(float f) {
  f16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
  return h;
}
TJ_DEVICE bf16 to_bf16(float f) {
  bf16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
  return h;
}

/// Packs two f32 values into one 32-bit register of two 16-bit values (lo first), as the
/// tensor-core instructions expect.
template <class T> TJ_DEVICE unsigned pack2(float lo, float hi);
template <> TJ_DEVICE unsigned pack2<f16>(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
template <> TJ_DEVICE unsigned pack2<bf16>(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

#endif

/// cvt<To>(x): the DSL's cast<To>(x) (C semantics for numbers; float to int truncates).
template <class To> struct Converter {
  template <class From> static TJ_DEVICE To run(From x) { return static_cast<To>(x); }
  static TJ_DEVICE To run(f16 x) { return static_cast<To>(to_f32(x)); }
  static TJ_DEVICE To run(bf16 x) { return static_cast<To>(to_f32(x)); }
};
template <> struct Converter<f16> {
  template <class From> static TJ_DEVICE f16 run(From x) { return to_f16(static_cast<float>(x)); }
  static TJ_DEVICE f16 run(f16 x) { return x; }
  static TJ_DEVICE f16 run(bf16 x) { return to_f16(to_f32(x)); }
};
template <> struct Converter<bf16> {
  template <class From> static TJ_DEVICE bf16 run(From x) { return to_bf16(static_cast<float>(x)); }
  static TJ_DEVICE bf16 run(bf16 x) { return x; }
  static TJ_DEVICE bf16 run(f16 x) { return to_bf16(to_f32(x)); }
};
template <class To, class From> TJ_DEVICE To cvt(From x) {
  return Converter<To>::run(x);
}

/// Identity values and combiners for reductions.
struct OpSum {
  template <class T> static TJ_DEVICE T identity() { return T(0); }
  template <class T> static TJ_DEVICE T apply(T a, T b) { return a + b; }
};
struct OpProd {
  template <class T> static TJ_DEVICE T identity() { return T(1); }
  template <class T> static TJ_DEVICE T apply(T a, T b) { return a * b; }
};
struct OpMax {
  template <class T> static TJ_DEVICE T identity();
  template <class T> static TJ_DEVICE T apply(T a, T b) { return a > b ? a : b; }
};
template <> TJ_DEVICE float OpMax::identity<float>() {
  return -__int_as_float(0x7f800000);
}
template <> TJ_DEVICE double OpMax::identity<double>() {
  return -__longlong_as_double(0x7ff0000000000000ll);
}
template <> TJ_DEVICE int OpMax::identity<int>() {
  return -2147483647 - 1;
}
template <> TJ_DEVICE unsigned OpMax::identity<unsigned>() {
  return 0u;
}
template <> TJ_DEVICE long long OpMax::identity<long long>() {
  return -9223372036854775807ll - 1;
}
template <> TJ_DEVICE float OpMax::apply<float>(float a, float b) {
  return fmaxf(a, b);
}
struct OpMin {
  template <class T> static TJ_DEVICE T identity();
  template <class T> static TJ_DEVICE T apply(T a, T b) { return a < b ? a : b; }
};
template <> TJ_DEVICE float OpMin::identity<float>() {
  return __int_as_float(0x7f800000);
}
template <> TJ_DEVICE double OpMin::identity<double>() {
  return __longlong_as_double(0x7ff0000000000000ll);
}
template <> TJ_DEVICE int OpMin::identity<int>() {
  return 2147483647;
}
template <> TJ_DEVICE unsigned OpMin::identity<unsigned>() {
  return 0xffffffffu;
}
template <> TJ_DEVICE long long OpMin::identity<long long>() {
  return 9223372036854775807ll;
}
template <> TJ_DEVICE float OpMin::apply<float>(float a, float b) {
  return fminf(a, b);
}

/// 2^x with one MUFU instruction (ex2.approx: relative error about 2^-22, subnormal results
/// flushed to 0). exp2f would add a range-reduction sequence per element; softmax-style code
/// calls exp2 on every score, so this is what the DSL's exp2 on f32 compiles to.
TJ_DEVICE float exp2_approx(float x) {
#ifdef TJ_AMD
  return exp2f(x); // one v_exp_f32 on AMD (its own 1-ulp approximation)
#else
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#endif
}

TJ_DEVICE float sigmoidf(float x) {
  return 1.0f / (1.0f + __expf(-x));
}
TJ_DEVICE float rsqrt_(float x) {
  return rsqrtf(x);
}

} // namespace tj

namespace tj {

/// A float rounded to f16 / bf16 precision and back: f16 arithmetic rounds after each step.
TJ_DEVICE float round_f16(float x) {
  return to_f32(to_f16(x));
}
TJ_DEVICE float round_bf16(float x) {
  return to_f32(to_bf16(x));
}

/// Float to integer like the reference interpreter: truncate, clamp to the range, NaN -> 0.
template <class I> TJ_DEVICE I float_to_int(double x);
template <> TJ_DEVICE int float_to_int<int>(double x) {
  return x != x               ? 0
         : x >= 2147483647.0  ? 2147483647
         : x <= -2147483648.0 ? (-2147483647 - 1)
                              : static_cast<int>(x);
}
template <> TJ_DEVICE unsigned float_to_int<unsigned>(double x) {
  return x != x ? 0u : x >= 4294967295.0 ? 4294967295u : x <= 0.0 ? 0u : static_cast<unsigned>(x);
}
template <> TJ_DEVICE long long float_to_int<long long>(double x) {
  return x != x                        ? 0ll
         : x >= 9223372036854775807.0  ? 9223372036854775807ll
         : x <= -9223372036854775808.0 ? (-9223372036854775807ll - 1)
                                       : static_cast<long long>(x);
}
template <> TJ_DEVICE short float_to_int<short>(double x) {
  return x != x ? 0 : x >= 32767.0 ? 32767 : x <= -32768.0 ? -32768 : static_cast<short>(x);
}
template <> TJ_DEVICE signed char float_to_int<signed char>(double x) {
  return x != x ? 0 : x >= 127.0 ? 127 : x <= -128.0 ? -128 : static_cast<signed char>(x);
}
template <> TJ_DEVICE unsigned char float_to_int<unsigned char>(double x) {
  return x != x ? 0 : x >= 255.0 ? 255 : x <= 0.0 ? 0 : static_cast<unsigned char>(x);
}

TJ_DEVICE double sigmoid_d(double x) {
  return 1.0 / (1.0 + exp(-x));
}

} // namespace tj
