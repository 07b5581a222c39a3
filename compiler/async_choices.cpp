#include "compiler/async_choices.h"

#include "compiler/assign_layouts.h"
#include "compiler/target.h"

#include <algorithm>

namespace tilejit {

using namespace ir;

Stmt* in_flight_dot(Block& body, const std::vector<Var*>& rings, int stages) {
  if (stages < 3) return nullptr;
  Stmt* found = nullptr;
  for (StmtPtr& sp : body) {
    Stmt& s = *sp;
    if (s.kind != StmtKind::Assign || !s.value || s.value->kind != ExprKind::Dot) continue;
    const Expr& d = *s.value;
    // (A 4-bit dot: tj::dot_q4_wgmma has the IN_FLIGHT form; 16-bit dots end when they return.)
    const bool in_place = d.wgmma == 1 && q4_operand(*d.a).unpack && d.c &&
                          d.c->kind == ExprKind::VarRef && d.c->var == s.var &&
                          d.layout == s.var->layout && d.b->kind == ExprKind::Trans &&
                          d.b->a->kind == ExprKind::VarRef &&
                          std::find(rings.begin(), rings.end(), d.b->a->var) != rings.end();
    if (!in_place) continue;
    if (found) return nullptr; // one accumulator's group per loop
    found = &s;
  }
  if (!found) return nullptr;
  // acc: read once (the dot's own acc operand) and written once (its assignment).
  int uses = 0;
  for_each_stmt(body, [&](Stmt& s) {
    if ((s.kind == StmtKind::Decl || s.kind == StmtKind::Assign) && s.var == found->var &&
        &s != found)
      uses += 2;
    for_each_expr_root(s, [&](ExprPtr& root) {
      for_each_node(*root, [&](Expr& n) {
        if (n.var == found->var) ++uses;
      });
    });
  });
  return uses == 1 ? found : nullptr;
}

bool tma_copy(const Kernel& k, const Stmt& s) {
  return s.pipeline_role == Stmt::PipelineRole::Producer && tma_copy_fits(k, s);
}

bool tma_copy_fits(const Kernel& k, const Stmt& s) {
  if (!k.target || !k.target->warpgroup_mma() || !k.index32) return false;
  if (s.kind != StmtKind::Decl && s.kind != StmtKind::Assign) return false;
  if (!s.value || s.value->kind != ExprKind::Copy) return false;
  const Expr& c = *s.value;
  const Var* v = s.var;
  if (c.b || c.c || !c.access) return false;
  // A run of one row of 32-bit values (a rank-1 tile, attention's lse[b, h, i0 : i0 + BM]):
  // one box one element deep outside the row, no swizzle, whole 128-byte pieces (the ring's
  // slots stay aligned). 32-bit only for now: that is what ran on the GPU (attention's
  // statistics, bench/results/2026-11-30-lse-shared-h200.md); 16-bit rows (dequant_gemm's
  // scales) keep their cp.async copies until checked there.
  const bool row = v->type.rank() == 1;
  if (row) {
    const int64_t cols = v->type.shape[0], bytes = cols * dtype_size(v->type.dtype);
    if (v->smem_swizzle != 0 || dtype_size(v->type.dtype) != 4 || cols < 1 || cols > 256 ||
        bytes % 128 != 0)
      return false;
  } else {
    if (v->smem_swizzle != 128 || v->type.rank() != 2 || dtype_size(v->type.dtype) != 2)
      return false;
    const int64_t rows = v->type.shape[0], cols = v->type.shape[1];
    if (rows < 1 || rows > 256 || cols % 64 != 0) return false;
  }
  // A range of rows and columns, after point subscripts of the outer dimensions (attention's
  // k[b, h, j : j + BN, 0 : D]): the tensor map has the tensor's rank (at most 5), its box one
  // element deep in those dimensions.
  const Access& a = *c.access;
  const size_t r = a.indices.size();
  if (a.param < 0 || r < 2 || r > 5) return false;
  const Param& p = k.params[a.param];
  if (!p.tma || p.rank() != static_cast<int>(r) || p.dtype != v->type.dtype) return false;
  const size_t ranges = row ? 1 : 2;
  for (size_t i = 0; i < r; ++i) {
    const AccessIndex& ix = a.indices[i];
    const auto want = i + ranges < r ? AccessIndex::Kind::Point : AccessIndex::Kind::Range;
    if (ix.kind != want || ix.zip >= 0) return false;
  }
  if (row) return a.indices[r - 1].extent == v->type.shape[0];
  return a.indices[r - 2].extent == v->type.shape[0] && a.indices[r - 1].extent == v->type.shape[1];
}

} // namespace tilejit
