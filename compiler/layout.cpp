#include "compiler/layout.h"

#include "support/error.h"

#include <algorithm>

namespace tilejit::ir {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
int64_t round_up(int64_t a, int64_t b) {
  return ceil_div(a, b) * b;
}

} // namespace

bool Layout::padded() const {
  switch (kind) {
  case LayoutKind::Blocked: {
    const int64_t tr = threads / tc;
    return rows % tr != 0 || cols % (int64_t(tc) * vec) != 0;
  }
  case LayoutKind::MmaAcc:
    return shape[0] % (16 * wm) != 0 || shape[1] % (8 * wn) != 0;
  case LayoutKind::MfmaAcc:
    return shape[0] % (16 * wm) != 0 || shape[1] % (16 * wn) != 0;
  case LayoutKind::Slice: {
    const Layout& p = *parent;
    if (p.kind == LayoutKind::Blocked)
      return slice_axis == 1 ? p.rows % (p.threads / p.tc) != 0
                             : p.cols % (int64_t(p.tc) * p.vec) != 0;
    const int block_n = p.kind == LayoutKind::MfmaAcc ? 16 : 8;
    return slice_axis == 1 ? p.shape[0] % (16 * p.wm) != 0 : p.shape[1] % (block_n * p.wn) != 0;
  }
  }
  return true;
}

int64_t Layout::per_thread() const {
  switch (kind) {
  case LayoutKind::Blocked: {
    int64_t tr = threads / tc;
    return ceil_div(rows, tr) * ceil_div(cols, int64_t(tc) * vec) * vec;
  }
  case LayoutKind::MmaAcc: {
    int64_t pm = round_up(shape[0], 16 * wm), pn = round_up(shape[1], 8 * wn);
    return (pm / (16 * wm)) * (pn / (8 * wn)) * 4;
  }
  case LayoutKind::MfmaAcc: {
    int64_t pm = round_up(shape[0], 16 * wm), pn = round_up(shape[1], 16 * wn);
    return (pm / (16 * wm)) * (pn / (16 * wn)) * 4;
  }
  case LayoutKind::Slice: {
    const Layout& p = *parent;
    if (p.kind == LayoutKind::Blocked) {
      int64_t tr = p.threads / p.tc;
      return slice_axis == 1 ? ceil_div(p.rows, tr)
                             : ceil_div(p.cols, int64_t(p.tc) * p.vec) * p.vec;
    }
    if (p.kind == LayoutKind::MmaAcc) {
      int64_t pm = round_up(p.shape[0], 16 * p.wm), pn = round_up(p.shape[1], 8 * p.wn);
      return slice_axis == 1 ? (pm / (16 * p.wm)) * 2 : (pn / (8 * p.wn)) * 2;
    }
    if (p.kind == LayoutKind::MfmaAcc) {
      // Per 16 x 16 block a lane holds 4 rows of one column.
      int64_t pm = round_up(p.shape[0], 16 * p.wm), pn = round_up(p.shape[1], 16 * p.wn);
      return slice_axis == 1 ? (pm / (16 * p.wm)) * 4 : pn / (16 * p.wn);
    }
    TJ_ICHECK(false, "slice of a slice layout");
  }
  }
  return 0;
}

std::string Layout::str() const {
  switch (kind) {
  case LayoutKind::Blocked:
    return tilejit::str("blocked<", rows, "x", cols, " vec=", vec, " tc=", tc, " nt=", threads,
                        warp != 32 ? tilejit::str(" warp=", warp) : "", ">");
  case LayoutKind::MmaAcc:
    return tilejit::str("mma_acc<", shape[0], "x", shape[1], " warps=", wm, "x", wn, ">");
  case LayoutKind::MfmaAcc:
    return tilejit::str("mfma_acc<", shape[0], "x", shape[1], " waves=", wm, "x", wn, ">");
  case LayoutKind::Slice:
    return tilejit::str("slice<", parent->str(), ", axis=", slice_axis, ">");
  }
  return "?";
}

