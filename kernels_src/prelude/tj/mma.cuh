// Tensor cores: ldmatrix fragment loads, one m16n8k16 MMA, and one tile dot (a [M, K] by
// [K, N] product accumulated into an MmaAcc tile), with operands in shared memory or, for A,
// in registers laid out as an MmaAcc tile.
#pragma once

#include "tj/layouts.cuh"
#include "tj/memory.cuh"

namespace tj {

TJ_DEVICE void ldmatrix_x4(unsigned* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
TJ_DEVICE void ldmatrix_x4_trans(unsigned* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
TJ_DEVICE void ldmatrix_x2(unsigned* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(p)));
}
TJ_DEVICE void ldmatrix_x2_trans(unsigned* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr(p)));
}

/// d += a * b for one 16x8x16 tile (a: 4 registers of two 16-bit values, b: 2).
template <class T> TJ_DEVICE void mma_16816(float* d, const unsigned* a, const unsigned* b);
template <> TJ_DEVICE void mma_16816<f16>(float* d, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
               "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <> TJ_DEVICE void mma_16816<bf16>(float* d, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
               "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/// A fragments (16 x 16 at rows m0, columns k0) of A from shared memory. A_KMAJOR: the tile
/// is stored [K][M] (A is a transposed view) and is read with ldmatrix.trans.
template <class T, bool A_KMAJOR>
TJ_DEVICE void load_a_frag(unsigned* a, const T* s, int ld, int m0, int k0) {
  const int l = lane_id(), g = l / 8, i = l % 8;
  if (A_KMAJOR) {
    ldmatrix_x4_trans(a, s + (k0 + i + (g / 2) * 8) * ld + m0 + (g % 2) * 8);
  } else {
    ldmatrix_x4(a, s + (m0 + (l % 16)) * ld + k0 + (l / 16) * 8);
  }
}

/// B fragments for two n8 tiles (n0 and n0 + 8) or one (PAIR false), k16 at k0. B_NMAJOR: the
/// tile is stored [N][K] (B is a transposed view, as in q @ trans(k)).
template <class T, bool B_NMAJOR, bool PAIR>
TJ_DEVICE void load_b_frag(unsigned* b, const T* s, int ld, int n0, int k0) {
  const int l = lane_id(), g = (l / 8) % 4, i = l % 8;
  if (B_NMAJOR) {
    const T* p = s + (n0 + i + (g / 2) * 8) * ld + k0 + (g % 2) * 8;
    if (PAIR)
      ldmatrix_x4(b, p);
    else
      ldmatrix_x2(b, p);
  } else {
    const T* p = s + (k0 + i + (g % 2) * 8) * ld + n0 + (g / 2) * 8;
    if (PAIR)
      ldmatrix_x4_trans(b, p);
    else
      ldmatrix_x2_trans(b, p);
  }
}

/// B fragments of a warp's NTL n8 tiles at k0; tiles at or past the logical N (padding a warp
/// owns when N is small) are neither read nor used, so reads stay inside the stored tile.
template <class LC, class T, bool B_NMAJOR>
TJ_DEVICE void load_b_frags(unsigned (&b)[LC::NTL][2], const T* sb, int ldb, int n_base, int k0) {
  TJ_UNROLL for (int nt = 0; nt < LC::NTL; nt += 2) {
    const int n0 = n_base + nt * 8;
    // Only a padded N can leave fragments past the tile; otherwise every warp's are inside
    // (testing anyway made NVCC branch around, and recompute, each fragment's address).
    if (LC::PN != LC::C_ && n0 >= LC::C_) continue;
    if (nt + 1 < LC::NTL && (LC::PN == LC::C_ || n0 + 8 < LC::C_)) {
      unsigned q[4];
      load_b_frag<T, B_NMAJOR, true>(q, sb, ldb, n0, k0);
      b[nt][0] = q[0];
      b[nt][1] = q[1];
      b[nt + 1][0] = q[2];
      b[nt + 1][1] = q[3];
    } else {
      load_b_frag<T, B_NMAJOR, false>(b[nt], sb, ldb, n0, k0);
    }
  }
}

/// acc += A @ B for one tile: A [M, K] and B [K, N] in shared memory (row strides lda, ldb in
/// elements), acc in layout LC = MmaAcc<M, N, WM, WN, NT>. K is a multiple of 16. Fragments
/// wholly in the padding past M or N are skipped (their results are never valid).
template <class LC, int K, class T, bool A_KMAJOR, bool B_NMAJOR>
TJ_DEVICE void dot_ss(float (&acc)[LC::N], const T* sa, int lda, const T* sb, int ldb) {
  static_assert(K % 16 == 0, "dot: the shared dimension must be a multiple of 16");
  const int m_base = LC::wm() * LC::WTM, n_base = LC::wn() * LC::WTN;
  TJ_UNROLL for (int k0 = 0; k0 < K; k0 += 16) {
    unsigned a[LC::MT][4];
    TJ_UNROLL for (int mt = 0; mt < LC::MT; ++mt) if (LC::PM == LC::R_ || m_base + mt * 16 < LC::R_)
        load_a_frag<T, A_KMAJOR>(a[mt], sa, lda, m_base + mt * 16, k0);
    unsigned b[LC::NTL][2];
    load_b_frags<LC, T, B_NMAJOR>(b, sb, ldb, n_base, k0);
    TJ_UNROLL for (int mt = 0; mt < LC::MT; ++mt)
        TJ_UNROLL for (int nt = 0; nt < LC::NTL;
                       ++nt) if ((LC::PM == LC::R_ || m_base + mt * 16 < LC::R_) &&
                                 (LC::PN == LC::C_ || n_base + nt * 8 < LC::C_))
            mma_16816<T>(&acc[(mt * LC::NTL + nt) * 4], a[mt], b[nt]);
  }
}

/// An f32 value as TF32 (10 mantissa bits, to nearest with ties away from zero) in a 32-bit
/// register, the tensor cores' operand format; the 13 bits below TF32's mantissa are cleared,
/// so the register also reads as the rounded f32 value (3xTF32 subtracts it).
TJ_DEVICE unsigned to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r & 0xffffe000u;
}

