// dot with a 4-bit A operand: tensor-core A fragments unpacked straight from packed words in
// shared memory, never staged as 16-bit values (tj::dot_q4, for dot(unpack4<T>(words, z), b)).
#pragma once

#include "tj/layouts.cuh"
#include "tj/mma.cuh"
#include "tj/unpack.cuh"

namespace tj {

/// acc += (Q - Z) @ B. Q [M, K] is 4-bit values packed 8 per 32-bit word along K in shared
/// memory (row stride ldq words; word c of a row holds k = 8c..8c+7, field i at bits 4i); Z a
/// zero point per row (ZERO 2: zero[s] for the rows this thread owns, a Slice of LC along axis
/// 1; ZERO 1: zero[0] for every row; ZERO 0: none); B [K, N] in shared memory (B_NMAJOR: stored
/// [N][K]); acc in LC = MmaAcc<M, N, WM, 1, NT>. K is a multiple of 32. SCALED: each row's
/// values times its scale (`scale`, a Slice of LC along axis 1 like ZERO 2's zero points),
/// rounded to T: the A operand unpack4(...) * s[:, None].
///
/// The tensor cores take k in any order as long as A and B agree: in each chunk of 32 k, lane
/// (g, t) unpacks word t of rows g and g + 8 (its k = 8t..8t+7), whose pairs (q_i, q_{i+4}) are
/// the fragment columns (2t, 2t+1) and (2t+8, 2t+9) of two k16 steps: step 0 takes fields
/// (0, 4) and (1, 5), step 1 fields (2, 6) and (3, 7). B rows are read in that same order: k
/// (8t, 8t+4), (8t+1, 8t+5)..., a permute per register; INTERLEAVED words (fields i and i + 4
/// are k 8t+2i and 8t+2i+1, unpack4's interleaved=1) pair k in B's own order, so a 16-byte
/// read of B's [N][K] row gives the four B registers as they are.
template <class LC, int K, class T, bool B_NMAJOR, int ZERO, bool INTERLEAVED = false,
          bool SCALED = false>
TJ_DEVICE void dot_q4(float (&acc)[LC::N], const int* sq, int ldq, const int* zero, const T* sb,
                      int ldb, const T* scale = nullptr) {
  static_assert(K % 32 == 0, "dot_q4: K must be a multiple of 32");
  static_assert(LC::WN_ == 1, "dot_q4: warps must split M only");
  const int l = lane_id(), g = l / 4, t = l % 4;
  const int m_base = LC::wm() * LC::WTM;
  TJ_UNROLL for (int k0 = 0; k0 < K; k0 += 32) {
    unsigned b[LC::NTL][2][2]; // [n tile][k16 step][register]
    TJ_UNROLL for (int nt = 0; nt < LC::NTL; ++nt) {
      if (LC::PN != LC::C_ && nt * 8 >= LC::C_) continue;
      const int n = nt * 8 + g;
      if (B_NMAJOR) {
        // x[n][k0 + 8t .. + 7] in one 16-byte read: (x0 x1)(x2 x3)(x4 x5)(x6 x7).
        unsigned v[4];
        // ("memory": this read must stay after the barrier that made the tile visible.)
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
                     : "r"(smem_addr(sb + n * ldb + k0 + 8 * t))
                     : "memory");
        if (INTERLEAVED) {
          b[nt][0][0] = v[0]; // (x0, x1)
          b[nt][0][1] = v[1]; // (x2, x3)
          b[nt][1][0] = v[2]; // (x4, x5)
          b[nt][1][1] = v[3]; // (x6, x7)
        } else {
          b[nt][0][0] = permute(v[0], v[2], 0x5410); // (x0, x4)
          b[nt][0][1] = permute(v[0], v[2], 0x7632); // (x1, x5)
          b[nt][1][0] = permute(v[1], v[3], 0x5410); // (x2, x6)
          b[nt][1][1] = permute(v[1], v[3], 0x7632); // (x3, x7)
        }
      } else {
        const T* p = sb + (k0 + 8 * t) * ldb + n;
        unsigned x[8];
        TJ_UNROLL for (int i = 0; i < 8; ++i) x[i] = p[i * ldb].bits;
        TJ_UNROLL for (int s = 0; s < 2; ++s) {
          if (INTERLEAVED) {
            b[nt][s][0] = x[4 * s] | (x[4 * s + 1] << 16);
            b[nt][s][1] = x[4 * s + 2] | (x[4 * s + 3] << 16);
          } else {
            b[nt][s][0] = x[2 * s] | (x[2 * s + 4] << 16);
            b[nt][s][1] = x[2 * s + 1] | (x[2 * s + 5] << 16);
          }
        }
      }
    }
    TJ_UNROLL for (int mt = 0; mt < LC::MT; ++mt) {
      if (LC::PM != LC::R_ && m_base + mt * 16 >= LC::R_) continue;
      const int r = m_base + mt * 16 + g;
      const int zlo = ZERO == 2 ? zero[mt * 2] : ZERO == 1 ? zero[0] : 0;
      const int zhi = ZERO == 2 ? zero[mt * 2 + 1] : zlo;
      unsigned lo[4], hi[4];
      unpack4_pairs<T>(static_cast<unsigned>(sq[r * ldq + k0 / 8 + t]), zlo, lo);
      unpack4_pairs<T>(static_cast<unsigned>(sq[(r + 8) * ldq + k0 / 8 + t]), zhi, hi);
      if (SCALED) {
        const unsigned slo = scale[mt * 2].bits * 0x10001u, shi = scale[mt * 2 + 1].bits * 0x10001u;
        TJ_UNROLL for (int i = 0; i < 4; ++i) lo[i] = mul2<T>(lo[i], slo),
                                              hi[i] = mul2<T>(hi[i], shi);
      }
      const unsigned a0[4] = {lo[0], hi[0], lo[1], hi[1]};
      const unsigned a1[4] = {lo[2], hi[2], lo[3], hi[3]};
      // Both k16 steps add into the same accumulators: all n tiles of the first step, then of
      // the second, so that no MMA waits on the one just issued.
      TJ_UNROLL for (int s = 0; s < 2; ++s) TJ_UNROLL for (int nt = 0; nt < LC::NTL; ++nt) {
        if (LC::PN != LC::C_ && nt * 8 >= LC::C_) continue;
        mma_16816<T>(&acc[(mt * LC::NTL + nt) * 4], s == 0 ? a0 : a1, b[nt][s]);
      }
    }
  }
}

} // namespace tj