std::string Layout::cpp_type() const {
  switch (kind) {
  case LayoutKind::Blocked:
    return tilejit::str("tj::Blocked<", rows, ", ", cols, ", ", vec, ", ", tc, ", ", threads, ">");
  case LayoutKind::MmaAcc:
    return tilejit::str("tj::MmaAcc<", shape[0], ", ", shape[1], ", ", wm, ", ", wn, ", ", threads,
                        ">");
  case LayoutKind::MfmaAcc:
    return tilejit::str("tj::MfmaAcc<", shape[0], ", ", shape[1], ", ", wm, ", ", wn, ", ", threads,
                        ">");
  case LayoutKind::Slice:
    return tilejit::str("tj::Slice<", parent->cpp_type(), ", ", slice_axis, ">");
  }
  return "?";
}

int Layout::warps_along(int axis) const {
  switch (kind) {
  case LayoutKind::Blocked: {
    // A row spans tc threads: more than a warp when tc > 32. Rows span tr threads, of which
    // 32 / tc share a warp.
    if (rank() == 1 || axis == 1) return tc > warp ? tc / warp : 1;
    int64_t tr = threads / tc;
    int rows_per_warp = tc >= warp ? 1 : warp / tc;
    return static_cast<int>(std::max<int64_t>(1, tr / rows_per_warp));
  }
  case LayoutKind::MmaAcc:
  case LayoutKind::MfmaAcc:
    return axis == 0 ? wm : wn;
  case LayoutKind::Slice:
    return 1;
  }
  return 1;
}

bool equivalent(const Layout* a, const Layout* b) {
  if (a == b) return true;
  if (!a || !b || a->kind != LayoutKind::Slice || b->kind != LayoutKind::Slice) return false;
  if (a->slice_axis != b->slice_axis || a->threads != b->threads || a->shape != b->shape)
    return false;
  const Layout& p = *a->parent;
  const Layout& q = *b->parent;
  if (p.kind != q.kind) return false;
  if (p.kind == LayoutKind::MmaAcc || p.kind == LayoutKind::MfmaAcc)
    return p.wm == q.wm && p.wn == q.wn;
  if (p.kind == LayoutKind::Blocked)
    return a->slice_axis == 1 ? p.tc == q.tc : p.tc == q.tc && p.vec == q.vec;
  return false;
}

const Layout* LayoutTable::intern(Layout l) {
  l.warp = warp_;
  for (const auto& existing : layouts_)
    // The shape too: a rank-1 [N] and a rank-2 [1, N] blocked layout print alike.
    if (existing->shape == l.shape && existing->str() == l.str()) return existing.get();
  layouts_.push_back(std::make_unique<Layout>(std::move(l)));
  return layouts_.back().get();
}

const Layout* LayoutTable::blocked(std::vector<int64_t> shape, int vec, int tc, int threads) {
  TJ_ICHECK(!shape.empty() && shape.size() <= 2, "blocked layout of rank ", shape.size());
  TJ_ICHECK(tc >= 1 && threads % tc == 0, "tc ", tc, " does not divide ", threads);
  Layout l;
  l.kind = LayoutKind::Blocked;
  l.rows = shape.size() == 2 ? shape[0] : 1;
  l.cols = shape.back();
  l.shape = std::move(shape);
  l.vec = vec;
  l.tc = tc;
  l.threads = threads;
  return intern(std::move(l));
}

const Layout* LayoutTable::accumulator(LayoutKind kind, int64_t m, int64_t n, int wm, int wn,
                                       int threads) {
  TJ_ICHECK(wm * wn * warp_ == threads, "accumulator warps ", wm, "x", wn, " vs ", threads,
            " threads");
  Layout l;
  l.kind = kind;
  l.shape = {m, n};
  l.wm = wm;
  l.wn = wn;
  l.threads = threads;
  return intern(std::move(l));
}

const Layout* LayoutTable::mma_acc(int64_t m, int64_t n, int wm, int wn, int threads) {
  return accumulator(LayoutKind::MmaAcc, m, n, wm, wn, threads);
}

