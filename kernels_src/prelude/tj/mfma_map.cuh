// Which lane of a wavefront of 64 holds which element of an MFMA instruction's operands and
// result (gfx90a): plain integer arithmetic, compiled for the device by HIPRTC and for the host
// by tests/compiler/mfma_fragment_test.cpp, which checks it against a model of the instruction
// written from AMD's ISA description, so a wrong mapping is caught on a CPU.
#pragma once

#ifndef TJ_HD
#define TJ_HD __host__ __device__ inline
#endif

namespace tj {
namespace mfma {

/// v_mfma_f32_16x16x16f16 / _16x16x16bf16_1k (PER = 4) and v_mfma_f32_16x16x4f32 (PER = 1):
/// one 16 x 16 block of D += A B, K = 4 * PER deep, over the 64 lanes:
///   A [16, K]   lane l holds A[l % 16][PER * (l / 16) + j] for j < PER
///   B [K, 16]   lane l holds B[PER * (l / 16) + j][l % 16]
///   D [16, 16]  lane l holds D[4 * (l / 16) + i][l % 16] for i < 4
template <int PER> struct Block16 {
  static constexpr int K = 4 * PER;
  TJ_HD static int a_row(int lane) { return lane % 16; }
  TJ_HD static int a_k(int lane, int j) { return PER * (lane / 16) + j; }
  TJ_HD static int b_k(int lane, int j) { return PER * (lane / 16) + j; }
  TJ_HD static int b_col(int lane) { return lane % 16; }
  TJ_HD static int d_row(int lane, int i) { return 4 * (lane / 16) + i; }
  TJ_HD static int d_col(int lane) { return lane % 16; }
};

/// The MfmaAcc layout (tj/layouts.cuh): wave (wm, wn) owns a WTM x WTN region of NTL blocks per
/// block row; element e of a lane is register e % 4 of block e / 4 (row-major over the region).
template <int WTM, int WTN> struct AccMap {
  static constexpr int MT = WTM / 16, NTL = WTN / 16;
  TJ_HD static int row(int wm, int lane, int e) {
    return wm * WTM + (e / (4 * NTL)) * 16 + Block16<4>::d_row(lane, e % 4);
  }
  TJ_HD static int col(int wn, int lane, int e) {
    return wn * WTN + ((e / 4) % NTL) * 16 + Block16<4>::d_col(lane);
  }
  /// Reductions (tj::MfmaAcc's slice_*): along columns (AXIS 1) a lane keeps one value per row
  /// it holds (MT * 4), along rows (AXIS 0) one per column (NTL); lanes that share a row differ
  /// in bits 0-3, lanes that share a column in bits 4-5; one lane per row (column) stores it.
  template <int AXIS> TJ_HD static int slice_index(int e) {
    return AXIS == 1 ? (e / (4 * NTL)) * 4 + e % 4 : (e / 4) % NTL;
  }
  template <int AXIS> TJ_HD static constexpr int slice_n() { return AXIS == 1 ? MT * 4 : NTL; }
  template <int AXIS> TJ_HD static constexpr int lane_bits() { return AXIS == 1 ? 15 : 48; }
  template <int AXIS> TJ_HD static int slice_coord(int wm, int wn, int lane, int s) {
    return AXIS == 1 ? wm * WTM + (s / 4) * 16 + 4 * (lane / 16) + s % 4
                     : wn * WTN + s * 16 + lane % 16;
  }
  template <int AXIS> TJ_HD static bool slice_owner(int wm, int wn, int lane) {
    return AXIS == 1 ? (lane % 16 == 0 && wn == 0) : (lane / 16 == 0 && wm == 0);
  }
};

} // namespace mfma
} // namespace tj
