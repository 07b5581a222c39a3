// Whole-tile operations: tensor-core dots, reductions, scans, layout conversions, and staging
// register tiles in shared memory. Each is one prelude call after inline per-thread work.
#include "compiler/cuda/cuda_emitter.h"

#include "compiler/assign_layouts.h"
#include "compiler/ir_printer.h"
#include "compiler/plan_shared_memory.h"
#include "support/text.h"

namespace tilejit::cuda {

using ir::ExprKind;
using ir::Space;

namespace {

const char* op_type(ir::ReduceOp op) {
  switch (op) {
  case ir::ReduceOp::Sum:
    return "tj::OpSum";
  case ir::ReduceOp::Max:
    return "tj::OpMax";
  case ir::ReduceOp::Min:
    return "tj::OpMin";
  case ir::ReduceOp::Prod:
    return "tj::OpProd";
  }
  return "?";
}

struct SharedOperand {
  std::string ptr;
  int64_t ld = 0;
  bool transposed = false;
};

} // namespace

static SharedOperand shared_operand(Emitter& em, const ir::Expr& x) {
  if (x.kind == ExprKind::Trans) {
    SharedOperand o = shared_operand(em, *x.a);
    o.transposed = !o.transposed;
    return o;
  }
  if (x.kind == ExprKind::VarRef) return {em.shared_ptr(x.var), x.var->smem_row_stride, false};
  if (x.kind == ExprKind::SharedSlice) {
    const ir::Var* v = x.a->var;
    TJ_ICHECK(!v->smem_swizzle, "a window of swizzled tile '", v->name, "'");
    return {str("(", em.shared_ptr(v), " + (", em.scalar(*x.b), ") * ", v->smem_row_stride, ")"),
            v->smem_row_stride, false};
  }
  if (x.kind == ExprKind::Convert && x.type.space == Space::Shared) {
    auto it = em.materialized_.find(&x);
    TJ_ICHECK(it != em.materialized_.end(), "staged operand not emitted");
    return {it->second.name, it->second.row_stride, false};
  }
  TJ_ICHECK(false, "not a shared operand: ", ir::print_expr(x));
  return {};
}

bool Emitter::is_q4_dot(const ir::Expr& dot) {
  if (dot.kind != ExprKind::Dot) return false;
  const ir::Expr* u = q4_operand(*dot.a).unpack;
  return u && u->layout && u->layout->kind == ir::LayoutKind::MmaAcc;
}

void Emitter::emit_dot(const ir::Expr& e, const std::string& dst, bool accumulate_in_place,
                       const ir::Var* issue_into) {
  const bool issue = issue_into != nullptr;
  const ir::Layout* lc = e.layout;
  std::string LC = layout_name(lc);
  line(str("// ", ir::print_expr(e)));
  if (!accumulate_in_place) {
    if (e.c)
      line(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", LC, "::N; ++tj_e) ", dst,
               "[tj_e] = ", elem(*e.c, lc, "tj_e"), ";"));
    else
      line(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", LC, "::N; ++tj_e) ", dst, "[tj_e] = 0.0f;"));
  }
  int64_t K = e.a->type.shape[1];
  std::string T = storage_type(e.b->type.dtype);
  SharedOperand b = shared_operand(*this, *e.b);
  if (is_q4_dot(e)) {
    // 4-bit A unpacked from shared words into registers by each warp, minus its zero point,
    // times its scale.
    const Q4Operand q4 = q4_operand(*e.a);
    const ir::Expr& u = *q4.unpack;
    std::string scale = "nullptr";
    if (q4.scale) scale = materialize(*q4.scale, k_.layouts.slice(u.layout, 1));
    SharedOperand q = shared_operand(*this, *u.a);
    std::string zero = "nullptr";
    if (u.b && u.b->type.is_scalar()) {
      zero = fresh("tj_zero");
      line(str("const int ", zero, "[1] = {", scalar(*u.b), "};"));
    } else if (u.b) {
      zero = materialize(*u.b->a, k_.layouts.slice(u.layout, 1));
    }
    const char* zero_kind = !u.b ? "0" : u.b->type.is_scalar() ? "1" : "2";
    if (e.wgmma > 0) {
      // On the warpgroup tensor cores (select-wgmma): B read through descriptors from its
      // swizzled tile ([N][K], K-major), the dot done when the call returns, or (wgmma = 2,
      // expand-pipelines) left running into dst until the loop's wgmma_wait.
      const ir::Var* bv = e.b->a->var;
      TJ_ICHECK(b.transposed && bv->smem_swizzle, "wgmma dot without a swizzled [N][K] tile");
      line(str("tj::dot_q4_wgmma<", LC, ", ", K, ", ", T, ", ", zero_kind, ", ", swizzled_rows(*bv),
               q4.scale ? ", true" : ", false", e.wgmma == 2 ? ", true" : ", false", ">(", dst,
               ", ", q.ptr, ", ", q.ld, ", ", zero, ", ", b.ptr, q4.scale ? ", " + scale : "",
               ");"));
      return;
    }
    line(str("tj::dot_q4<", LC, ", ", K, ", ", T, ", ", b.transposed ? "true" : "false", ", ",
             zero_kind, ", ", u.int_value ? "true" : "false", ", ", q4.scale ? "true" : "false",
             ">(", dst, ", ", q.ptr, ", ", q.ld, ", ", zero, ", ", b.ptr, ", ", b.ld,
             q4.scale ? ", " + scale : "", ");"));
    return;
  }
  // A staged operand (a register tile converted to shared), possibly read transposed.
  auto staged = [](const ir::Expr* x) {
    if (x->kind == ExprKind::Trans) x = x->a.get();
    return x->kind == ExprKind::Convert && x->type.space == Space::Shared;
  };
  if (e.wgmma > 0) {
    // A 16-bit dot on the warpgroup tensor cores (select-wgmma): B read through descriptors
    // from its swizzled tile, K-major (trans(b), b [N][K]) or MN-major (b [K][N] as it lies);
    // A loaded by ldmatrix from shared memory, or rounded from an f32 register tile.
    TJ_ICHECK(e.wgmma == 1, "a 16-bit dot left running (wgmma = 2) is not emitted");
    const ir::Var* bv = (e.b->kind == ExprKind::Trans ? e.b->a : e.b)->var;
    TJ_ICHECK(bv && bv->smem_swizzle, "wgmma dot without a swizzled B tile");
    const std::string tail = str(b.transposed ? "false" : "true", ", ", swizzled_rows(*bv), ">(");
    // issue=1: A's fragments in registers of the enclosing scope (they must stay as they are
    // until the wgmmas are done), the call returning with them running.
    // A a swizzled tile (select-wgmma): the tensor cores read it through descriptors too, so
    // no A registers, none to hold while an issued dot runs.
    const bool a_transposed = e.a->kind == ExprKind::Trans;
    const ir::Expr& a_tile = a_transposed ? *e.a->a : *e.a;
    const bool a_swizzled = a_tile.kind == ExprKind::VarRef && a_tile.var->smem_swizzle;
    std::string a_regs;
    if (issue) {
      if (!a_swizzled) {
        a_regs = fresh("tj_wa");
        line(str("unsigned ", a_regs, "[", K / 16, "][4];"));
      }
      InFlightDot d{issue_into, dst, a_regs, {}};
      ir::for_each_node(const_cast<ir::Expr&>(e), [&](ir::Expr& n) {
        if (n.kind == ExprKind::VarRef && n.var->type.space == Space::Shared)
          d.shared_reads.push_back(n.var);
      });
      wgmma_in_flight_.push_back(std::move(d));
    }
    if (a_swizzled) {
      // A stored [M][K] (K-major) or [K][M] (trans(a): MN-major), B [N][K] (trans(b)) or
      // [K][N] as it lies.
      const ir::Var* av = a_tile.var;
      line(str(issue ? "tj::dot_wgmma_ss_issue<" : "tj::dot_wgmma_ss<", LC, ", ", K, ", ", T, ", ",
               a_transposed ? "true" : "false", ", ", swizzled_rows(*av), ", ",
               b.transposed ? "false" : "true", ", ", swizzled_rows(*bv), ">(", dst, ", ",
               shared_ptr(av), ", ", b.ptr, ");"));
      return;
    }
    const std::string issue_args = issue ? str(", ", a_regs) : std::string();
    if (is_shared_operand(*e.a) || staged(e.a.get())) {
      SharedOperand a = shared_operand(*this, *e.a);
      line(str(issue ? "tj::dot_wgmma_sa_issue<" : "tj::dot_wgmma_sa<", LC, ", ", K, ", ", T, ", ",
               a.transposed ? "true" : "false", ", ", tail, dst, issue_args, ", ", a.ptr, ", ",
               a.ld, ", ", b.ptr, ");"));
      return;
    }
    const ir::Layout* la = k_.layouts.mma_acc(e.a->type.shape[0], K, lc->wm, 1, k_.threads);
    std::string ra = materialize(*e.a, la);
    line(str(issue ? "tj::dot_wgmma_ra_issue<" : "tj::dot_wgmma_ra<", LC, ", ", layout_name(la),
             ", ", K, ", ", T, ", ", tail, dst, issue_args, ", ", ra, ", ", b.ptr, ");"));
    return;
  }
  if (!k_.target->matrix_units()) {
    // AMD: both operands from shared memory (assign-layouts staged them), on the MFMA matrix
    // cores in their accumulator layout (gfx90a), or each thread summing its own accumulator
    // elements' products on the FMA units (gfx1030).
    SharedOperand a = shared_operand(*this, *e.a);
    const bool mfma = lc->kind == ir::LayoutKind::MfmaAcc;
    line(str(mfma ? "tj::dot_mfma<" : "tj::dot_fma<", LC, ", ", K, ", ",
             a.transposed ? "true" : "false", ", ", b.transposed ? "true" : "false", ">(", dst,
             ", ", a.ptr, ", ", a.ld, ", ", b.ptr, ", ", b.ld, ");"));
    return;
  }
  // B's dtype is the operands' (a register A's cast to 16 bits is dropped: dot_rs rounds it).
  if (e.b->type.dtype == DType::F32) {
    // TF32 tensor cores; exact: each operand split into two TF32 parts, three MMAs (3xTF32).
    TJ_ICHECK(is_shared_operand(*e.a) || staged(e.a.get()), "f32 dot with A in registers");
    SharedOperand a = shared_operand(*this, *e.a);
    line(str("tj::dot_ss_tf32<", LC, ", ", K, ", ", a.transposed ? "true" : "false", ", ",
             b.transposed ? "true" : "false", ", ", e.int_value ? "true" : "false", ">(", dst, ", ",
             a.ptr, ", ", a.ld, ", ", b.ptr, ", ", b.ld, ");"));
    return;
  }
  if (is_shared_operand(*e.a) || staged(e.a.get())) {
    SharedOperand a = shared_operand(*this, *e.a);
    line(str("tj::dot_ss<", LC, ", ", K, ", ", T, ", ", a.transposed ? "true" : "false", ", ",
             b.transposed ? "true" : "false", ">(", dst, ", ", a.ptr, ", ", a.ld, ", ", b.ptr, ", ",
             b.ld, ");"));
    return;
  }
  // A in registers, as an f32 MmaAcc tile (warps split M only).
  const ir::Layout* la = k_.layouts.mma_acc(e.a->type.shape[0], K, lc->wm, 1, k_.threads);
  std::string ra = materialize(*e.a, la);
  line(str("tj::dot_rs<", LC, ", ", layout_name(la), ", ", K, ", ", T, ", ",
           b.transposed ? "true" : "false", ">(", dst, ", ", ra, ", ", b.ptr, ", ", b.ld, ");"));
}

