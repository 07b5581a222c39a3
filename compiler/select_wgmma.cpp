#include "compiler/select_wgmma.h"

#include "compiler/assign_layouts.h"
#include "compiler/target.h"

#include <map>
#include <set>

namespace tilejit {

using ir::ExprKind;
using ir::Space;

namespace {

bool wgmma_n(int64_t n) {
  return n == 8 || n == 16 || n == 32 || n == 64 || n == 96 || n == 128 || n == 192 || n == 256;
}

/// The shared tile a dot reads as B: trans(b) (K-major) or b itself (MN-major), when b is a
/// whole rank-2 shared tile.
ir::Var* b_tile(const ir::Expr& b) {
  const ir::Expr& x = b.kind == ExprKind::Trans ? *b.a : b;
  if (x.kind != ExprKind::VarRef) return nullptr;
  ir::Var* v = x.var;
  return v->type.space == Space::Shared && v->type.rank() == 2 ? v : nullptr;
}

bool sixteen_bit(DType t) {
  return t == DType::F16 || t == DType::BF16;
}

/// Whether a dot fits wgmma with its accumulator tiled by WM x WN warps: each warp owns 16 rows
/// (M = 16 * WM, WM a multiple of 4: whole warpgroups along M) and, where WN > 1, the
/// warpgroups split N, each computing N / WN columns (its B operand then read from its own
/// block of columns; A from shared memory, which every warpgroup reads whole: attention
/// backward's dq, 64 query rows on two warpgroups). Its B tile's other uses are checked by the
/// caller.
bool fits_wgmma_split(const ir::Expr& dot, int64_t wm, int64_t wn) {
  if (wm % 4 != 0 || wn < 1 || dot.type.shape[0] != 16 * wm || dot.type.shape[1] % wn != 0)
    return false;
  const int64_t n = dot.type.shape[1], n_per_group = n / wn;
  if (!wgmma_n(n_per_group)) return false;
  const ir::Var* b = b_tile(*dot.b);
  if (!b) return false;
  if (const ir::Expr* u = q4_operand(*dot.a).unpack) {
    const ir::Expr& a = *u;
    if (wn != 1 || a.int_value != 1 || !a.layout || a.layout->kind != ir::LayoutKind::MmaAcc ||
        !is_shared_operand(*a.a) || !sixteen_bit(a.type.dtype))
      return false;
    const int64_t k = a.type.shape[1];
    return k % 64 == 0 && dot.b->kind == ExprKind::Trans && b->type.dtype == a.type.dtype &&
           b->type.shape == std::vector<int64_t>{n, k};
  }
  // A 16-bit dot: A in shared memory (not the swizzled B itself: ldmatrix reads it padded) or
  // in registers (an f32 tile rounded to B's type; its warps own the accumulator's rows, so
  // only where the warpgroups split M alone).
  if (!sixteen_bit(b->type.dtype)) return false;
  const int64_t k = dot.a->type.shape[1];
  if (is_shared_operand(*dot.a)) {
    const ir::Var* a = b_tile(*dot.a);
    if (!a) return false; // a window of a shared tile: dot_ss's ldmatrix path
    if (a == b || a->type.dtype != b->type.dtype) return false;
  } else if (wn != 1) {
    return false;
  }
  if (dot.b->kind == ExprKind::Trans) // K-major: b [N, K]
    return k % 64 == 0 && b->type.shape == std::vector<int64_t>{n, k};
  // MN-major: b [K, N], each warpgroup's columns whole 64-column blocks of the swizzle.
  return n_per_group % 64 == 0 && k % 16 == 0 && b->type.shape == std::vector<int64_t>{k, n};
}

/// Whether the dot itself fits wgmma with the layout assign-layouts gave it.
bool fits_wgmma(const ir::Expr& dot) {
  const ir::Layout* lc = dot.layout;
  if (!lc || lc->kind != ir::LayoutKind::MmaAcc) return false;
  return fits_wgmma_split(dot, lc->wm, lc->wn);
}

/// The shared tile a wgmma dot could read its A from through a descriptor (tj::dot_wgmma_ss),
/// or nullptr: a whole 16-bit tile read as it lies ([M, K], K-major: K a
/// multiple of 64) or transposed (trans(a), a [K, M]: MN-major, each warpgroup's 64 rows a
/// 64-column block of it), and no `shared_a = 0` on the dot.
ir::Var* descriptor_a_tile(const ir::Expr& dot) {
  if (dot.registers_a) return nullptr;
  const bool mn = dot.a->kind == ExprKind::Trans;
  const ir::Expr& x = mn ? *dot.a->a : *dot.a;
  if (x.kind != ExprKind::VarRef || x.var->type.space != Space::Shared) return nullptr;
  ir::Var* a = x.var;
  if (a->type.rank() != 2 || !sixteen_bit(a->type.dtype)) return nullptr;
  const int64_t m = dot.type.shape[0];
  if (mn) return a->type.shape[1] == m && m % 64 == 0 && a->type.shape[0] % 16 == 0 ? a : nullptr;
  return a->type.shape[0] == m && a->type.shape[1] % 64 == 0 ? a : nullptr;
}

/// Each shared tile's reads, the tiles something other than a copy writes, and those of them
/// written otherwise than whole from registers (`shared x = cast<T>(frag)`, which the emitter
/// stores through the tile's swizzle like any layout).
struct SharedUses {
  std::map<ir::Var*, int> reads;
  std::set<ir::Var*> other_writes, partial_writes;
};

SharedUses shared_uses(ir::Kernel& k, std::vector<ir::Expr*>* dots) {
  SharedUses u;
  ir::for_each_stmt(k.body, [&](ir::Stmt& s) {
    if ((s.kind == ir::StmtKind::Decl || s.kind == ir::StmtKind::Assign) &&
        s.var->type.space == Space::Shared && s.value->kind != ExprKind::Copy)
      u.other_writes.insert(s.var);
    ir::for_each_expr_root(s, [&](ir::ExprPtr& root) {
      ir::for_each_node(*root, [&](ir::Expr& e) {
        if (e.kind == ExprKind::VarRef && e.var->type.space == Space::Shared)
          ++u.reads[e.var];
        else if (e.var && e.var->type.space == Space::Shared)
          u.other_writes.insert(e.var), u.partial_writes.insert(e.var);
        if (dots && e.kind == ExprKind::Dot && e.wgmma >= 0) dots->push_back(&e);
      });
    });
  });
  return u;
}

} // namespace

int wgmma_rows_warps(ir::Kernel& k, const ir::Expr& dot, int warps) {
  if (!k.target || !k.target->warpgroup_mma() || dot.kind != ExprKind::Dot || dot.wgmma < 0 ||
      dot.type.rank() != 2 || dot.type.shape[0] % 64 != 0)
    return 0;
  const int64_t wm = dot.type.shape[0] / 16;
  if (wm >= warps || warps % wm != 0 || !fits_wgmma_split(dot, wm, warps / wm)) return 0;
  // Its B must be written only by copies and read only by dots, as their B or as an A they could
  // read through a descriptor (select-wgmma's rule, before the other dots' layouts are known:
  // where select-wgmma then keeps mma.sync the dot runs there in this layout, right).
  std::vector<ir::Expr*> dots;
  SharedUses u = shared_uses(k, &dots);
  // Alone in its expression: a dot added to another (gated_delta's du = dot(...) + dot(...))
  // would take a different layout from it and the sum would convert one through shared memory.
  bool alone = true;
  ir::for_each_stmt(k.body, [&](ir::Stmt& s) {
    ir::for_each_expr_root(s, [&](ir::ExprPtr& root) {
      int count = 0;
      bool here = false;
      ir::for_each_node(*root, [&](ir::Expr& e) {
        count += e.kind == ExprKind::Dot;
        here |= &e == &dot;
      });
      if (here && count > 1) alone = false;
    });
  });
  if (!alone) return 0;
  ir::Var* b = b_tile(*dot.b);
  int dot_reads = 0;
  for (const ir::Expr* d : dots) {
    if (b_tile(*d->b) == b) ++dot_reads;
    if (descriptor_a_tile(*d) == b) ++dot_reads;
  }
  return !u.other_writes.count(b) && u.reads[b] == dot_reads ? static_cast<int>(wm) : 0;
}

void select_wgmma(ir::Kernel& k) {
  if (!k.target || !k.target->warpgroup_mma()) return;
  std::vector<ir::Expr*> dots;
  SharedUses u = shared_uses(k, &dots);
  std::vector<ir::Expr*> selected;
  for (ir::Expr* e : dots)
    if (fits_wgmma(*e)) selected.push_back(e);
  // A B tile is swizzled, so every read of it must be by a selected dot: as its B, or as an A
  // read through a descriptor (the same swizzled bytes; attention backward's keys are the
  // score product's A and dq's B). Dropping a dot can leave another's B with a read it no
  // longer accounts for: repeat until nothing changes.
  for (bool changed = true; changed;) {
    changed = false;
    std::map<ir::Var*, int> dot_reads;
    for (ir::Expr* dot : selected) {
      ++dot_reads[b_tile(*dot->b)];
      if (ir::Var* a = descriptor_a_tile(*dot)) ++dot_reads[a];
    }
    std::erase_if(selected, [&](ir::Expr* dot) {
      ir::Var* b = b_tile(*dot->b);
      const bool keep = !u.other_writes.count(b) && u.reads[b] == dot_reads[b];
      changed |= !keep;
      return !keep;
    });
  }
  for (ir::Expr* dot : selected) {
    dot->wgmma = 1;
    b_tile(*dot->b)->smem_swizzle = 128;
  }
  // A tiles the tensor cores can read themselves (wgmma_ss): a whole 16-bit shared tile read as
  // A as it lies ([M, K], K-major, K a multiple of 64) or transposed (MN-major) by a selected
  // dot, read by nothing but selected dots (as such an A, or as B: the swizzled bytes serve
  // both), written by copies or whole from registers (attention backward's ds^T, staged for
  // dq's product). Swizzled like a B tile, it takes no A registers: ldmatrix's 4 per k16 step
  // (32 at K = 128) stay free, which a dot left running (issue = 1) holds until done.
  std::map<ir::Var*, int> wgmma_reads;
  std::set<ir::Var*> a_tiles, not_as_a;
  for (ir::Expr* dot : selected) {
    ++wgmma_reads[b_tile(*dot->b)];
    ir::Var* a = is_shared_operand(*dot->a) ? b_tile(*dot->a) : nullptr;
    if (!a) continue;
    ++wgmma_reads[a];
    // shared_a = 0 on any dot reading it as A keeps the tile in registers for all of them.
    (descriptor_a_tile(*dot) == a ? a_tiles : not_as_a).insert(a);
  }
  for (ir::Var* a : a_tiles)
    if (!not_as_a.count(a) && !u.partial_writes.count(a) && u.reads[a] == wgmma_reads[a])
      a->smem_swizzle = 128;
}

} // namespace tilejit
