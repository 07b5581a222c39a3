#include "compiler/verify_ir.h"
#include "compiler/insert_barriers.h"
#include "compiler/ir_printer.h"
#include "compiler/layout.h"
#include "compiler/pipeline.h"
#include "compiler/place_scratch.h"
#include "compiler/plan_shared_memory.h"
#include "compiler/target.h"
#include "support/text.h"

#include <optional>
#include <set>

namespace tilejit {

using namespace ir;

namespace {

bool is_compare(dsl::BinaryOp op) {
  using B = dsl::BinaryOp;
  return op == B::Lt || op == B::Le || op == B::Gt || op == B::Ge || op == B::Eq || op == B::Ne;
}

class Verifier {
public:
  Verifier(Kernel& k, const std::string& pass) : k_(k), pass_(pass), at_(pass_index(pass)) {
    for (const auto& v : k.vars) vars_.insert(v.get());
  }

  void run() {
    TJ_ICHECK(k_.target, "the kernel has a target");
    for (size_t i = 0; i < k_.vars.size(); ++i)
      check(k_.vars[i]->id == static_cast<int>(i), nullptr,
            str("variable '", k_.vars[i]->name, "' has id ", k_.vars[i]->id, " at index ", i));
    for (const auto& v : k_.vars) var(*v);
    block(k_.body, 0);
    if (after("plan-shared-memory")) shared_plan();
    if (after("insert-barriers")) {
      BarrierHazard h = find_barrier_hazard(k_);
      check(!h.stmt, h.stmt, str("no barrier before a shared-memory hazard (", h.why, ")"));
    }
  }

private:
  Kernel& k_;
  std::string pass_;
  size_t at_;
  std::set<const Var*> vars_;
  const Stmt* stmt_ = nullptr; // the statement being checked, for the message

  bool after(const char* pass) const { return at_ >= pass_index(pass); }

  void check(bool ok, const Stmt* s, const std::string& what) {
    if (ok) return;
    if (!s) s = stmt_;
    std::string where;
    if (s) {
      where = "\n  in: " + print_stmt_line(k_, *s);
      if (s->loc.known()) where += str("\n  at ", s->loc.path(), ":", s->loc.line);
    }
    throw InternalError(str("internal error: IR verifier after pass '", pass_, "' on kernel '",
                            k_.name, "': ", what, where));
  }

  void var(const Var& v) {
    if (!after("infer-types")) return;
    if (after("assign-layouts") && v.type.space == Space::Frag && !v.type.is_scalar())
      layout_fits(v.layout, v.type, str("variable '", v.name, "'"));
    if (after("plan-shared-memory")) {
      if (v.type.space == Space::Shared) {
        check(v.smem_offset >= 0, nullptr, str("shared tile '", v.name, "' has no offset"));
        check(v.smem_row_stride >= v.type.shape.back(), nullptr,
              str("shared tile '", v.name, "' has row stride ", v.smem_row_stride, " for rows of ",
                  v.type.shape.back()));
      } else {
        check(v.smem_offset < 0, nullptr,
              str(space_name(v.type.space), " variable '", v.name, "' has a shared offset"));
      }
    }
    if (after("expand-pipelines") && v.type.space == Space::Shared && v.stages > 1)
      check(v.read_slot && vars_.count(v.read_slot), nullptr,
            str("ring buffer '", v.name, "' has no read slot"));
  }

  void layout_fits(const Layout* l, const Type& t, const std::string& what) {
    check(l != nullptr, nullptr, str(what, " (", t.str_with_space(), ") has no layout"));
    // A unit axis may sit in a layout of the shape it broadcasts to (x[:, None] of a row
    // slice keeps the parent's layout: broadcasting it costs nothing).
    auto b = broadcast(t.shape, l->shape);
    check(l->rank() == t.rank() && b && *b == l->shape, nullptr,
          str(what, " has shape ", shape_str(t.shape), " but layout ", l->str()));
    check(l->threads == k_.threads, nullptr,
          str(what, " has layout ", l->str(), " for ", l->threads, " threads; the kernel has ",
              k_.threads));
    check(l->warp == k_.target->warp_size(), nullptr,
          str(what, " has layout ", l->str(), " for warps of ", l->warp, " threads; ",
              k_.target->arch(), " has ", k_.target->warp_size()));
  }

  void block(const Block& b, int pipelined_depth) {
    for (const auto& sp : b) stmt(*sp, pipelined_depth);
  }