void Emitter::emit_reduce(const ir::Expr& e, const std::string& dst) {
  const ir::Layout* lin = e.a->layout;
  TJ_ICHECK(lin, "reduce operand without a layout");
  std::string L = layout_name(lin);
  std::string S = layout_name(k_.layouts.slice(lin, e.axis));
  std::string RT = compute_type(e.type.dtype);
  std::string op = op_type(e.reduce_op);
  line(str("// ", ir::print_expr(e)));
  line(str(RT, " ", dst, "[", S, "::N];"));
  line(str("TJ_UNROLL for (int tj_s = 0; tj_s < ", S, "::N; ++tj_s) ", dst, "[tj_s] = ", op,
           "::identity<", RT, ">();"));
  open(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e)"));
  line(str("const int tj_s = ", L, "::slice_index<", e.axis, ">(tj_e);"));
  line(str("if (", L, "::valid(tj_e)) ", dst, "[tj_s] = ", op, "::apply(", dst, "[tj_s], ",
           elem(*e.a, lin, "tj_e"), ");"));
  close();
  if (lin->warps_along(e.axis) > 1)
    line(str("tj::reduce_finish<", L, ", ", e.axis, ", ", op, ", false>(", dst, ", ",
             next_scratch(RT, e), ");"));
  else
    line(str("tj::reduce_finish<", L, ", ", e.axis, ", ", op, ", false>(", dst, ", static_cast<",
             RT, "*>(nullptr)); // within warps: shuffles only"));
}