/// d += a * b for one 16x8x8 TF32 tile (a: 4 registers, b: 2).
TJ_DEVICE void mma_1688_tf32(float* d, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, "
               "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/// d += a * b for one 16x8x8 tile of f32 values in about f32's accuracy (3xTF32): each operand
/// split into its TF32 part and the TF32 rest, the three products that matter summed, small
/// ones first. a and b are the m16n8k8 fragments' values (4 and 2 per lane).
TJ_DEVICE void mma_1688_tf32x3(float* d, const float (&a)[4], const float (&b)[2]) {
  unsigned ah[4], al[4], bh[2], bl[2];
  TJ_UNROLL for (int i = 0; i < 4; ++i) {
    ah[i] = to_tf32(a[i]);
    al[i] = to_tf32(a[i] - __uint_as_float(ah[i]));
  }
  TJ_UNROLL for (int i = 0; i < 2; ++i) {
    bh[i] = to_tf32(b[i]);
    bl[i] = to_tf32(b[i] - __uint_as_float(bh[i]));
  }
  mma_1688_tf32(d, al, bh);
  mma_1688_tf32(d, ah, bl);
  mma_1688_tf32(d, ah, bh);
}

/// acc += A @ B for f32 tiles on the TF32 tensor cores: A [M, K] and B [K, N] in shared memory
/// (A_KMAJOR / B_NMAJOR: stored transposed), acc in LC = MmaAcc<M, N, WM, WN, NT> (the m16n8k8
/// accumulator fragment is the m16n8k16 one). K is a multiple of 8. EXACT: each operand is
/// split into a TF32 part and the TF32 rest, and the three products that matter are summed,
/// small ones first (3xTF32: about fp32's accuracy for three times the MMAs). The fragments are
/// read one 32-bit value at a time (ldmatrix moves 16-bit elements); values past the tile's M
/// or N (an accumulator padded to whole fragments) read as zero.
template <class LC, int K, bool A_KMAJOR, bool B_NMAJOR, bool EXACT>
TJ_DEVICE void dot_ss_tf32(float (&acc)[LC::N], const float* sa, int lda, const float* sb,
                           int ldb) {
  static_assert(K % 8 == 0, "dot: the shared dimension of f32 tiles must be a multiple of 8");
  const int m_base = LC::wm() * LC::WTM, n_base = LC::wn() * LC::WTN;
  const int l = lane_id(), g = l / 4, t = l % 4;
  auto at = [&](int m, int k) {
    if (LC::PM != LC::R_ && m >= LC::R_) return 0.0f;
    return A_KMAJOR ? sa[k * lda + m] : sa[m * lda + k];
  };
  auto bt = [&](int k, int n) {
    if (LC::PN != LC::C_ && n >= LC::C_) return 0.0f;
    return B_NMAJOR ? sb[n * ldb + k] : sb[k * ldb + n];
  };
  TJ_UNROLL for (int k0 = 0; k0 < K; k0 += 8) {
    float a[LC::MT][4];
    TJ_UNROLL for (int mt = 0; mt < LC::MT; ++mt) {
      const int m0 = m_base + mt * 16;
      a[mt][0] = at(m0 + g, k0 + t);
      a[mt][1] = at(m0 + g + 8, k0 + t);
      a[mt][2] = at(m0 + g, k0 + t + 4);
      a[mt][3] = at(m0 + g + 8, k0 + t + 4);
    }
    float b[LC::NTL][2];
    TJ_UNROLL for (int nt = 0; nt < LC::NTL; ++nt) {
      const int n0 = n_base + nt * 8;
      b[nt][0] = bt(k0 + t, n0 + g);
      b[nt][1] = bt(k0 + t + 4, n0 + g);
    }
    unsigned ab[LC::MT][4], as[LC::MT][4], bb[LC::NTL][2], bs[LC::NTL][2];
    TJ_UNROLL for (int mt = 0; mt < LC::MT; ++mt) TJ_UNROLL for (int i = 0; i < 4; ++i) {
      ab[mt][i] = to_tf32(a[mt][i]);
      if (EXACT) as[mt][i] = to_tf32(a[mt][i] - __uint_as_float(ab[mt][i]));
    }
    TJ_UNROLL for (int nt = 0; nt < LC::NTL; ++nt) TJ_UNROLL for (int i = 0; i < 2; ++i) {
      bb[nt][i] = to_tf32(b[nt][i]);
      if (EXACT) bs[nt][i] = to_tf32(b[nt][i] - __uint_as_float(bb[nt][i]));
    }
    TJ_UNROLL for (int mt = 0; mt < LC::MT; ++mt)
        TJ_UNROLL for (int nt = 0; nt < LC::NTL;
                       ++nt) if ((LC::PM == LC::R_ || m_base + mt * 16 < LC::R_) &&
                                 (LC::PN == LC::C_ || n_base + nt * 8 < LC::C_)) {
      float* d = &acc[(mt * LC::NTL + nt) * 4];
      if (EXACT) {
        mma_1688_tf32(d, as[mt], bb[nt]);
        mma_1688_tf32(d, ab[mt], bs[nt]);
      }
      mma_1688_tf32(d, ab[mt], bb[nt]);
    }
  }
}

/// acc += A @ B with A in registers: `ra` is an f32 tile in layout LA = MmaAcc<M, K, WM, 1, NT>
/// (the accumulator layout of an earlier dot), rounded to T here; B in shared memory.
template <class LC, class LA, int K, class T, bool B_NMAJOR>
TJ_DEVICE void dot_rs(float (&acc)[LC::N], const float (&ra)[LA::N], const T* sb, int ldb) {
  static_assert(K % 16 == 0, "dot: the shared dimension must be a multiple of 16");
  static_assert(LA::WN_ == 1 && LA::WM_ == LC::WM_ && LC::WN_ == 1,
                "dot: a register A operand needs warps split along M only");
  const int n_base = LC::wn() * LC::WTN;
  TJ_UNROLL for (int k0 = 0; k0 < K; k0 += 16) {
    unsigned a[LC::MT][4];
    TJ_UNROLL for (int mt = 0; mt < LC::MT; ++mt) {
      const float* lo = &ra[(mt * LA::NTL + k0 / 8) * 4];
      const float* hi = &ra[(mt * LA::NTL + k0 / 8 + 1) * 4];
      a[mt][0] = pack2<T>(lo[0], lo[1]);
      a[mt][1] = pack2<T>(lo[2], lo[3]);
      a[mt][2] = pack2<T>(hi[0], hi[1]);
      a[mt][3] = pack2<T>(hi[2], hi[3]);
    }
    unsigned b[LC::NTL][2];
    load_b_frags<LC, T, B_NMAJOR>(b, sb, ldb, n_base, k0);
    TJ_UNROLL for (int mt = 0; mt < LC::MT; ++mt)
        TJ_UNROLL for (int nt = 0; nt < LC::NTL;
                       ++nt) if (LC::PN == LC::C_ || n_base + nt * 8 < LC::C_)
            mma_16816<T>(&acc[(mt * LC::NTL + nt) * 4], a[mt], b[nt]);
  }
}

} // namespace tj