  void stmt(const Stmt& s, int pipelined_depth) {
    stmt_ = &s;
    auto need = [&](bool ok, const char* field) {
      check(ok, &s, str("statement lacks its ", field));
    };
    switch (s.kind) {
    case StmtKind::Decl:
    case StmtKind::Assign:
      need(s.var && s.value, "variable or value");
      check(vars_.count(s.var) > 0, &s, str("'", s.var->name, "' is not the kernel's variable"));
      break;
    case StmtKind::Store:
      need(s.access && s.value, "access or value");
      if (after("assign-layouts") && s.value) layout_is_shape(*s.value, "a stored value");
      break;
    case StmtKind::Eval:
    case StmtKind::If:
      need(s.value != nullptr, "value");
      break;
    case StmtKind::For:
      need(s.var && s.lo && s.hi && s.step, "loop variable or bounds");
      check(s.step->kind == ExprKind::Const && s.step->int_value != 0, &s,
            "a loop's step is a nonzero constant");
      check(s.loop_kind == LoopKind::Serial || !after("expand-pipelines"), &s,
            "a pipelined loop is left after expand-pipelines");
      break;
    case StmtKind::AsyncWait:
      check(s.pending >= 0, &s, "async_wait with a negative count");
      break;
    case StmtKind::MbarrierInit:
      check(s.barrier_offset >= 0 && s.barrier_offset % 8 == 0 &&
                s.barrier_offset + 8 * s.barrier_slots <= k_.smem_bytes,
            &s, "mbarriers outside the kernel's shared memory, or not 8-byte aligned");
      check(s.barrier_slots >= 1 && s.barrier_arrivals >= 1, &s, "mbarrier_init of nothing");
      break;
    case StmtKind::MbarrierWait:
      need(s.value && s.mask, "slot or parity");
      check(s.barrier_offset >= 0, &s, "mbarrier_wait without its mbarriers");
      break;
    case StmtKind::MbarrierArrive:
      need(s.value != nullptr, "slot");
      check(s.barrier_offset >= 0, &s, "mbarrier_arrive without its mbarriers");
      break;
    case StmtKind::WgmmaWait:
      need(s.var != nullptr, "accumulator");
      check(s.var->type.space == Space::Frag && s.var->type.dtype == DType::F32, &s,
            "wgmma_wait of something other than an f32 fragment");
      break;
    default:
      break;
    }
    check(s.pipeline_role == Stmt::PipelineRole::None || pipelined_depth > 0 ||
              after("expand-pipelines"),
          &s, "a pipeline role outside a pipelined loop");
    if (s.slot) check(s.var && s.var->stages > 1, &s, "a slot on a statement that fills no ring");
    for_each_expr_root(const_cast<Stmt&>(s), [&](ExprPtr& root) { expr(*root); });
    if (s.access) access(*s.access);
    if (after("infer-types")) stmt_types(s);
    stmt_ = &s;
    const int depth =
        pipelined_depth + (s.kind == StmtKind::For && s.loop_kind == LoopKind::Pipelined);
    block(s.body, depth);
    block(s.else_body, depth);
  }

  void stmt_types(const Stmt& s) {
    switch (s.kind) {
    case StmtKind::Decl:
    case StmtKind::Assign: {
      auto b = broadcast(s.value->type.shape, s.var->type.shape);
      check(b && *b == s.var->type.shape, &s,
            str("a value of shape ", shape_str(s.value->type.shape), " assigned to '", s.var->name,
                "' of shape ", shape_str(s.var->type.shape)));
      break;
    }
    case StmtKind::Store: {
      const std::vector<int64_t> shape = s.access->shape();
      auto b = broadcast(s.value->type.shape, shape);
      check(b && *b == shape, &s,
            str("a value of shape ", shape_str(s.value->type.shape), " stored to ",
                shape_str(shape)));
      if (s.mask) mask(*s.mask, shape);
      break;
    }
    case StmtKind::If:
      check(s.value->type.is_scalar() && s.value->type.dtype == DType::Bool, &s,
            str("an if condition of type ", s.value->type.str()));
      break;
    case StmtKind::For:
      for (const Expr* e : {s.lo.get(), s.hi.get(), s.step.get()})
        check(e->type.is_scalar(), &s, "a loop bound is a tile");
      break;
    default:
      break;
    }
  }

