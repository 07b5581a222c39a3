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

/// The shared tile a dot reads as trans(b), when b is a whole shared tile.
ir::Var* transposed_tile(const ir::Expr& b) {
  if (b.kind != ExprKind::Trans || b.a->kind != ExprKind::VarRef) return nullptr;
  ir::Var* v = b.a->var;
  return v->type.space == Space::Shared && v->type.rank() == 2 ? v : nullptr;
}

/// Whether the dot itself fits wgmma (its B tile's other uses are checked by the caller).
bool fits_wgmma(const ir::Expr& dot) {
  const ir::Expr* u = q4_operand(*dot.a).unpack;
  if (!u) return false;
  const ir::Expr& a = *u;
  if (a.int_value != 1 || !a.layout || a.layout->kind != ir::LayoutKind::MmaAcc ||
      !is_shared_operand(*a.a))
    return false;
  if (a.type.dtype != DType::F16 && a.type.dtype != DType::BF16) return false;
  const ir::Layout* lc = dot.layout;
  if (!lc || lc->kind != ir::LayoutKind::MmaAcc || lc->wn != 1 || lc->wm % 4 != 0) return false;
  const int64_t m = dot.type.shape[0], n = dot.type.shape[1], k = a.type.shape[1];
  if (m != 16 * lc->wm || !wgmma_n(n) || k % 64 != 0) return false;
  const ir::Var* b = transposed_tile(*dot.b);
  return b && b->type.dtype == a.type.dtype && b->type.shape == std::vector<int64_t>{n, k};
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
          ++dot_reads[transposed_tile(*e.b)];
        }
      });
    });
  });
  for (ir::Expr* dot : candidates) {
    ir::Var* b = transposed_tile(*dot->b);
    if (other_writes.count(b) || reads[b] != dot_reads[b]) continue;
    dot->wgmma = 1;
    b->smem_swizzle = 128;
  }
}

} // namespace tilejit