std::string Emitter::emit_full_reduce(const ir::Expr& e) {
  const ir::Layout* lin = e.a->layout;
  TJ_ICHECK(lin, "reduce operand without a layout");
  std::string L = layout_name(lin);
  std::string RT = compute_type(e.type.dtype);
  std::string op = op_type(e.reduce_op);
  std::string name = fresh("t");
  line(str("// ", ir::print_expr(e)));
  line(str(RT, " ", name, " = ", op, "::identity<", RT, ">();"));
  line(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e) if (", L,
           "::valid(tj_e) && tj::Owner<", L, ">::is(tj_e)) ", name, " = ", op, "::apply(", name,
           ", ", elem(*e.a, lin, "tj_e"), ");"));
  if (k_.threads > 32)
    line(str(name, " = tj::block_reduce<", op, ", ", k_.threads, ", false>(", name, ", ",
             next_scratch(RT, e), ");"));
  else
    line(str(name, " = tj::block_reduce<", op, ", ", k_.threads, ", false>(", name,
             ", static_cast<", RT, "*>(nullptr));"));
  return name;
}

void Emitter::emit_scan(const ir::Expr& e, const std::string& dst) {
  const ir::Layout* l = e.a->layout;
  TJ_ICHECK(l, "scan operand without a layout");
  std::string L = layout_name(l);
  std::string RT = compute_type(e.type.dtype);
  line(str("// ", ir::print_expr(e)));
  line(str(RT, " ", dst, "[", L, "::N];"));
  line(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e) ", dst,
           "[tj_e] = ", elem(*e.a, l, "tj_e"), ";"));
  int axis = l->rank() == 1 ? 1 : e.axis; // rank-1 tiles are one row
  line(str("tj::scan<", L, ", ", axis, ", ", op_type(e.reduce_op), ", false>(", dst, ", ",
           next_scratch(RT, e), ");"));
}