  void mask(const Expr& m, const std::vector<int64_t>& shape) {
    auto b = broadcast(m.type.shape, shape);
    check(b && *b == shape && m.type.dtype == DType::Bool, nullptr,
          str("a mask of type ", m.type.str(), " for a tile of shape ", shape_str(shape)));
  }

  void access(const Access& a) {
    check(a.param >= 0 && a.param < static_cast<int>(k_.params.size()), nullptr,
          str("an access to parameter ", a.param, " of ", k_.params.size()));
    const Param& p = k_.params[a.param];
    check(p.is_tensor && static_cast<int>(a.indices.size()) == p.rank(), nullptr,
          str("an access to '", p.name, "' with ", a.indices.size(), " subscripts"));
    for (const auto& ix : a.indices) {
      check(ix.index != nullptr, nullptr, str("an access to '", p.name, "' lacks a subscript"));
      if (ix.kind == AccessIndex::Kind::Range)
        check(ix.extent > 0, nullptr, str("a range of ", ix.extent, " into '", p.name, "'"));
      if (after("infer-types") && ix.kind != AccessIndex::Kind::Gather)
        check(ix.index->type.is_scalar(), nullptr,
              str("a point or range start into '", p.name, "' is a tile"));
      if (after("infer-types") && ix.kind == AccessIndex::Kind::Gather)
        check(ix.index->type.rank() == 1, nullptr,
              str("a gather subscript into '", p.name, "' has rank ", ix.index->type.rank()));
    }
  }

  void expr(Expr& e) {
    for_each_node(e, [&](Expr& n) { node(n); });
  }

  void node(const Expr& e) {
    auto need = [&](bool ok, const char* what) {
      check(ok, nullptr, str(what, " missing in '", print_expr(e), "'"));
    };
    if (e.scratch_region == kExchangeRegion)
      check(e.kind == ExprKind::ClusterSum && !e.type.is_scalar() && k_.cluster_size() > 1 &&
                e.layout && e.layout->per_thread() * k_.threads * 4 <= k_.smem_bytes,
            nullptr,
            str("'", print_expr(e),
                "' exchanges over the tiles' bytes, which only a tile's cluster_sum in a cluster "
                "of several programs does, within the kernel's shared memory"));
    else if (e.scratch_region == kWholeScratch)
      check(e.kind == ExprKind::SolveTril, nullptr,
            str("'", print_expr(e), "' takes the whole scratch area, which only solve_tril does"));
    else if (after("place-scratch"))
      check(e.kind == ExprKind::SolveTril ? false
            : uses_scratch(k_, e)         ? (e.scratch_region == 0 || e.scratch_region == 1)
                                          : e.scratch_region == -1,
            nullptr,
            str("'", print_expr(e), "' has scratch half ", e.scratch_region,
                e.kind == ExprKind::SolveTril ? " (it takes the whole scratch area: scratch=whole)"
                : uses_scratch(k_, e)         ? " (it exchanges values through the scratch area)"
                                              : " (it needs no scratch)"));
    switch (e.kind) {
    case ExprKind::VarRef:
      need(e.var != nullptr, "the variable");
      check(vars_.count(e.var) > 0, nullptr,
            str("'", e.var->name, "' is not the kernel's variable"));
      break;
    case ExprKind::ParamRef:
    case ExprKind::DimRef:
      need(e.param >= 0 && e.param < static_cast<int>(k_.params.size()), "the parameter");
      if (e.kind == ExprKind::DimRef)
        need(e.axis >= 0 && e.axis < k_.params[e.param].rank(), "the dimension");
      break;
    case ExprKind::ProgramId:
    case ExprKind::NumPrograms:
      check(e.axis >= 0 && e.axis < 3, nullptr, str("grid axis ", e.axis));
      break;
    case ExprKind::Unary:
    case ExprKind::Math:
    case ExprKind::Cast:
    case ExprKind::Expand:
    case ExprKind::Trans:
    case ExprKind::Reduce:
    case ExprKind::Scan:
    case ExprKind::SolveTril:
    case ExprKind::ClusterSum:
    case ExprKind::Convert:
    case ExprKind::Unpack:
      need(e.a != nullptr, "the operand");
      break;
    case ExprKind::Binary:
    case ExprKind::Dot:
    case ExprKind::SharedSlice:
      need(e.a && e.b, "an operand");
      break;
    case ExprKind::Select:
      need(e.a && e.b && e.c, "an operand");
      break;
    case ExprKind::Load:
    case ExprKind::Copy:
    case ExprKind::Prefetch:
      need(e.access != nullptr, "the access");
      break;
    case ExprKind::AtomicAdd:
      need(e.access && e.a, "the access or value");
      break;
    default:
      break;
    }
    if (e.access) access(*e.access);
    if (after("infer-types")) node_type(e);
    // A transposed shared tile is a dot operand's view: read from shared memory, no layout
    // (assign-layouts stages the operand under the trans and leaves the trans typed frag).
    const bool shared_view = e.kind == ExprKind::Trans && e.a->type.space == Space::Shared;
    if (after("assign-layouts") && e.type.space == Space::Frag && !e.type.is_scalar() &&
        e.kind != ExprKind::Prefetch && !shared_view)
      layout_fits(e.layout, e.type, str("'", print_expr(e), "'"));
    // Nodes that visit each element of their operand once: a unit axis broadcast in a wider
    // layout would be counted once per column (a sum NM times too large).
    if (after("assign-layouts") &&
        (e.kind == ExprKind::Reduce || e.kind == ExprKind::Scan || e.kind == ExprKind::SolveTril ||
         e.kind == ExprKind::ClusterSum))
      layout_is_shape(*e.a, str("the operand of '", print_expr(e), "'"));
    if (after("assign-layouts") && e.kind == ExprKind::AtomicAdd && !e.a->type.is_scalar())
      layout_is_shape(*e.a, str("the value of '", print_expr(e), "'"));
  }

