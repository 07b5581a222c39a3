#include "compiler/ir_printer.h"

#include "compiler/layout.h"
#include "compiler/target.h"
#include "support/text.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <iterator>
#include <optional>

namespace tilejit::ir {
namespace {

// The printer needs the kernel for parameter names; keep it for the duration of a print.
thread_local const Kernel* g_kernel = nullptr;
// Whether expressions carry their type annotations: in printed kernels (which the reader reads
// back), not in the generated code's comments or in diagnostics.
thread_local bool g_annotate = false;
// The layout the statement implies for the expression about to be printed (its root), if any.
thread_local const Layout* g_root_layout = nullptr;
thread_local const Expr* g_root = nullptr;
// The other operand of the constant about to be printed, whose dtype it implies.
thread_local const Expr* g_partner = nullptr;

std::string param_name(int p) {
  if (g_kernel && p >= 0 && p < static_cast<int>(g_kernel->params.size()))
    return g_kernel->params[p].name;
  return str("param", p);
}

std::string const_str(const Expr& e) {
  if (e.type.dtype == DType::Bool) return e.int_value ? "true" : "false";
  if (dtype_is_float(e.type.dtype)) {
    if (std::isinf(e.float_value)) return e.float_value > 0 ? "inf" : "-inf";
    std::string s = format_double(e.float_value);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s;
  }
  return std::to_string(e.int_value);
}

std::string access_str(const Access& a) {
  std::vector<std::string> parts;
  // With several gather axes (an outer product, or zip groups), each gather names its axis.
  // (Zipped gathers alone share one axis: they name it too, so that they read back zipped.)
  int gathers = 0;
  for (const auto& i : a.indices) gathers += i.kind == AccessIndex::Kind::Gather;
  const bool name_axes = a.gather_axes() > 1 || (g_annotate && gathers > a.gather_axes());
  const std::vector<int> axes = a.tile_axes();
  for (size_t d = 0; d < a.indices.size(); ++d) {
    const AccessIndex& i = a.indices[d];
    switch (i.kind) {
    case AccessIndex::Kind::Point:
      // An index tile written inside zip(...), before infer-types makes it a gather.
      parts.push_back(i.zip >= 0 ? str("zip@", i.zip, " ", print_expr(*i.index))
                                 : print_expr(*i.index));
      break;
    case AccessIndex::Kind::Range:
      parts.push_back(str(print_expr(*i.index), " :+ ", i.extent));
      break;
    case AccessIndex::Kind::Gather:
      parts.push_back(name_axes ? str("gather@", axes[d], " ", print_expr(*i.index))
                                : str("gather ", print_expr(*i.index)));
      break;
    }
  }
  return param_name(a.param) + "[" + join(parts, ", ") + "]";
}

/// ", scratch=N" once place-scratch gave the operation a half of the scratch area (", scratch=
/// whole" both, ", scratch=exchange" the dead tiles' bytes).
std::string scratch_arg(const Expr& e) {
  if (e.scratch_region == ir::kExchangeRegion) return ", scratch=exchange";
  if (e.scratch_region == ir::kWholeScratch) return ", scratch=whole";
  return e.scratch_region >= 0 ? str(", scratch=", e.scratch_region) : std::string();
}

} // namespace

std::string quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

namespace {

Space tile_space(const std::vector<int64_t>& shape) {
  return shape.empty() ? Space::Scalar : Space::Frag;
}

bool is_compare(dsl::BinaryOp op) {
  using B = dsl::BinaryOp;
  return op == B::Lt || op == B::Le || op == B::Gt || op == B::Ge || op == B::Eq || op == B::Ne ||
         op == B::And || op == B::Or;
}

/// The operand whose shape is the result's (first found), for its dtype and layout.
const Expr* shaped_like(const std::vector<int64_t>& shape, std::initializer_list<const Expr*> ops) {
  for (const Expr* o : ops)
    if (o && o->type.shape == shape) return o;
  return nullptr;
}
} // namespace

Type implied_const_type(const Expr& c, const Expr* partner) {
  Type t = implied_type(c);
  // A constant beside a value (not another constant) takes its dtype where the kinds agree.
  if (partner && partner->kind != ExprKind::Const && g_kernel && g_kernel->typed()) {
    const DType p = partner->type.dtype;
    if ((t.dtype == DType::F32 && dtype_is_float(p)) ||
        (t.dtype == DType::I32 && dtype_is_int(p) && p != DType::Bool))
      t.dtype = p;
  }
  return t;
}

Type implied_type(const Expr& e) {
  auto of = [](DType d, std::vector<int64_t> shape) {
    Space sp = tile_space(shape);
    return Type{d, std::move(shape), sp};
  };
  // Before infer-types only constants and variable references have types worth saying.
  if (g_kernel && !g_kernel->typed() && e.kind != ExprKind::Const && e.kind != ExprKind::VarRef)
    return Type{};
  switch (e.kind) {
  case ExprKind::Const:
    return Type{e.type.dtype == DType::Bool    ? DType::Bool
                : dtype_is_float(e.type.dtype) ? DType::F32
                                               : DType::I32,
                {},
                Space::Scalar};
  case ExprKind::VarRef:
    return e.var->type;
  case ExprKind::ParamRef:
    if (g_kernel && e.param >= 0 && e.param < static_cast<int>(g_kernel->params.size()))
      return Type{g_kernel->params[e.param].dtype, {}, Space::Scalar};
    return Type{};
  case ExprKind::Unary:
  case ExprKind::Scan:
  case ExprKind::SolveTril:
  case ExprKind::ClusterSum:
    return of(e.a->type.dtype, e.a->type.shape);
  case ExprKind::Binary:
  case ExprKind::Math: {
    auto b = e.b ? broadcast(e.a->type.shape, e.b->type.shape) : e.a->type.shape;
    if (!b) return Type{};
    const Expr* like = shaped_like(*b, {e.a.get(), e.b.get()});
    DType d = like ? like->type.dtype : e.a->type.dtype;
    if (e.kind == ExprKind::Binary && is_compare(e.binary_op)) d = DType::Bool;
    return of(d, *b);
  }
  case ExprKind::Select: {
    auto b = broadcast(e.b->type.shape, e.c->type.shape);
    if (b) b = broadcast(*b, e.a->type.shape);
    if (!b) return Type{};
    const Expr* like = shaped_like(*b, {e.b.get(), e.c.get()});
    return of(like ? like->type.dtype : e.b->type.dtype, *b);
  }
  case ExprKind::Cast:
    return of(e.type.dtype, e.a->type.shape); // the dtype is printed
  case ExprKind::Unpack: {
    std::vector<int64_t> shape = e.a->type.shape;
    if (shape.empty() || e.extent <= 0) return Type{};
    shape.back() *= 32 / e.extent;
    return of(e.type.dtype, shape); // the dtype is printed
  }
  case ExprKind::Iota:
    return of(DType::I32, {e.extent});
  case ExprKind::Expand: {
    std::vector<int64_t> shape = e.a->type.shape;
    for (int ax : e.axes)
      if (ax >= 0 && ax <= static_cast<int>(shape.size())) shape.insert(shape.begin() + ax, 1);
    return of(e.a->type.dtype, shape);
  }
  case ExprKind::Trans:
    if (e.a->type.rank() != 2) return Type{};
    return Type{e.a->type.dtype, {e.a->type.shape[1], e.a->type.shape[0]}, e.a->type.space};
  case ExprKind::Load:
  case ExprKind::Copy: {
    DType d = g_kernel && e.access->param >= 0 &&
                      e.access->param < static_cast<int>(g_kernel->params.size())
                  ? g_kernel->params[e.access->param].dtype
                  : DType::I32;
    Type t = of(d, e.access->shape());
    if (e.kind == ExprKind::Copy) t.space = Space::Shared;
    return t;
  }
  case ExprKind::SharedSlice: {
    Type t = e.a->type;
    if (t.shape.empty()) return Type{};
    t.shape[0] = e.extent;
    if (!e.axes.empty()) t.shape.erase(t.shape.begin());
    return t;
  }
  case ExprKind::Dot:
    if (e.a->type.rank() != 2 || e.b->type.rank() != 2) return Type{};
    return of(DType::F32, {e.a->type.shape[0], e.b->type.shape[1]});
  case ExprKind::Reduce: {
    std::vector<int64_t> shape;
    if (e.axis >= 0 && e.axis < e.a->type.rank()) {
      shape = e.a->type.shape;
      shape.erase(shape.begin() + e.axis);
    }
    return of(e.a->type.dtype, shape);
  }
  case ExprKind::Convert: {
    Type t = e.a->type;
    t.space = e.var ? Space::Shared : e.layout ? Space::Frag : e.type.space; // the space is printed
    return t;
  }
  default:
    return Type{};
  }
}

const Layout* implied_value_layout(const Expr& value, const Var& var) {
  if (var.layout && value.type.space == Space::Frag && value.type.shape == var.type.shape)
    return var.layout;
  return implied_layout(value);
}

const Layout* implied_layout(const Expr& e) {
  switch (e.kind) {
  case ExprKind::VarRef:
    return e.var->layout;
  case ExprKind::Unary:
  case ExprKind::Cast:
  case ExprKind::Scan:
  case ExprKind::SolveTril:
  case ExprKind::ClusterSum:
    return e.a->layout;
  case ExprKind::Binary:
  case ExprKind::Math:
  case ExprKind::Select: {
    const Expr* like =
        shaped_like(e.type.shape, {e.b.get() && e.kind == ExprKind::Select ? e.b.get() : e.a.get(),
                                   e.kind == ExprKind::Select ? e.c.get() : e.b.get(), e.a.get()});
    return like ? like->layout : nullptr;
  }
  case ExprKind::Dot:
    return e.c ? e.c->layout : nullptr;
  case ExprKind::Convert:
    return e.var ? nullptr : e.layout; // the layout is printed
  case ExprKind::Reduce:
    // Reducing a 2-D layout along an axis leaves its slice.
    if (g_kernel && e.axis >= 0 && e.a->layout && e.a->layout->rank() == 2 &&
        e.a->layout->kind != LayoutKind::Slice && e.type.space == Space::Frag)
      return g_kernel->layouts.slice(e.a->layout, e.axis);
    return nullptr;
  case ExprKind::Expand:
    // x[:, None] of a slice: the parent layout, broadcasting for free.
    if (e.a->layout && e.a->layout->kind == LayoutKind::Slice && e.axes.size() == 1 &&
        e.axes[0] == e.a->layout->slice_axis)
      return e.a->layout->parent;
    return nullptr;
  case ExprKind::Load:
  case ExprKind::Copy:
  case ExprKind::SharedSlice:
    // The default layout for the tile (what assign-layouts gives an access, or the threads
    // that move a shared tile, when nothing asks otherwise).
    if (g_kernel && g_kernel->laid_out() && e.type.space != Space::Scalar && !e.type.is_scalar() &&
        e.type.rank() <= 2)
      return g_kernel->layouts.default_blocked(e.type.shape, dtype_size(e.type.dtype),
                                               g_kernel->threads);
    return nullptr;
  default:
    return nullptr;
  }
}

PrintContext::PrintContext(const Kernel& k) : saved_(g_kernel) {
  g_kernel = &k;
}
PrintContext::~PrintContext() {
  g_kernel = saved_;
}

namespace {
std::string print_bare(const Expr& e);

/// An operand of an elementwise operation: a constant among them implies its partner's dtype.
std::string print_operand(const Expr& e, const Expr* partner) {
  const Expr* saved = g_partner;
  g_partner = e.kind == ExprKind::Const ? partner : nullptr;
  std::string out = print_expr(e);
  g_partner = saved;
  return out;
}
std::string var_decl_str(const Var& v);
} // namespace

std::string print_expr(const Expr& e) {
  std::string bare = print_bare(e);
  if (!g_annotate) return bare;
  const Type implied =
      e.kind == ExprKind::Const ? implied_const_type(e, g_partner) : implied_type(e);
  const Layout* implied_l = &e == g_root ? g_root_layout : implied_layout(e);
  const bool typed_const =
      e.kind == ExprKind::Const && !e.literal && !(g_kernel && g_kernel->typed());
  if (e.type == implied && e.layout == implied_l && !typed_const) return bare;
  std::string note = e.type.str_with_space();
  if (e.layout != implied_l) note += " #" + (e.layout ? e.layout->str() : "none");
  if (typed_const) note += " typed";
  return str("(", bare, " : ", note, ")");
}

namespace {

std::string print_bare(const Expr& e) {
  switch (e.kind) {
  case ExprKind::Const:
    return const_str(e);
  case ExprKind::VarRef:
    return e.var->name;
  case ExprKind::ParamRef:
    return param_name(e.param);
  case ExprKind::DimRef:
    return str(param_name(e.param), ".shape[", e.axis, "]");
  case ExprKind::ProgramId:
    return str("program_id(", e.axis, ")");
  case ExprKind::NumPrograms:
    return str("num_programs(", e.axis, ")");
  case ExprKind::Unary: {
    std::string a = print_expr(*e.a);
    // -(5) is an operation on a constant; -5 is a constant.
    if (!a.empty() && (std::isdigit(static_cast<unsigned char>(a[0])) || a == "inf"))
      a = "(" + a + ")";
    return str(dsl::unary_op_spelling(e.unary_op), a);
  }
  case ExprKind::Binary:
    return str("(", print_operand(*e.a, e.b.get()), " ", dsl::binary_op_spelling(e.binary_op), " ",
               print_operand(*e.b, e.a.get()), ")");
  case ExprKind::Select:
    return str("where(", print_expr(*e.a), ", ", print_operand(*e.b, e.c.get()), ", ",
               print_operand(*e.c, e.b.get()), ")");
  case ExprKind::Math:
    return e.b ? str(math_fn_name(e.math), "(", print_operand(*e.a, e.b.get()), ", ",
                     print_operand(*e.b, e.a.get()), ")")
               : str(math_fn_name(e.math), "(", print_expr(*e.a), ")");
  case ExprKind::Cast:
    return str("cast<", dtype_name(e.type.dtype), ">(", print_expr(*e.a), ")");
  case ExprKind::Unpack:
    return str("unpack", e.extent, "<", dtype_name(e.type.dtype), ">(", print_expr(*e.a),
               e.b ? str(", ", print_expr(*e.b)) : std::string(),
               e.int_value ? ", interleaved=1" : "", ")");
  case ExprKind::SharedSlice: {
    // The subscripts written (int_value) are implied by the tile's rank once types are in.
    std::string of = e.int_value != e.a->type.rank() ? str(" of=", e.int_value) : "";
    if (!e.axes.empty()) return str(print_expr(*e.a), "[", print_expr(*e.b), ", :", of, "]");
    return str(print_expr(*e.a), "[", print_expr(*e.b), " :+ ", e.extent, of, "]");
  }
  case ExprKind::Iota:
    return str("iota(", e.extent, ")");
  case ExprKind::Expand: {
    std::vector<std::string> ax;
    for (int x : e.axes) ax.push_back(std::to_string(x));
    // The subscript's written rank (int_value) is implied by the operand's once types are in.
    std::string of = e.int_value != e.a->type.rank() ? str(", of=", e.int_value) : "";
    return str("expand(", print_expr(*e.a), ", axes=[", join(ax, ","), "]", of, ")");
  }
  case ExprKind::Trans:
    return str("trans(", print_expr(*e.a), ")");
  case ExprKind::Load:
  case ExprKind::Copy:
  case ExprKind::AtomicAdd: {
    std::string s = e.kind == ExprKind::Load   ? "load"
                    : e.kind == ExprKind::Copy ? (e.tma_barrier >= 0 ? "copy.tma"
                                                  : e.async_copy     ? "copy.async"
                                                                     : "copy")
                                               : (e.bulk ? "atomic_add.bulk" : "atomic_add");
    s += e.access->speculative ? ".speculative(" : "(";
    s += access_str(*e.access);
    if (e.kind == ExprKind::AtomicAdd) s += ", " + print_expr(*e.a);
    if (e.b) s += ", mask=" + print_expr(*e.b);
    if (e.c) s += ", other=" + print_expr(*e.c);
    if (e.tma_barrier >= 0) s += str(", mbarrier=", e.tma_barrier);
    if (e.reuse_slot) s += ", reuse=1";
    return s + scratch_arg(e) + ")";
  }
  case ExprKind::Dot:
    return str("dot(", print_expr(*e.a), ", ", print_expr(*e.b),
               e.c ? ", " + print_expr(*e.c) : std::string(), e.int_value ? ", exact=1" : "",
               e.wgmma > 0   ? str(", wgmma=", e.wgmma)
               : e.wgmma < 0 ? ", wgmma=0"
                             : "",
               e.issue_early ? ", issue=1" : "", e.registers_a ? ", shared_a=0" : "", ")");
  case ExprKind::Reduce:
    if (e.axis == kSumToLike) return str("sum_to(", print_expr(*e.a), ", ", print_expr(*e.b), ")");
    return str("reduce_", reduce_op_name(e.reduce_op), "(", print_expr(*e.a), ", axis=", e.axis,
               scratch_arg(e), ")");
  case ExprKind::Scan:
    return str("scan_", reduce_op_name(e.reduce_op), "(", print_expr(*e.a), ", axis=", e.axis,
               scratch_arg(e), ")");
  case ExprKind::SolveTril:
    return str("solve_tril(", print_expr(*e.a), scratch_arg(e), ")");
  case ExprKind::ClusterSum:
    return str("cluster_sum(", print_expr(*e.a), scratch_arg(e), ")");
  case ExprKind::Fence:
    return "fence()";
  case ExprKind::Prefetch:
    return str("prefetch", e.access->speculative ? ".speculative(" : "(", access_str(*e.access),
               ")");
  case ExprKind::Convert:
    // Into a layout, or staged in a shared tile (its placement printed like a declaration's).
    if (e.var && g_annotate)
      return str("convert<", var_decl_str(*e.var), ">(", print_expr(*e.a), ")");
    return str("convert<", e.layout ? e.layout->str() : std::string(space_name(e.type.space)), ">(",
               print_expr(*e.a), scratch_arg(e), ")");
  }
  return "?";
}

} // namespace

std::string print_access(const Kernel& k, const Access& a) {
  const Kernel* saved = g_kernel;
  g_kernel = &k;
  std::string s = access_str(a);
  g_kernel = saved;
  return s;
}

namespace {

std::string var_decl_str(const Var& v) {
  std::string s = v.type.str_with_space() + " " + v.name;
  // Read by infer-types: the declaration spelled out the type (checked, not inferred).
  if (v.declared_type && !(g_kernel && g_kernel->typed())) s += " declared";
  if (v.layout) s += " #" + v.layout->str();
  if (v.smem_offset >= 0) s += str(" @smem[", v.smem_offset, "]");
  if (v.smem_row_stride) s += str(" row_stride=", v.smem_row_stride);
  if (v.smem_swizzle) s += str(" swizzle=", v.smem_swizzle);
  // A ring from pipeline-loops on; its read slot from expand-pipelines on.
  if (v.stages > 1) s += str(" x", v.stages, " stages");
  if (v.read_slot) s += str(" read_slot=", v.read_slot->name);
  if (v.by_mbarrier) s += " by_mbarrier";
  return s;
}

std::string loc_str(const SourceLoc& loc) {
  return loc.known() ? str("  // line ", loc.line) : std::string();
}

void print_block(std::string& out, const Block& b, int indent);

/// How an If of a warp role prints its condition (the IR reader reads the same words).
std::string warp_role_name(WarpRole r) {
  switch (r) {
  case WarpRole::Split:
    return "producer_warps";
  case WarpRole::CopyThread:
    return "copy_thread";
  case WarpRole::ReduceWarp:
    return "reduce_warp";
  case WarpRole::None:
    break;
  }
  return "";
}

/// " producer" / " producer_input": a statement's role in its pipelined loop, where set.
std::string role_str(const Stmt& s) {
  if (s.pipeline_role == Stmt::PipelineRole::Producer) return " producer";
  if (s.pipeline_role == Stmt::PipelineRole::ProducerInput) return " producer_input";
  return "";
}

/// " [slot s]" for a ring buffer's producer, and its pipeline role where one is set.
std::string slot_str(const Stmt& s) {
  std::string out;
  if (s.slot) out += " [slot " + print_expr(*s.slot) + "]";
  return out + role_str(s);
}

/// The value of a declaration or assignment: its layout, when it is the variable's, goes
/// without saying.
std::string print_value(const Expr& value, const Var& var) {
  const Expr* saved_root = g_root;
  const Layout* saved_layout = g_root_layout;
  g_root = &value;
  g_root_layout = implied_value_layout(value, var);
  // A constant assigned to a variable implies the variable's dtype, as beside a partner.
  const ExprPtr target = make_var_ref(const_cast<Var*>(&var));
  const Expr* saved_partner = g_partner;
  g_partner = value.kind == ExprKind::Const ? target.get() : nullptr;
  std::string out = print_expr(value);
  g_partner = saved_partner;
  g_root = saved_root;
  g_root_layout = saved_layout;
  return out;
}

void print_stmt(std::string& out, const Stmt& s, int indent) {
  auto to = std::back_inserter(out);
  std::string pad(indent * 2, ' ');
  switch (s.kind) {
  case StmtKind::Decl:
    fmt::format_to(to, "{}{}{} = {}{}\n", pad, var_decl_str(*s.var), slot_str(s),
                   print_value(*s.value, *s.var), loc_str(s.loc));
    break;
  case StmtKind::Assign:
    fmt::format_to(to, "{}{}{} = {}{}\n", pad, s.var->name, slot_str(s),
                   print_value(*s.value, *s.var), loc_str(s.loc));
    break;
  case StmtKind::Store:
    fmt::format_to(to, "{}store {} <- {}", pad, access_str(*s.access), print_expr(*s.value));
    if (s.mask) fmt::format_to(to, " mask={}", print_expr(*s.mask));
    fmt::format_to(to, "{}{}\n", role_str(s), loc_str(s.loc));
    break;
  case StmtKind::Eval:
    fmt::format_to(to, "{}{}{}{}\n", pad, print_expr(*s.value), role_str(s), loc_str(s.loc));
    break;
  case StmtKind::For:
    if (!s.note.empty()) fmt::format_to(to, "{}// {}\n", pad, s.note);
    fmt::format_to(to, "{}for {}{} in [{}, {}) step {}", pad, s.var->name,
                   s.var->type == Type{DType::I32, {}, Space::Scalar}
                       ? std::string()
                       : ": " + s.var->type.str_with_space(),
                   print_expr(*s.lo), print_expr(*s.hi), print_expr(*s.step));
    if (s.loop_kind == LoopKind::Pipelined)
      fmt::format_to(to, " pipelined(stages={}{})", s.stages, s.producer ? ", producer=1" : "");
    if (s.unroll) fmt::format_to(to, " unroll {}", s.unroll);
    out += role_str(s);
    fmt::format_to(to, " {{{}\n", loc_str(s.loc));
    print_block(out, s.body, indent + 1);
    fmt::format_to(to, "{}}}\n", pad);
    break;
  case StmtKind::If:
    fmt::format_to(to, "{}if {}{} {{{}\n", pad,
                   s.warp_role == ir::WarpRole::None ? print_expr(*s.value)
                                                     : warp_role_name(s.warp_role),
                   role_str(s), loc_str(s.loc));
    print_block(out, s.body, indent + 1);
    if (!s.else_body.empty()) {
      fmt::format_to(to, "{}}} else {{\n", pad);
      print_block(out, s.else_body, indent + 1);
    }
    fmt::format_to(to, "{}}}\n", pad);
    break;
  case StmtKind::Return:
    fmt::format_to(to, "{}return{}\n", pad, loc_str(s.loc));
    break;
  case StmtKind::Barrier:
    fmt::format_to(to, "{}barrier{}{}{}\n", pad, s.wait_async ? " wait_async" : "",
                   s.note.empty() ? "" : "  // ", s.note);
    break;
  case StmtKind::AsyncCommit:
    fmt::format_to(to, "{}async_commit\n", pad);
    break;
  case StmtKind::AsyncWait:
    fmt::format_to(to, "{}async_wait {}{}{}\n", pad, s.pending, s.note.empty() ? "" : "  // ",
                   s.note);
    break;
  case StmtKind::MbarrierInit:
    fmt::format_to(to, "{}mbarrier_init @smem[{}] x{} arrivals={}{}{}\n", pad, s.barrier_offset,
                   s.barrier_slots, s.barrier_arrivals, s.note.empty() ? "" : "  // ", s.note);
    break;
  case StmtKind::MbarrierWait:
    fmt::format_to(to, "{}mbarrier_wait{} @smem[{}][{}] parity={}{}{}\n", pad,
                   s.producer_only ? " producer" : "", s.barrier_offset, print_expr(*s.value),
                   print_expr(*s.mask), s.note.empty() ? "" : "  // ", s.note);
    break;
  case StmtKind::MbarrierArrive:
    fmt::format_to(to, "{}mbarrier_arrive{} @smem[{}][{}]{}{}\n", pad,
                   s.fence_async ? " fence_async" : "", s.barrier_offset, print_expr(*s.value),
                   s.note.empty() ? "" : "  // ", s.note);
    break;
  case StmtKind::WgmmaWait:
    fmt::format_to(to, "{}wgmma_wait {}{}{}\n", pad, s.var->name, s.note.empty() ? "" : "  // ",
                   s.note);
    break;
  }
}

void print_block(std::string& out, const Block& b, int indent) {
  for (const auto& s : b) print_stmt(out, *s, indent);
}

} // namespace

std::string print_stmt_line(const Kernel& k, const Stmt& s) {
  const Kernel* saved = g_kernel;
  const bool saved_annotate = g_annotate;
  g_kernel = &k;
  g_annotate = true;
  std::string out;
  print_stmt(out, s, 0);
  g_kernel = saved;
  g_annotate = saved_annotate;
  return out.substr(0, out.find('\n'));
}

std::string print_kernel(const Kernel& k) {
  const Kernel* saved = g_kernel;
  const bool saved_annotate = g_annotate;
  g_kernel = &k;
  g_annotate = true;
  std::string out;
  auto to = std::back_inserter(out);
  if (!k.after_pass.empty()) fmt::format_to(to, "// after {}\n", k.after_pass);
  fmt::format_to(to, "kernel {}", k.name);
  for (const auto& [n, v] : k.bindings) fmt::format_to(to, " {}={}", n, v);
  fmt::format_to(
      to,
      "\n  threads {}{}{}, shared memory {} bytes{}, scratch {} bytes, limit {} bytes, "
      "grid rank {}{}, target {}{}, source {}\n",
      k.threads,
      k.producer_threads ? fmt::format(", producer warps {} registers {} {}", k.producer_threads,
                                       k.producer_regs, k.consumer_regs)
                         : std::string(),
      k.blocks_per_sm ? fmt::format(", blocks per sm {}", k.blocks_per_sm) : std::string(),
      k.smem_bytes, k.index32 ? ", 32-bit indices" : "", k.scratch_bytes, k.smem_limit, k.grid_rank,
      k.cluster_size() > 1
          ? fmt::format(", cluster {} {} {}", k.cluster[0], k.cluster[1], k.cluster[2])
          : std::string(),
      k.target ? k.target->arch() : std::string("none"), k.debug_bounds ? ", debug bounds" : "",
      quote(k.source_path));
  for (const auto& p : k.params) {
    fmt::format_to(to, "  param {}{}{}: {}", p.is_scratch ? "scratch " : "",
                   p.zero_init ? "zeroed " : "", p.name, dtype_name(p.dtype));
    if (p.is_tensor) {
      std::vector<std::string> dims;
      for (size_t i = 0; i < p.dim_names.size(); ++i) {
        // NAME, VALUE (a constant written as such), or NAME=VALUE (a constant by name); 1|X
        // for a dimension that broadcasts to X.
        const std::string& name = p.dim_names[i];
        const int64_t value = p.dim_values[i];
        const bool broadcast = i < p.broadcast_to.size() && !p.broadcast_to[i].empty();
        const bool literal =
            value >= 0 && (broadcast ? p.broadcast_to[i] : name) == std::to_string(value);
        std::string dim = literal ? name : value >= 0 ? str(name, "=", value) : name;
        if (broadcast && name != "1|" + p.broadcast_to[i]) dim += " to " + p.broadcast_to[i];
        dims.push_back(dim);
      }
      fmt::format_to(to, "[{}]", join(dims, ", "));
      if (p.vector_aligned) out += " aligned16";
      if (p.tma) out += " tma";
    }
    out += "\n";
  }
  print_block(out, k.body, 1);
  g_kernel = saved;
  g_annotate = saved_annotate;
  return out;
}

} // namespace tilejit::ir