const Layout* LayoutTable::mfma_acc(int64_t m, int64_t n, int wm, int wn, int threads) {
  return accumulator(LayoutKind::MfmaAcc, m, n, wm, wn, threads);
}

ElementCoord accumulator_element(const Layout& l, int thread, int e) {
  TJ_ICHECK(l.kind == LayoutKind::MmaAcc || l.kind == LayoutKind::MfmaAcc,
            "accumulator_element of ", l.str());
  const int lane = thread % l.warp, warp = thread / l.warp;
  const int wm = warp % l.wm, wn = warp / l.wm;
  const int block_n = l.kind == LayoutKind::MfmaAcc ? 16 : 8;
  const int64_t pm = round_up(l.shape[0], 16 * l.wm), pn = round_up(l.shape[1], block_n * l.wn);
  const int64_t wtm = pm / l.wm, wtn = pn / l.wn;
  const int ntl = static_cast<int>(wtn / block_n);
  if (l.kind == LayoutKind::MmaAcc) // tj::MmaAcc::r, c
    return {wm * wtm + (e / (4 * ntl)) * 16 + lane / 4 + ((e % 4) / 2) * 8,
            wn * wtn + ((e / 4) % ntl) * 8 + (lane % 4) * 2 + (e % 2)};
  // tj::MfmaAcc::r, c (tj::mfma::d_row, d_col)
  return {wm * wtm + (e / (4 * ntl)) * 16 + 4 * (lane / 16) + e % 4,
          wn * wtn + ((e / 4) % ntl) * 16 + lane % 16};
}

const Layout* LayoutTable::slice(const Layout* parent, int axis) {
  TJ_ICHECK(parent->rank() == 2 && parent->kind != LayoutKind::Slice, "slice of ", parent->str());
  Layout l;
  l.kind = LayoutKind::Slice;
  l.shape = {parent->shape[axis == 0 ? 1 : 0]};
  l.parent = parent;
  l.slice_axis = axis;
  l.threads = parent->threads;
  return intern(std::move(l));
}

const Layout* LayoutTable::default_blocked(const std::vector<int64_t>& shape, int elem_bytes,
                                           int threads, int vector_bytes, bool fill_warp) {
  TJ_ICHECK(!shape.empty(), "a tile layout asked for a scalar");
  int64_t cols = shape.back();
  int64_t rows = shape.size() == 2 ? shape[0] : 1;
  int vec = std::max(1, vector_bytes / std::max(1, elem_bytes));
  while (vec > 1 && cols % vec != 0) vec /= 2;
  // A rank-1 tile uses the whole block: fewer elements per thread rather than idle threads
  // (a [128] tile in a 128-thread block is one element per thread, not 4 for 32 threads).
  // A scan over time with one lane per element needs exactly that, and narrower accesses by
  // every thread move the same bytes as wide ones by a quarter of them.
  if (rows == 1 && shape.size() == 1)
    while (vec > 1 && cols / vec < threads) vec /= 2;
  // A 2-D register value with fewer vectors than a warp has lanes takes narrower ones: hbv's
  // [2, 16] state (basins by components) in a warp took 4-wide vectors, 8 busy lanes with 4
  // chains each, where 32 lanes with one each run its serial loop in a quarter of the
  // instructions. (Larger tiles, single rows and copies keep their vectors: the tuned kernels'
  // accesses, paged_sparse's [1, D] query by cp.async among them, were measured with them.)
  if (fill_warp && rows > 1)
    while (vec > 1 && rows * (cols / vec) < warp_) vec /= 2;
  // Threads along a row: enough to cover it with one vector each, at most a warp for 2-D tiles
  // (so row reductions stay inside a warp), up to the whole block for rank-1 tiles.
  int64_t chunks = std::max<int64_t>(1, cols / vec);
  int max_tc = shape.size() == 2 && rows > 1 ? warp_ : threads;
  // (tc divides the block: 32 in a 96-thread block, not 64.)
  int tc = 1;
  while (tc * 2 <= max_tc && tc * 2 <= chunks && threads % (tc * 2) == 0) tc *= 2;
  return blocked(shape, vec, tc, threads);
}

} // namespace tilejit::ir