  /// `x`'s layout has x's own shape, not one its unit axes broadcast to.
  void layout_is_shape(const Expr& x, const std::string& what) {
    if (x.type.space != Space::Frag || x.type.is_scalar() || !x.layout) return;
    check(x.layout->shape == x.type.shape, nullptr,
          str(what, " has shape ", shape_str(x.type.shape), " but is laid out as ", x.layout->str(),
              ": each of its elements would be visited more than once"));
  }

  void same_shape(const Expr& e, const std::vector<int64_t>& want) {
    check(e.type.shape == want, nullptr,
          str("'", print_expr(e), "' has shape ", shape_str(e.type.shape), ", its operands give ",
              shape_str(want)));
  }

  void node_type(const Expr& e) {
    const Type& t = e.type;
    switch (e.kind) {
    case ExprKind::VarRef:
      check(t.shape == e.var->type.shape && t.dtype == e.var->type.dtype, nullptr,
            str("a reference to '", e.var->name, "' of type ", t.str(), "; it is ",
                e.var->type.str()));
      break;
    case ExprKind::Unary:
    case ExprKind::Cast:
    case ExprKind::Scan:
    case ExprKind::ClusterSum:
      same_shape(e, e.a->type.shape);
      break;
    case ExprKind::SolveTril:
      same_shape(e, e.a->type.shape);
      check(t.rank() == 2 && t.shape[0] == t.shape[1] && t.dtype == DType::F32, nullptr,
            str("'", print_expr(e), "' of type ", t.str(), ": solve_tril takes a square f32 tile"));
      break;
    case ExprKind::Math: {
      auto b = e.b ? broadcast(e.a->type.shape, e.b->type.shape) : e.a->type.shape;
      check(b.has_value(), nullptr, str("operands of '", print_expr(e), "' do not broadcast"));
      same_shape(e, *b);
      break;
    }
    case ExprKind::Binary: {
      auto b = broadcast(e.a->type.shape, e.b->type.shape);
      check(b.has_value(), nullptr, str("operands of '", print_expr(e), "' do not broadcast"));
      same_shape(e, *b);
      if (is_compare(e.binary_op))
        check(t.dtype == DType::Bool, nullptr, str("a comparison of type ", t.str()));
      break;
    }
    case ExprKind::Select: {
      auto b = broadcast(e.a->type.shape, e.b->type.shape);
      if (b) b = broadcast(*b, e.c->type.shape);
      check(b.has_value(), nullptr, str("operands of '", print_expr(e), "' do not broadcast"));
      same_shape(e, *b);
      check(e.a->type.dtype == DType::Bool, nullptr, "a where(...) condition is not bool");
      break;
    }
    case ExprKind::Iota:
      same_shape(e, {e.extent});
      break;
    case ExprKind::Unpack: {
      const Type& w = e.a->type;
      check(e.extent == 4, nullptr, str("unpack of ", e.extent, "-bit fields"));
      check(!w.is_scalar() && (w.dtype == DType::I32 || w.dtype == DType::U32), nullptr,
            str("unpack4 of '", print_expr(*e.a), "' (", w.str(),
                "): it takes a tile of i32 or u32"));
      check(t.dtype == DType::F16 || t.dtype == DType::BF16 || t.dtype == DType::F32, nullptr,
            str("unpack4 to ", dtype_name(t.dtype)));
      if (!w.is_scalar()) {
        std::vector<int64_t> shape = w.shape;
        shape.back() *= 8;
        same_shape(e, shape);
      }
      if (e.b)
        check(e.b->type.dtype == DType::I32 &&
                  (e.b->type.is_scalar() ||
                   (e.b->type.rank() == 2 && t.rank() == 2 && e.b->type.shape[0] == t.shape[0] &&
                    e.b->type.shape[1] == 1)),
              nullptr,
              str("unpack4's zero point '", print_expr(*e.b), "' (", e.b->type.str(),
                  ") is not an i32 scalar or one per row"));
      break;
    }
    case ExprKind::Expand: {
      std::vector<int64_t> shape = e.a->type.shape;
      for (int ax : e.axes)
        if (ax >= 0 && ax <= static_cast<int>(shape.size())) shape.insert(shape.begin() + ax, 1);
      same_shape(e, shape);
      break;
    }
    case ExprKind::Trans:
      check(e.a->type.rank() == 2, nullptr, "trans of a tile that is not 2-D");
      same_shape(e, {e.a->type.shape[1], e.a->type.shape[0]});
      break;
    case ExprKind::Load:
    case ExprKind::Copy:
      same_shape(e, e.access->shape());
      if (e.kind == ExprKind::Copy)
        check(t.space == Space::Shared, nullptr, "a copy into a tile that is not shared");
      if (e.b) mask(*e.b, e.access->shape());
      break;
    case ExprKind::Dot: {
      const auto &a = e.a->type.shape, &b = e.b->type.shape;
      check(a.size() == 2 && b.size() == 2 && a[1] == b[0], nullptr,
            str("dot of ", shape_str(a), " and ", shape_str(b)));
      same_shape(e, {a[0], b[1]});
      if (e.c) same_shape(*e.c, t.shape);
      break;
    }
    case ExprKind::Reduce: {
      check(e.axis >= -1 && !e.b, nullptr, "sum_to left unresolved by infer_types");
      std::vector<int64_t> shape;
      if (e.axis >= 0) {
        check(e.axis < e.a->type.rank(), nullptr, str("reduce over axis ", e.axis));
        shape = e.a->type.shape;
        shape.erase(shape.begin() + e.axis);
      }
      same_shape(e, shape);
      break;
    }
    default:
      break;
    }
  }

