#include "compiler/plan_shared_memory.h"

#include "compiler/specialise.h"
#include "support/text.h"

#include <algorithm>

namespace tilejit {

using ir::ExprKind;
using ir::Space;

namespace {

int64_t round_up(int64_t a, int64_t b) {
  return (a + b - 1) / b * b;
}

/// Scratch bytes one expression needs (0 if none).
int64_t scratch_need(const ir::Expr& e, int threads) {
  int64_t elem = std::max(4, dtype_size(e.type.dtype));
  switch (e.kind) {
  case ExprKind::Reduce: {
    if (e.axis < 0) return (threads / 32) * elem;
    const ir::Layout* in = e.a->layout;
    if (!in) return 0;
    int w = in->warps_along(e.axis);
    int64_t extent = e.a->type.shape[e.axis == 0 ? 1 : 0];
    return w > 1 ? w * extent * elem : 0;
  }
  case ExprKind::Scan:
    return e.type.numel() * elem;
  case ExprKind::Convert:
    if (e.type.space == Space::Frag) return e.type.numel() * std::max(4, dtype_size(e.type.dtype));
    return 0;
  case ExprKind::AtomicAdd:
    return e.type.is_scalar() ? 16 : 0;
  default:
    return 0;
  }
}

} // namespace

int64_t shared_tile_bytes(const ir::Var& v) {
  int64_t rows = v.type.rank() >= 2 ? round_up(v.type.shape[0], 16) : 1;
  return rows * v.smem_row_stride * dtype_size(v.type.dtype);
}

void plan_shared_memory(ir::Kernel& k) {
  int64_t scratch = 0;
  ir::for_each_stmt(k.body, [&](ir::Stmt& s) {
    ir::for_each_expr_root(s, [&](ir::ExprPtr& root) {
      ir::for_each_node(
          *root, [&](ir::Expr& e) { scratch = std::max(scratch, scratch_need(e, k.threads)); });
    });
  });
  // Two regions: consecutive scratch users alternate between them, so each needs one barrier
  // (between its write and its read) instead of two (codegen tracks the alternation).
  k.scratch_bytes = 2 * round_up(scratch, 16);
  int64_t offset = round_up(k.scratch_bytes, 128);
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
    v.smem_row_stride = v.type.rank() == 2 ? row_bytes / elem : cols;
    v.smem_offset = offset;
    offset = round_up(offset + shared_tile_bytes(v) * v.stages, 128);
  }
  k.smem_bytes = offset;
  if (k.smem_bytes > k.smem_limit) {
    std::vector<std::string> parts;
    for (auto& vp : k.vars)
      if (vp->type.space == Space::Shared)
        parts.push_back(str(vp->name, " ", shared_tile_bytes(*vp) * vp->stages));
    throw ConstraintError(str("kernel '", k.name, "' needs ", k.smem_bytes,
                              " bytes of shared memory (", tilejit::join(parts, ", "),
                              "), over the ", k.smem_limit, " bytes a block may use"));
  }
}

} // namespace tilejit