void Emitter::emit_solve_tril(const ir::Expr& e, const std::string& dst) {
  const ir::Layout* l = e.a->layout;
  TJ_ICHECK(l, "solve_tril operand without a layout");
  const std::string L = layout_name(l);
  line(str("// ", ir::print_expr(e)));
  line(str("float ", dst, "[", L, "::N];"));
  line(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e) ", dst,
           "[tj_e] = ", elem(*e.a, l, "tj_e"), ";"));
  TJ_ICHECK(e.scratch_region == ir::kWholeScratch, "place-scratch gave ", ir::print_expr(e),
            " no whole scratch area");
  line(str("tj::solve_tril<", L, ">(", dst, ", reinterpret_cast<float*>(tj_scratch));"));
  scratch_free(); // it ends with a barrier
}

void Emitter::emit_cluster_sum(const ir::Expr& e, const std::string& dst) {
  const std::string T = compute_type(e.type.dtype); // f32 or i32 (infer_types)
  const int programs = k_.cluster_size();
  if (programs == 1) { // a cluster of one program: its own value
    line(str("// ", ir::print_expr(e), ": no clusters, the program's own value"));
    if (e.type.is_scalar()) {
      line(str(T, " ", dst, " = ", scalar(*e.a), ";"));
      return;
    }
    const std::string L = layout_name(e.a->layout);
    line(str(T, " ", dst, "[", L, "::N];"));
    line(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e) ", dst,
             "[tj_e] = ", elem(*e.a, e.a->layout, "tj_e"), ";"));
    return;
  }
  line(str("// ", ir::print_expr(e), ": the ", programs,
           " programs of the cluster add their values, in rank order"));
  if (e.type.is_scalar()) {
    line(str(T, " ", dst, ";"));
    line(str("tj::cluster_sum<", programs, ">(&", dst, ", ", scalar(*e.a), ", ", next_scratch(T, e),
             ");"));
    scratch_free(); // it ends with a barrier of the cluster
    return;
  }
  const ir::Layout* l = e.a->layout;
  TJ_ICHECK(l, "cluster_sum operand without a layout");
  const std::string L = layout_name(l);
  line(str(T, " ", dst, "[", L, "::N];"));
  line(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e) ", dst,
           "[tj_e] = ", elem(*e.a, l, "tj_e"), ";"));
  if (e.scratch_region == ir::kExchangeRegion) {
    // Over the tiles' bytes (no tile is live here: plan-shared-memory): every copy into them
    // has landed and every thread is done reading them before the first value is written.
    line("tj::cp_async_wait<0>();");
    sync_threads("the exchange reuses the tiles' and the scratch area's bytes");
    line(str("tj::cluster_sum_tile<", programs, ", ", L, "::N>(", dst, ", reinterpret_cast<", T,
             "*>(tj_smem));"));
  } else {
    line(str("tj::cluster_sum_tile<", programs, ", ", L, "::N>(", dst, ", ", next_scratch(T, e),
             ");"));
  }
  scratch_free(); // it ends with a barrier of the cluster
}

