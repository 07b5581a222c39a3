// Moving register tiles through shared memory: layout conversion and scans.
#pragma once

#include "tj/layouts.cuh"
#include "tj/memory.cuh"
#include "tj/tril.cuh"

namespace tj {

/// Two adjacent elements of a shared tile written by one store (32 bits for 16-bit types, 64
/// for 32-bit ones); p is 2-element aligned.
template <class T> struct alignas(2 * sizeof(T)) Pair { T lo, hi; };
template <class T> TJ_DEVICE void store_pair(T* p, T lo, T hi) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "store_pair moves 16- or 32-bit values");
#ifdef TJ_AMD
  *reinterpret_cast<Pair<T>*>(p) = Pair<T>{lo, hi};
#else
  // In PTX, with the "memory" clobber, as copy16: the store stays before the barrier that
  // publishes it (the readers see the tile as T, not as pairs).
  Pair<T> v{lo, hi};
  const unsigned* w = reinterpret_cast<const unsigned*>(&v);
  if constexpr (sizeof(T) == 2)
    asm volatile("st.shared.b32 [%0], %1;" ::"r"(smem_addr(p)), "r"(w[0]) : "memory");
  else
    asm volatile("st.shared.v2.b32 [%0], {%1, %2};" ::"r"(smem_addr(p)), "r"(w[0]), "r"(w[1])
                 : "memory");
#endif
}

/// Eight 16-bit values (f16 or bf16 storage) from registers to shared memory in one 16-byte
/// store; `dst` is 16-byte aligned.
template <class T> TJ_DEVICE void copy16(T* dst, const T* src) {
  static_assert(sizeof(T) == 2, "copy16 moves 16-bit values");
  unsigned r[4];
  TJ_UNROLL for (int i = 0; i < 4; ++i) r[i] =
      src[2 * i].bits | (unsigned(src[2 * i + 1].bits) << 16);
#ifdef TJ_AMD
  *reinterpret_cast<uint4*>(dst) = make_uint4(r[0], r[1], r[2], r[3]);
#else
  // The "memory" clobber keeps the compiler from moving the store past the barrier that
  // publishes it (without it, one warp's staged rows were read before they were written).
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(smem_addr(dst)), "r"(r[0]),
               "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
#endif
}

/// dst (layout LD) = src (layout LS), through `scratch` (R_ * C_ elements, row-major).
template <class LS, class LD, bool SYNC_AFTER = true, class T>
TJ_DEVICE void convert(T (&dst)[LD::N], const T (&src)[LS::N], T* scratch) {
  static_assert(LS::C_ == LD::C_ && LS::R_ == LD::R_, "convert: layouts of different shapes");
  constexpr int C = LS::C_;
  TJ_UNROLL for (int e = 0; e < LS::N; ++e) {
    if (LS::valid(e)) scratch[LS::r(e) * C + LS::c(e)] = src[e];
  }
  block_sync();
  TJ_UNROLL for (int e = 0; e < LD::N; ++e) {
    if (LD::valid(e)) dst[e] = scratch[LD::r(e) * C + LD::c(e)];
  }
  if (SYNC_AFTER) block_sync();
}

/// Inclusive scan of a register tile along AXIS, through `scratch` (R_ * C_ elements): one
/// thread walks each row (AXIS 1) or column (AXIS 0).
template <class L, int AXIS, class Op, bool SYNC_AFTER = true, class T>
TJ_DEVICE void scan(T (&v)[L::N], T* scratch) {
  constexpr int R = L::R_, C = L::C_;
  TJ_UNROLL for (int e = 0; e < L::N; ++e) {
    if (L::valid(e)) scratch[L::r(e) * C + L::c(e)] = v[e];
  }
  block_sync();
  if (AXIS == 1) {
    for (int r = threadIdx.x; r < R; r += L::NT_) {
      T acc = scratch[r * C];
      for (int c = 1; c < C; ++c) {
        acc = Op::apply(acc, scratch[r * C + c]);
        scratch[r * C + c] = acc;
      }
    }
  } else {
    for (int c = threadIdx.x; c < C; c += L::NT_) {
      T acc = scratch[c];
      for (int r = 1; r < R; ++r) {
        acc = Op::apply(acc, scratch[r * C + c]);
        scratch[r * C + c] = acc;
      }
    }
  }
  block_sync();
  TJ_UNROLL for (int e = 0; e < L::N; ++e) {
    if (L::valid(e)) v[e] = scratch[L::r(e) * C + L::c(e)];
  }
  if (SYNC_AFTER) block_sync();
}

/// The block's barrier as a callable (tj::tril_inverse takes one). A struct, not a lambda: with
/// a lambda in the prelude, every NVRTC compile left a dynamic TLS block that LeakSanitizer's
/// tracer crashed on at exit (the sanitized CI run of nvrtc_semantics_test).
struct BlockSync {
  TJ_DEVICE void operator()() const { block_sync(); }
};

/// v = (I + A)^-1 for A the strictly lower part of the square register tile v (its diagonal
/// and upper part are not read), through `scratch` (TrilStride<C>::floats: A, then the inverse
/// X): tj::tril_inverse (blocks of 16 where C allows, else row by row). The scratch is the
/// whole scratch area (both halves; place-scratch marks it `whole`): barriers before and after
/// make it this operation's alone.
template <class L> TJ_DEVICE void solve_tril(float (&v)[L::N], float* scratch) {
  constexpr int C = L::C_;
  static_assert(L::R_ == C, "solve_tril: a square tile");
  float* a = scratch;
  float* x = scratch + C * TrilStride<C>::A;
  block_sync();
  TJ_UNROLL for (int e = 0; e < L::N; ++e) {
    if (L::valid(e)) a[L::r(e) * TrilStride<C>::A + L::c(e)] = v[e];
  }
  block_sync();
  tril_inverse<C, L::NT_>(a, x, static_cast<int>(threadIdx.x), BlockSync{});
  TJ_UNROLL for (int e = 0; e < L::N; ++e) {
    if (L::valid(e)) v[e] = x[L::r(e) * TrilStride<C>::X + L::c(e)];
  }
  block_sync();
}

} // namespace tj
