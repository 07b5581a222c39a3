#include "compiler/plan_shared_memory.h"

#include "compiler/assign_layouts.h"
#include "compiler/producer_warps.h"
#include "compiler/specialise.h"
#include "support/error.h"
#include "support/text.h"

#include <algorithm>
#include <map>
#include <set>

namespace tilejit {

using ir::ExprKind;
using ir::Space;

namespace {

int64_t round_up(int64_t a, int64_t b) {
  return (a + b - 1) / b * b;
}

/// Scratch bytes one expression needs (0 if none).
int64_t scratch_need(const ir::Expr& e, int threads, int warp) {
  int64_t elem = std::max(4, dtype_size(e.type.dtype));
  switch (e.kind) {
  case ExprKind::Reduce: {
    if (e.axis < 0) return (threads / warp) * elem;
    const ir::Layout* in = e.a->layout;
    if (!in) return 0;
    int w = in->warps_along(e.axis);
    int64_t extent = e.a->type.shape[e.axis == 0 ? 1 : 0];
    return w > 1 ? w * extent * elem : 0;
  }
  case ExprKind::Scan:
    return e.type.numel() * elem;
  case ExprKind::SolveTril: { // A and X at the prelude's row strides (tj::TrilStride)
    const int64_t c = e.type.shape[0];
    return (c * (c + 4) + c * (c + 8)) * 4;
  }
  case ExprKind::ClusterSum: // each thread's values, where the cluster's other programs read them
    if (e.type.is_scalar()) return 16;
    return e.layout ? e.layout->per_thread() * threads * 4 : 0;
  case ExprKind::Convert:
    if (e.type.space == Space::Frag) return e.type.numel() * std::max(4, dtype_size(e.type.dtype));
    return 0;
  case ExprKind::AtomicAdd:
    return e.type.is_scalar() ? 16 : 0;
  default:
    return 0;
  }
}

/// Shared tiles read only as the [N][K] B operand of dot(unpack4(words, z), trans(b)) (what
/// tj::dot_q4 reads with 16-byte loads instead of ldmatrix).
std::set<const ir::Var*> q4_dot_b_operands(ir::Kernel& k) {
  std::set<const ir::Var*> q4, other;
  ir::for_each_stmt(k.body, [&](ir::Stmt& s) {
    ir::for_each_expr_root(s, [&](ir::ExprPtr& root) {
      ir::for_each_node(*root, [&](ir::Expr& e) {
        if (e.kind != ExprKind::Dot) return;
        const ir::Expr* u = q4_operand(*e.a).unpack;
        const bool q4_dot = u && u->layout && u->layout->kind == ir::LayoutKind::MmaAcc;
        auto var_of = [](const ir::Expr& x) -> const ir::Var* {
          return x.kind == ExprKind::VarRef && x.var->type.space == Space::Shared ? x.var : nullptr;
        };
        if (q4_dot && e.b->kind == ExprKind::Trans && var_of(*e.b->a)) {
          q4.insert(var_of(*e.b->a));
          return;
        }
        // Any other dot reading the tile (ldmatrix wants the 16-byte padding).
        for (const ir::Expr* x : {e.a.get(), e.b.get()}) {
          if (x->kind == ExprKind::Trans) x = x->a.get();
          if (const ir::Var* v = var_of(*x)) other.insert(v);
        }
      });
    });
  });
  for (const ir::Var* v : other) q4.erase(v);
  return q4;
}

} // namespace

int64_t swizzled_rows(const ir::Var& v) {
  return round_up(v.type.shape[0], 16);
}

int64_t shared_tile_bytes(const ir::Var& v) {
  int64_t rows = v.type.rank() >= 2 ? round_up(v.type.shape[0], 16) : 1;
  return rows * v.smem_row_stride * dtype_size(v.type.dtype);
}

SharedLiveness::SharedLiveness(ir::Kernel& k) : apart_(producer_outer_tiles(k)) {
  number(k.body);
  for (const Loop& l : loops_)
    for (auto& [v, uses] : uses_) {
      bool inside = false, outside = false, read_first = false;
      int64_t first_inside = INT64_MAX;
      for (const Use& u : uses) {
        bool in = u.at >= l.start && u.at <= l.end;
        (in ? inside : outside) = true;
        if (in && u.at < first_inside) first_inside = u.at, read_first = !u.write;
      }
      if (inside && (outside || read_first || v->stages > 1)) {
        Interval& iv = live_[v];
        iv.first = std::min(iv.first, l.start);
        iv.last = std::max(iv.last, l.end);
      }
    }
}

bool SharedLiveness::overlap(const ir::Var* a, const ir::Var* b) const {
  auto ia = live_.find(a), ib = live_.find(b);
  if (ia == live_.end() || ib == live_.end()) return false; // never used: no storage needed
  return ia->second.first <= ib->second.last && ib->second.first <= ia->second.last;
}

bool SharedLiveness::none_live_at(const ir::Stmt& s) const {
  auto at = at_.find(&s);
  TJ_ICHECK(at != at_.end(), "a statement the liveness numbering did not see");
  for (const auto& [v, iv] : live_)
    if (iv.first <= at->second && at->second <= iv.last) return false;
  return true;
}

bool SharedLiveness::may_share(const ir::Var* a, const ir::Var* b) const {
  // Ring buffers keep storage of their own: the pipeline synchronises them itself, so
  // insert-barriers does not order them against other tiles.
  return a->stages == 1 && b->stages == 1 && !apart_.count(a) && !apart_.count(b) && used(a) &&
         used(b) && !overlap(a, b);
}

void SharedLiveness::use(const ir::Var* v, bool write) {
  uses_[v].push_back({next_, write});
  Interval& iv = live_[v];
  iv.first = std::min(iv.first, next_);
  iv.last = std::max(iv.last, next_);
}

void SharedLiveness::number(ir::Block& b) {
  for (auto& sp : b) {
    ir::Stmt& s = *sp;
    const int64_t start = next_++;
    at_[&s] = start;
    std::set<ir::Var*> reads, writes;
    ir::for_each_expr_root(s, [&](ir::ExprPtr& root) {
      ir::for_each_node(*root, [&](ir::Expr& n) {
        if (n.kind == ExprKind::VarRef && n.var->type.space == Space::Shared) reads.insert(n.var);
        if (n.kind == ExprKind::Convert && n.var) writes.insert(n.var), reads.insert(n.var);
      });
    });
    // One point in time for the whole statement: its reads and writes are spread over the
    // block's threads with no barrier between them, so one thread may write the target while
    // another still reads an operand (a gather's index tile and the tile it fills cannot
    // share storage).
    for (ir::Var* v : reads) use(v, /*write=*/false);
    for (ir::Var* v : writes) use(v, /*write=*/true);
    if ((s.kind == ir::StmtKind::Decl || s.kind == ir::StmtKind::Assign) &&
        s.var->type.space == Space::Shared)
      use(s.var, /*write=*/true);
    number(s.body);
    number(s.else_body);
    if (s.kind == ir::StmtKind::For) loops_.push_back({start, next_++});
  }
}

void plan_shared_memory(ir::Kernel& k) {
  SharedLiveness live(k);
  int64_t scratch = 0, whole = 0, exchange = 0;
  ir::for_each_stmt(k.body, [&](ir::Stmt& s) {
    ir::for_each_expr_root(s, [&](ir::ExprPtr& root) {
      ir::for_each_node(*root, [&](ir::Expr& e) {
        if (e.kind == ExprKind::ClusterSum && k.cluster_size() == 1) return; // its own value
        const int64_t need = scratch_need(e, k.threads, k.layouts.warp_size());
        // A tile's values (the accumulator's size) where no tile is live: through the bytes
        // from the start of shared memory, the dead tiles' included (the emitter waits for
        // every copy and thread first; the sum ends with a barrier of the cluster).
        if (e.kind == ExprKind::ClusterSum && !e.type.is_scalar() && live.none_live_at(s)) {
          e.scratch_region = ir::kExchangeRegion;
          exchange = std::max(exchange, need);
          return;
        }
        if (e.kind == ExprKind::SolveTril) // both halves (place-scratch: scratch=whole)
          whole = std::max(whole, need);
        else
          scratch = std::max(scratch, need);
      });
    });
  });
  // Two regions: consecutive scratch users alternate between them, so each needs one barrier
  // (between its write and its read) instead of two (codegen tracks the alternation).
  // An operation that takes the whole area (solve_tril) needs only the two halves together.
  k.scratch_bytes = std::max(2 * round_up(scratch, 16), round_up(whole, 32));
  const int64_t base = round_up(k.scratch_bytes, 128);
  const std::set<const ir::Var*> q4_b = q4_dot_b_operands(k);
  std::vector<ir::Var*> tiles;
  for (auto& vp : k.vars) {
    ir::Var& v = *vp;
    if (v.type.space != Space::Shared) continue;
    if (v.type.rank() > 2)
      throw Error(str(v.loc.path(), ":", v.loc.line, ":", v.loc.col, ": shared tile '", v.name,
                      "' has rank ", v.type.rank(), "; shared tiles have rank 1 or 2"));
    int elem = dtype_size(v.type.dtype);
    int64_t cols = v.type.shape.back();
    int64_t row_bytes = round_up(cols * elem, 16);
    // 16 bytes of padding shift consecutive rows by 4 banks: ldmatrix and column reads of 8
    // rows then hit 32 distinct banks.
    if (v.type.rank() == 2 && v.type.shape[0] > 1) row_bytes += 16;
    // The B operand of a 4-bit dot stored [N][K] is read 16 bytes per lane, lane (g, t) at row
    // g, bytes 16t..16t+15 (tj::dot_q4), 8 lanes per shared-memory wavefront: rows g and g + 1
    // then fall on distinct banks only when they are 64 bytes apart modulo 128 (16 bytes gave
    // 2-way conflicts: on the H100 as many conflicts as tensor-core instructions at M = 64).
    if (q4_b.count(&v) && v.type.rank() == 2 && v.type.shape[0] > 1)
      row_bytes = round_up(cols * elem, 128) + 64;
    // wgmma's swizzled tiles: 128-byte rows in blocks of 64 columns (tj::swizzle128), no
    // padding (the swizzle spreads 8 rows over the banks); the row stride is the row's length.
    if (v.smem_swizzle) row_bytes = cols * elem;
    v.smem_row_stride = v.type.rank() == 2 ? row_bytes / elem : cols;
    tiles.push_back(&v);
  }
  // Tiles whose lifetimes do not overlap share storage. First fit in declaration order: each
  // tile takes the lowest 128-byte aligned offset that no tile live at the same time occupies
  // (a kernel whose tiles all live at once keeps the plain sequential plan). insert-barriers
  // orders the accesses of tiles that share bytes like those of one tile.
  std::vector<ir::Var*> placed;
  int64_t offset = base;
  for (ir::Var* v : tiles) {
    const int64_t bytes = shared_tile_bytes(*v) * v->stages;
    // A swizzled tile's pattern repeats every 1024 bytes from its start (8 rows of 128).
    const int64_t align = v->smem_swizzle ? 1024 : 128;
    int64_t at = round_up(base, align);
    for (bool moved = true; moved;) {
      moved = false;
      for (ir::Var* p : placed) {
        if (live.may_share(v, p)) continue;
        const int64_t p_end = p->smem_offset + shared_tile_bytes(*p) * p->stages;
        if (at < p_end && p->smem_offset < at + bytes) {
          at = round_up(p_end, align);
          moved = true;
        }
      }
    }
    v->smem_offset = at;
    placed.push_back(v);
    offset = std::max(offset, round_up(at + bytes, 128));
  }
  k.smem_bytes = std::max(offset, round_up(exchange, 128));
  if (k.smem_bytes > k.smem_limit) {
    std::vector<std::string> parts;
    for (auto& vp : k.vars)
      if (vp->type.space == Space::Shared)
        parts.push_back(str(vp->name, " ", shared_tile_bytes(*vp) * vp->stages));
    if (exchange > 0) parts.push_back(str("cluster_sum's exchange ", exchange));
    throw ConstraintError(str("kernel '", k.name, "' needs ", k.smem_bytes,
                              " bytes of shared memory (", tilejit::join(parts, ", "),
                              "), over the ", k.smem_limit, " bytes a block may use"));
  }
}

} // namespace tilejit
