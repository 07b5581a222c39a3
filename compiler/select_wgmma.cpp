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

/// Whether the accumulator's warps own 16 rows each in whole warpgroups, N a wgmma size.
bool warpgroup_accumulator(const ir::Expr& dot) {
  const ir::Layout* lc = dot.layout;
  if (!lc || lc->kind != ir::LayoutKind::MmaAcc || lc->wn != 1 || lc->wm % 4 != 0) return false;
  return dot.type.shape[0] == 16 * lc->wm && wgmma_n(dot.type.shape[1]);
}

/// Whether the dot itself fits wgmma (its B tile's other uses are checked by the caller).
bool fits_wgmma(const ir::Expr& dot) {
  if (!warpgroup_accumulator(dot)) return false;
  const int64_t n = dot.type.shape[1];
  const ir::Var* b = b_tile(*dot.b);
  if (!b) return false;
  if (const ir::Expr* u = q4_operand(*dot.a).unpack) {
    const ir::Expr& a = *u;
    if (a.int_value != 1 || !a.layout || a.layout->kind != ir::LayoutKind::MmaAcc ||
        !is_shared_operand(*a.a) || !sixteen_bit(a.type.dtype))
      return false;
    const int64_t k = a.type.shape[1];
    return k % 64 == 0 && dot.b->kind == ExprKind::Trans && b->type.dtype == a.type.dtype &&
           b->type.shape == std::vector<int64_t>{n, k};
  }
  // A 16-bit dot: A in shared memory (not the swizzled B itself: ldmatrix reads it padded) or
  // in registers (an f32 tile rounded to B's type).
  if (!sixteen_bit(b->type.dtype)) return false;
  const int64_t k = dot.a->type.shape[1];
  if (is_shared_operand(*dot.a)) {
    const ir::Var* a = b_tile(*dot.a);
    if (!a) return false; // a window of a shared tile: dot_ss's ldmatrix path
    if (a == b || a->type.dtype != b->type.dtype) return false;
  }
  if (dot.b->kind == ExprKind::Trans) // K-major: b [N, K]
    return k % 64 == 0 && b->type.shape == std::vector<int64_t>{n, k};
  return n % 64 == 0 && k % 16 == 0 && b->type.shape == std::vector<int64_t>{k, n}; // MN-major
}

} // namespace

void select_wgmma(ir::Kernel& k) {
  if (!k.target || !k.target->warpgroup_mma()) return;
  // Each shared tile's reads: how many there are, and which are a fitting dot's B operand.
  std::map<ir::Var*, int> reads, dot_reads;
  std::set<ir::Var*> other_writes;
  std::vector<ir::Expr*> candidates;
  ir::for_each_stmt(k.body, [&](ir::Stmt& s) {
    if ((s.kind == ir::StmtKind::Decl || s.kind == ir::StmtKind::Assign) &&
        s.var->type.space == Space::Shared && s.value->kind != ExprKind::Copy)
      other_writes.insert(s.var);
    ir::for_each_expr_root(s, [&](ir::ExprPtr& root) {
      ir::for_each_node(*root, [&](ir::Expr& e) {
        if (e.kind == ExprKind::VarRef && e.var->type.space == Space::Shared)
          ++reads[e.var];
        else if (e.var && e.var->type.space == Space::Shared)
          other_writes.insert(e.var);
        if (e.kind == ExprKind::Dot && e.wgmma >= 0 && fits_wgmma(e)) {
          candidates.push_back(&e);
          ++dot_reads[b_tile(*e.b)];
        }
      });
    });
  });
  std::vector<ir::Expr*> selected;
  for (ir::Expr* dot : candidates) {
    ir::Var* b = b_tile(*dot->b);
    if (other_writes.count(b) || reads[b] != dot_reads[b]) continue;
    dot->wgmma = 1;
    b->smem_swizzle = 128;
    selected.push_back(dot);
  }
  // A tiles the tensor cores can read themselves (wgmma_ss): a whole 16-bit shared tile read as
  // A as it lies ([M, K], K-major, K a multiple of 64) by a selected dot with a K-major B, and
  // read by nothing but selected dots (as such an A, or as B: the swizzled bytes serve both),
  // written only by copies. Swizzled like a B tile, it takes no A registers: ldmatrix's 4 per
  // k16 step (32 at K = 128) stay free, which a dot left running (issue = 1) holds until done.
  std::map<ir::Var*, int> wgmma_reads;
  std::set<ir::Var*> a_tiles, not_as_a;
  for (ir::Expr* dot : selected) {
    ++wgmma_reads[b_tile(*dot->b)];
    if (dot->a->kind != ExprKind::VarRef || dot->a->var->type.space != Space::Shared) continue;
    ir::Var* a = dot->a->var;
    ++wgmma_reads[a];
    // shared_a = 0 on any dot reading it as A keeps the tile in registers for all of them.
    const bool fits = !dot->registers_a && dot->b->kind == ExprKind::Trans && a->type.rank() == 2 &&
                      sixteen_bit(a->type.dtype) && a->type.shape[1] % 64 == 0 &&
                      a->type.shape[0] == dot->type.shape[0];
    (fits ? a_tiles : not_as_a).insert(a);
  }
  for (ir::Var* a : a_tiles)
    if (!not_as_a.count(a) && !other_writes.count(a) && reads[a] == wgmma_reads[a])
      a->smem_swizzle = 128;
}

} // namespace tilejit