  /// Every shared tile inside the block's bytes, above the scratch area, and apart from every
  /// tile that may be live at the same time.
  void shared_plan() {
    check(k_.smem_bytes <= k_.smem_limit, nullptr,
          str(k_.smem_bytes, " bytes of shared memory over the limit of ", k_.smem_limit));
    SharedLiveness live(k_);
    std::vector<const Var*> tiles;
    for (const auto& vp : k_.vars) {
      const Var& v = *vp;
      if (v.type.space != Space::Shared) continue;
      const int64_t end = v.smem_offset + shared_tile_bytes(v) * v.stages;
      check(v.smem_offset >= k_.scratch_bytes && end <= k_.smem_bytes, nullptr,
            str("shared tile '", v.name, "' at [", v.smem_offset, ", ", end,
                ") is outside the tiles' area [", k_.scratch_bytes, ", ", k_.smem_bytes, ")"));
      check(v.smem_offset % 16 == 0, nullptr,
            str("shared tile '", v.name, "' at offset ", v.smem_offset, " is not 16-byte aligned"));
      for (const Var* w : tiles) {
        const int64_t w_end = w->smem_offset + shared_tile_bytes(*w) * w->stages;
        const bool share = v.smem_offset < w_end && w->smem_offset < end;
        check(!share || live.may_share(&v, w), nullptr,
              str("shared tiles '", w->name, "' [", w->smem_offset, ", ", w_end, ") and '", v.name,
                  "' [", v.smem_offset, ", ", end, ") share bytes but may be live at once"));
      }
      tiles.push_back(&v);
    }
  }
};

} // namespace

void verify_ir(Kernel& k, const std::string& after_pass) {
  Verifier(k, after_pass).run();
}

} // namespace tilejit
