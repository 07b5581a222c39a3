// Register-tile layouts: which thread owns which element (compiler/layout.h has the same
// three, with the same parameters). Every layout gives, for element e of a thread's array:
//   r(e), c(e)   its row and column in the tile (rank-1 tiles: r = 0, c = the index)
//   valid(e)     whether it lies inside the logical tile (padding and idle threads do not)
// and, for reductions along AXIS (0 = rows, 1 = columns):
//   slice_index<AXIS>(e)  where e's value goes in the reduced (Slice) array
//   lane_bits<AXIS>()     lane-id bits that vary along AXIS (combined with shuffles)
//   warps_along<AXIS>()   warps that split AXIS (combined through shared memory)
//   warp_pos<AXIS>()      this warp's position along AXIS
#pragma once

#include "tj/mfma_map.cuh"
#include "tj/types.cuh"

namespace tj {

/// Threads that run in lockstep: 32 on NVIDIA GPUs; on AMD the emitter defines it (64 on
/// gfx90a, 32 on gfx1030), as the compiler's layouts (compiler/layout.h, `warp`) assumed.
#ifndef TJ_WARP
#define TJ_WARP 32
#endif
constexpr int kWarp = TJ_WARP;

TJ_DEVICE int lane_id() {
  return threadIdx.x & (kWarp - 1);
}
TJ_DEVICE int warp_id() {
  return threadIdx.x / kWarp;
}

/// Threads form a TR x TC grid (TR = NT / TC); thread (tr, tc) owns VEC consecutive columns at
/// (tc + j*TC)*VEC for j < CJ, in rows tr + i*TR for i < RI. Element e = (i*CJ + j)*VEC + v.
template <int R, int C, int VEC, int TC, int NT> struct Blocked {
  static constexpr int R_ = R, C_ = C, VEC_ = VEC, NT_ = NT;
  static constexpr int TR = NT / TC;
  static constexpr int RI = (R + TR - 1) / TR;
  static constexpr int CJ = (C + TC * VEC - 1) / (TC * VEC);
  static constexpr int N = RI * CJ * VEC;
  static constexpr bool EXACT = (R % TR == 0) && (C % (TC * VEC) == 0);
  TJ_DEVICE static int tr() { return threadIdx.x / TC; }
  TJ_DEVICE static int tcol() { return threadIdx.x % TC; }
  TJ_DEVICE static int r(int e) { return tr() + (e / (VEC * CJ)) * TR; }
  TJ_DEVICE static int c(int e) { return (tcol() + ((e / VEC) % CJ) * TC) * VEC + e % VEC; }
  TJ_DEVICE static bool valid(int e) { return EXACT || (r(e) < R && c(e) < C); }
  template <int AXIS> TJ_DEVICE static int slice_index(int e) {
    return AXIS == 1 ? e / (VEC * CJ) : e % (VEC * CJ);
  }
  template <int AXIS> __host__ __device__ static constexpr int lane_bits() {
    return AXIS == 1 ? (TC >= kWarp ? kWarp - 1 : TC - 1)
                     : (TC >= kWarp ? 0 : (kWarp - 1) & ~(TC - 1));
  }
  template <int AXIS> __host__ __device__ static constexpr int warps_along() {
    return AXIS == 1 ? (TC > kWarp ? TC / kWarp : 1) : (TC >= kWarp ? NT / TC : NT / kWarp);
  }
  template <int AXIS> TJ_DEVICE static int warp_pos() {
    return AXIS == 1 ? (TC > kWarp ? (threadIdx.x % TC) / kWarp : 0)
                     : (TC >= kWarp ? threadIdx.x / TC : warp_id());
  }
  /// Slice support: the kept coordinate of reduced element s, and how many there are.
  template <int AXIS> __host__ __device__ static constexpr int slice_n() {
    return AXIS == 1 ? RI : CJ * VEC;
  }
  template <int AXIS> TJ_DEVICE static int slice_coord(int s) {
    return AXIS == 1 ? tr() + s * TR : (tcol() + (s / VEC) * TC) * VEC + s % VEC;
  }
  template <int AXIS> TJ_DEVICE static bool slice_owner() {
    return AXIS == 1 ? tcol() == 0 : tr() == 0;
  }
};

/// The m16n8 tensor-core accumulator: WM x WN warps tile the (16*WM, 8*WN)-padded M x N tile;
/// each warp owns MT x NTL fragments of 16 x 8; in each, lane l holds rows l/4 and l/4 + 8,
/// columns 2*(l%4) + {0, 1}. Element e = (mt*NTL + nt)*4 + reg.
template <int TM, int TN, int WM, int WN, int NT> struct MmaAcc {
  static_assert(WM * WN * 32 == NT, "MmaAcc: WM * WN warps must make up the block");
  static constexpr int R_ = TM, C_ = TN, NT_ = NT, WM_ = WM, WN_ = WN;
  static constexpr int PM = (TM + 16 * WM - 1) / (16 * WM) * (16 * WM);
  static constexpr int PN = (TN + 8 * WN - 1) / (8 * WN) * (8 * WN);
  static constexpr int WTM = PM / WM, WTN = PN / WN;
  static constexpr int MT = WTM / 16, NTL = WTN / 8;
  static constexpr int N = MT * NTL * 4;
  static constexpr bool EXACT = (TM == PM) && (TN == PN);
  TJ_DEVICE static int wm() { return warp_id() % WM; }
  TJ_DEVICE static int wn() { return warp_id() / WM; }
  TJ_DEVICE static int r(int e) {
    return wm() * WTM + (e / (4 * NTL)) * 16 + lane_id() / 4 + ((e % 4) / 2) * 8;
  }
  TJ_DEVICE static int c(int e) {
    return wn() * WTN + ((e / 4) % NTL) * 8 + (lane_id() % 4) * 2 + (e % 2);
  }
  TJ_DEVICE static bool valid(int e) { return EXACT || (r(e) < TM && c(e) < TN); }
  template <int AXIS> TJ_DEVICE static int slice_index(int e) {
    return AXIS == 1 ? (e / (4 * NTL)) * 2 + (e % 4) / 2 : ((e / 4) % NTL) * 2 + (e % 2);
  }
  template <int AXIS> __host__ __device__ static constexpr int lane_bits() {
    return AXIS == 1 ? 3 : 28;
  }
  template <int AXIS> __host__ __device__ static constexpr int warps_along() {
    return AXIS == 1 ? WN : WM;
  }
  template <int AXIS> TJ_DEVICE static int warp_pos() { return AXIS == 1 ? wn() : wm(); }
  template <int AXIS> __host__ __device__ static constexpr int slice_n() {
    return AXIS == 1 ? MT * 2 : NTL * 2;
  }
  template <int AXIS> TJ_DEVICE static int slice_coord(int s) {
    return AXIS == 1 ? wm() * WTM + (s / 2) * 16 + lane_id() / 4 + (s % 2) * 8
                     : wn() * WTN + (s / 2) * 8 + (lane_id() % 4) * 2 + s % 2;
  }
  template <int AXIS> TJ_DEVICE static bool slice_owner() {
    return AXIS == 1 ? (lane_id() % 4 == 0 && wn() == 0) : (lane_id() / 4 == 0 && wm() == 0);
  }
};

/// AMD's MFMA accumulator (gfx90a, wavefronts of 64): WM x WN waves tile the (16*WM, 16*WN)-
/// padded M x N tile; each wave owns MT x NTL blocks of 16 x 16; in each, lane l holds rows
/// 4*(l/16) + 0..3 of column l%16 (tj/mfma_map.cuh). Element e = (mt*NTL + nt)*4 + i.
template <int TM, int TN, int WM, int WN, int NT> struct MfmaAcc {
  static_assert(WM * WN * kWarp == NT, "MfmaAcc: WM * WN waves must make up the block");
  static constexpr int R_ = TM, C_ = TN, NT_ = NT, WM_ = WM, WN_ = WN;
  static constexpr int PM = (TM + 16 * WM - 1) / (16 * WM) * (16 * WM);
  static constexpr int PN = (TN + 16 * WN - 1) / (16 * WN) * (16 * WN);
  static constexpr int WTM = PM / WM, WTN = PN / WN;
  static constexpr int MT = WTM / 16, NTL = WTN / 16;
  static constexpr int N = MT * NTL * 4;
  static constexpr bool EXACT = (TM == PM) && (TN == PN);
  using Map = mfma::AccMap<WTM, WTN>;
  TJ_DEVICE static int wm() { return warp_id() % WM; }
  TJ_DEVICE static int wn() { return warp_id() / WM; }
  TJ_DEVICE static int r(int e) { return Map::row(wm(), lane_id(), e); }
  TJ_DEVICE static int c(int e) { return Map::col(wn(), lane_id(), e); }
  TJ_DEVICE static bool valid(int e) { return EXACT || (r(e) < TM && c(e) < TN); }
  // Reductions: tj::mfma::AccMap's (checked on a CPU by tests/compiler/mfma_fragment_test).
  template <int AXIS> TJ_DEVICE static int slice_index(int e) {
    return Map::template slice_index<AXIS>(e);
  }
  template <int AXIS> __host__ __device__ static constexpr int lane_bits() {
    return Map::template lane_bits<AXIS>();
  }
  template <int AXIS> __host__ __device__ static constexpr int warps_along() {
    return AXIS == 1 ? WN : WM;
  }
  template <int AXIS> TJ_DEVICE static int warp_pos() { return AXIS == 1 ? wn() : wm(); }
  template <int AXIS> __host__ __device__ static constexpr int slice_n() {
    return Map::template slice_n<AXIS>();
  }
  template <int AXIS> TJ_DEVICE static int slice_coord(int s) {
    return Map::template slice_coord<AXIS>(wm(), wn(), lane_id(), s);
  }
  template <int AXIS> TJ_DEVICE static bool slice_owner() {
    return Map::template slice_owner<AXIS>(wm(), wn(), lane_id());
  }
};

/// The rank-1 result of reducing layout P along AXIS: each thread keeps the values for the
/// coordinates of the other axis that it owns in P (replicated across the threads that
/// shared them), so x[:, None] broadcasts back into P with no data movement.
template <class P, int AXIS> struct Slice {
  static constexpr int N = P::template slice_n<AXIS>();
  static constexpr int EXTENT = AXIS == 1 ? P::R_ : P::C_;
  static constexpr int R_ = 1, C_ = EXTENT, NT_ = P::NT_;
  TJ_DEVICE static int r(int) { return 0; }
  TJ_DEVICE static int c(int s) { return P::template slice_coord<AXIS>(s); }
  TJ_DEVICE static bool valid(int s) { return c(s) < EXTENT; }
  /// One thread per distinct element (the others hold copies): used for stores and sums.
  TJ_DEVICE static bool owner() { return P::template slice_owner<AXIS>(); }
};

/// Whether element e of layout L is the one copy to store or count (Slice layouts replicate).
template <class L> struct Owner {
  TJ_DEVICE static bool is(int) { return true; }
};
template <class P, int AXIS> struct Owner<Slice<P, AXIS>> {
  TJ_DEVICE static bool is(int) { return Slice<P, AXIS>::owner(); }
};

} // namespace tj