void Emitter::emit_convert(const ir::Expr& e, const std::string& dst) {
  const ir::Layout* from = e.a->layout;
  TJ_ICHECK(from && e.layout, "conversion without layouts");
  std::string src = materialize(*e.a, from);
  std::string T = storage_type(e.type.dtype);
  line(str("// ", from->str(), " -> ", e.layout->str()));
  line(str(T, " ", dst, "[", layout_name(e.layout), "::N];"));
  line(str("tj::convert<", layout_name(from), ", ", layout_name(e.layout), ", false>(", dst, ", ",
           src, ", ", next_scratch(T, e), ");"));
}

void Emitter::emit_stage(const ir::Expr& e) {
  const ir::Var* v = e.var;
  TJ_ICHECK(v && v->smem_offset >= 0, "staged tile without shared memory");
  const ir::Layout* l = e.a->layout;
  TJ_ICHECK(l, "staged value without a layout");
  std::string L = layout_name(l);
  std::string T = storage_type(v->type.dtype);
  std::string ptr = fresh("tj_staged");
  const bool broadcast = v->name.rfind("broadcast_", 0) == 0; // assign_layouts' names for it
  const bool bulk = v->name.rfind("bulk_", 0) == 0;
  line(str("// stage ", ir::print_expr(*e.a), " in shared memory ",
           broadcast ? "to broadcast it along its unit axes"
           : bulk    ? "for the bulk copy engine"
                     : "for the tensor cores"));
  line(str(T, "* const ", ptr, " = ", shared_ptr(v), ";"));
  std::string index = smem_index(v, str(L, "::r(tj_e)"), str(L, "::c(tj_e)"));
  // A 16-bit tile already in registers as it is, in whole 16-byte runs per thread: 16-byte
  // stores (rows are padded to 16 bytes and tiles 128-byte aligned), not one per element.
  const DType dt = v->type.dtype;
  std::string raw = (dt == DType::F16 || dt == DType::BF16) ? raw_array(*e.a, dt, l) : "";
  const bool exact = l->kind == ir::LayoutKind::Blocked && l->rows % (l->threads / l->tc) == 0 &&
                     l->cols % (int64_t(l->tc) * l->vec) == 0;
  if (!raw.empty() && exact && l->vec % 8 == 0) {
    line(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; tj_e += 8) tj::copy16(&", ptr, "[",
             index, "], &", raw, "[tj_e]);"));
  } else {
    line(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e) if (", L, "::valid(tj_e)) ",
             ptr, "[", index, "] = tj::cvt<", T, ">(", elem(*e.a, l, "tj_e"), ");"));
  }
  // Shared writes are the generic proxy's; wgmma and the bulk copy engine read the async one.
  if (async_proxy_reads_) line("tj::fence_proxy_async();");
  sync_threads();
  scratch_free();
  Value val{Value::Kind::Shared, ptr, nullptr, v->type.dtype, v->smem_row_stride, v->type.rank()};
  materialized_[&e] = val;
}

} // namespace tilejit::cuda
