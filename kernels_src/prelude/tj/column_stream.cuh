// Column streams (compiler/cuda/cuda_column_streams.h): a serial loop's per-step column of a
// row-major [rows, steps] tensor, staged through shared memory TB steps at a time. A window is
// an [R, TB] block stored as rows of TB elements, each row's columns XOR-swizzled so that the
// 32 rows a warp reads at one step lie in 32 different banks.
#pragma once

#include "tj/memory.cuh"

namespace tj {

/// Element index of (row r, window column k); TB a power of two up to 32.
template <int TB> TJ_DEVICE int cs_index(int r, int k) {
  return r * TB + (k ^ ((r / (32 / TB)) & (TB - 1)));
}

/// The tensor's index type: int for a Tensor32 (the launcher proved every offset fits), else
/// long long. The chunks' address arithmetic runs in it: in 64 bits it was the larger part of
/// each step's share of the copies.
template <class X> using cs_int = decltype(X{}.shape[0] + 0);

/// Whether (row, col) lies inside a rank-2 tensor.
template <class X> TJ_DEVICE bool cs_inside(const X& x, long long row, long long col) {
  using I = cs_int<X>;
  if constexpr (sizeof(I) == 4)
    return (static_cast<unsigned>(row) < static_cast<unsigned>(x.shape[0])) &
           (static_cast<unsigned>(col) < static_cast<unsigned>(x.shape[1]));
  else
    return row >= 0 && row < x.shape[0] && col >= 0 && col < x.shape[1];
}

/// Offset of (row, col) in the tensor's index type.
template <class X> TJ_DEVICE cs_int<X> cs_offset(const X& x, long long row, long long col) {
  using I = cs_int<X>;
  return static_cast<I>(row) * x.stride[0] + static_cast<I>(col) * x.stride[1];
}

/// A window is moved in TB chunks, chunk j being rows [j * R / TB, (j + 1) * R / TB) with all
/// their TB columns: consecutive threads take consecutive columns of a row (coalesced row
/// segments), one element per thread and chunk when R == NT. The loop issues one chunk per
/// step, so the copies of the next window and the writes of the last one spread over the steps
/// of this one, each step's few independent instructions hidden in the recurrence's stalls
/// (done all at once every TB steps, they made hbv's forward slower than no staging at all).
template <int TB, int R, int NT> TJ_DEVICE bool cs_chunk_element(int j, int m, int& r, int& k) {
  const int i = static_cast<int>(threadIdx.x) + m * NT;
  r = j * (R / TB) + i / TB;
  k = i % TB;
  return R % NT == 0 || i < R;
}

/// Starts the asynchronous copy of chunk j of the window at columns [col0, col0 + TB) of rows
/// [row0, row0 + R); elements outside the tensor become zeros. The caller commits the group.
template <class T, int TB, int R, int NT, class X>
TJ_DEVICE void cs_fill_chunk(T* buf, const X& x, long long row0, long long col0, int j) {
  TJ_UNROLL for (int m = 0; m < (R + NT - 1) / NT; ++m) {
    int r, k;
    if (!cs_chunk_element<TB, R, NT>(j, m, r, k)) break;
    const long long row = row0 + r, col = col0 + k;
    const bool ok = cs_inside(x, row, col);
    const T* src = x.ptr + (ok ? cs_offset(x, row, col) : 0);
    cp_async_elem<sizeof(T)>(&buf[cs_index<TB>(r, k)], src, ok);
  }
}

/// The whole window (a loop's first, which nothing copied ahead). Not unrolled: the copies of
/// every stream, unrolled, held their addresses in registers across the whole loop.
template <class T, int TB, int R, int NT, class X>
TJ_DEVICE void cs_fill(T* buf, const X& x, long long row0, long long col0) {
#pragma unroll 1
  for (int j = 0; j < TB; ++j) cs_fill_chunk<T, TB, R, NT>(buf, x, row0, col0, j);
}

/// Writes (ATOMIC: adds) chunk j of a window to the tensor: the columns whose bit is set in
/// `written`, elements outside the tensor skipped.
template <bool ATOMIC, class T, int TB, int R, int NT, class X>
TJ_DEVICE void cs_flush_chunk(const T* buf, const X& x, long long row0, long long col0,
                              unsigned written, int j) {
  // No early exits: a branch here would split the step's code into blocks that ptxas cannot
  // interleave with the recurrence (the chunk's work is meant to fill the chain's stalls).
  TJ_UNROLL for (int m = 0; m < (R + NT - 1) / NT; ++m) {
    int r, k;
    if (!cs_chunk_element<TB, R, NT>(j, m, r, k)) break;
    const long long row = row0 + r, col = col0 + k;
    const bool ok = ((written >> k) & 1u) && cs_inside(x, row, col);
    T* dst = x.ptr + (ok ? cs_offset(x, row, col) : 0);
    const T v = buf[cs_index<TB>(r, k)];
    if constexpr (ATOMIC) {
      if (ok) atomicAdd(dst, v);
    } else {
      if (ok) *dst = v;
    }
  }
}

/// Chunks [j0, TB) of a window: what the steps after the loop's last did not write.
template <bool ATOMIC, class T, int TB, int R, int NT, class X>
TJ_DEVICE void cs_flush_from(const T* buf, const X& x, long long row0, long long col0,
                             unsigned written, int j0) {
  if (!written) return;
#pragma unroll 1
  for (int j = j0; j < TB; ++j)
    cs_flush_chunk<ATOMIC, T, TB, R, NT>(buf, x, row0, col0, written, j);
}

} // namespace tj
