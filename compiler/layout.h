// Layouts: which thread of a block owns which element of a register tile. A small fixed set,
// each mirrored by a C++ template in kernels_src/prelude (same name, same parameters):
//
//   Blocked<R, C, VEC, TC, NT>  threads form a TR x TC grid (TR = NT / TC); thread (tr, tc) owns
//                               VEC consecutive columns at (tc + j*TC)*VEC and rows tr + i*TR.
//                               Coalesced, 16-byte accesses along rows. Rank-1 tiles use R = 1.
//   MmaAcc<M, N, WM, WN, NT>    the m16n8 tensor-core accumulator fragment; WM x WN warps tile
//                               the (16-padded) M x N tile. Also the A operand of a following
//                               dot when WN == 1 (the registers line up).
//   MfmaAcc<M, N, WM, WN, NT>   AMD's MFMA accumulator (gfx90a, wavefronts of 64): WM x WN waves
//                               tile the M x N tile in 16 x 16 blocks; in each, lane l holds
//                               rows 4*(l/16) + 0..3 of column l%16 (tj/mfma_map.cuh).
//   Slice<P, AXIS>              the rank-1 result of reducing layout P along AXIS: each thread
//                               holds the values of the other axis' coordinates it owns in P,
//                               so broadcasting back into P (x[:, None]) costs nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tilejit::ir {

enum class LayoutKind { Blocked, MmaAcc, MfmaAcc, Slice };

struct Layout {
  LayoutKind kind = LayoutKind::Blocked;
  std::vector<int64_t> shape; ///< logical tile shape (rank 1 or 2)
  int threads = 128;
  int warp = 32; ///< threads of the target that run in lockstep
  // Blocked
  int64_t rows = 1, cols = 1;
  int vec = 1, tc = 1;
  // MmaAcc, MfmaAcc
  int wm = 1, wn = 1;
  // Slice
  const Layout* parent = nullptr;
  int slice_axis = 0;

  int rank() const { return static_cast<int>(shape.size()); }
  /// Elements each thread holds (the length of its register array).
  int64_t per_thread() const;
  /// "blocked<64x64 vec=8 tc=8 nt=128>"
  std::string str() const;
  /// The prelude type: "tj::Blocked<64, 64, 8, 8, 128>".
  std::string cpp_type() const;
  /// Number of warps that split `axis` (for reductions that must cross warps).
  int warps_along(int axis) const;
  /// Whether some thread holds elements past the tile (valid() is false for them): a tile
  /// that is not a whole number of the threads' tiles (96 rows over 4 warps of 32).
  bool padded() const;
};

/// Whether two layouts give every thread the same elements in the same order (so a value in
/// one can be read as the other): the same layout, or row/column slices of MmaAcc or Blocked
/// parents that distribute the kept axis identically.
bool equivalent(const Layout* a, const Layout* b);

/// The element a thread holds at index e of its register array: (row, column) in the tile, as
/// the prelude's layout of the same name and parameters computes it (MmaAcc and MfmaAcc: lane
/// and warp from the thread and the layout's warp size). For tests that check a fragment
/// mapping against a model of the matrix instruction on a CPU.
struct ElementCoord {
  int64_t row = 0, col = 0;
};
ElementCoord accumulator_element(const Layout& l, int thread, int e);

/// Owns layouts for one kernel; equal layouts are the same object (compare pointers).
class LayoutTable {
public:
  /// The target's warp size (compiler/target.h): layouts built from now on use it.
  void set_warp_size(int warp) { warp_ = warp; }
  int warp_size() const { return warp_; }
  const Layout* blocked(std::vector<int64_t> shape, int vec, int tc, int threads);
  const Layout* mma_acc(int64_t m, int64_t n, int wm, int wn, int threads);
  const Layout* mfma_acc(int64_t m, int64_t n, int wm, int wn, int threads);
  const Layout* slice(const Layout* parent, int axis);
  /// The default layout for a tile of `shape` with `elem_bytes`-byte elements: Blocked with
  /// 16-byte vectors along the last axis where the shape allows.
  /// vector_bytes: bytes one thread owns contiguously along a row (16 for 16-byte accesses; a
  /// prefetch uses 128, one cache line per element).
  /// fill_warp: a register value's layout; a 2-D tile with fewer vectors than a warp has lanes
  /// takes narrower vectors (copies and prefetches keep their 16- and 128-byte pieces).
  const Layout* default_blocked(const std::vector<int64_t>& shape, int elem_bytes, int threads,
                                int vector_bytes = 16, bool fill_warp = false);

private:
  const Layout* intern(Layout l);
  /// An MmaAcc or MfmaAcc layout: WM x WN warps of the table's warp size make up `threads`.
  const Layout* accumulator(LayoutKind kind, int64_t m, int64_t n, int wm, int wn, int threads);
  std::vector<std::unique_ptr<Layout>> layouts_;
  int warp_ = 32;
};

} // namespace tilejit::ir
