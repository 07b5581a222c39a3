#include "compiler/ir_printer.h"

#include "compiler/layout.h"
#include "support/text.h"

#include <fmt/format.h>

#include <cmath>
#include <iterator>

namespace tilejit::ir {
namespace {

// The printer needs the kernel for parameter names; keep it for the duration of a print.
thread_local const Kernel* g_kernel = nullptr;

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
  const bool name_axes = a.gather_axes() > 1;
  const std::vector<int> axes = a.tile_axes();
  for (size_t d = 0; d < a.indices.size(); ++d) {
    const AccessIndex& i = a.indices[d];
    switch (i.kind) {
    case AccessIndex::Kind::Point:
      parts.push_back(print_expr(*i.index));
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

/// ", scratch=N" once place-scratch gave the operation a half of the scratch area.
std::string scratch_arg(const Expr& e) {
  return e.scratch_region >= 0 ? str(", scratch=", e.scratch_region) : std::string();
}

} // namespace

PrintContext::PrintContext(const Kernel& k) : saved_(g_kernel) {
  g_kernel = &k;
}
PrintContext::~PrintContext() {
  g_kernel = saved_;
}

std::string print_expr(const Expr& e) {
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
  case ExprKind::Unary:
    return str(dsl::unary_op_spelling(e.unary_op), print_expr(*e.a));
  case ExprKind::Binary:
    return str("(", print_expr(*e.a), " ", dsl::binary_op_spelling(e.binary_op), " ",
               print_expr(*e.b), ")");
  case ExprKind::Select:
    return str("where(", print_expr(*e.a), ", ", print_expr(*e.b), ", ", print_expr(*e.c), ")");
  case ExprKind::Math:
    return e.b ? str(math_fn_name(e.math), "(", print_expr(*e.a), ", ", print_expr(*e.b), ")")
               : str(math_fn_name(e.math), "(", print_expr(*e.a), ")");
  case ExprKind::Cast:
    return str("cast<", dtype_name(e.type.dtype), ">(", print_expr(*e.a), ")");
  case ExprKind::Iota:
    return str("iota(", e.extent, ")");
  case ExprKind::Expand: {
    std::vector<std::string> ax;
    for (int x : e.axes) ax.push_back(std::to_string(x));
    return str("expand(", print_expr(*e.a), ", axes=[", join(ax, ","), "])");
  }
  case ExprKind::Trans:
    return str("trans(", print_expr(*e.a), ")");
  case ExprKind::Load:
  case ExprKind::Copy:
  case ExprKind::AtomicAdd: {
    std::string s = e.kind == ExprKind::Load   ? "load("
                    : e.kind == ExprKind::Copy ? (e.async_copy ? "copy.async(" : "copy(")
                                               : "atomic_add(";
    s += access_str(*e.access);
    if (e.kind == ExprKind::AtomicAdd) s += ", " + print_expr(*e.a);
    if (e.b) s += ", mask=" + print_expr(*e.b);
    if (e.c) s += ", other=" + print_expr(*e.c);
    return s + scratch_arg(e) + ")";
  }
  case ExprKind::SharedSlice:
    if (!e.axes.empty()) return str(print_expr(*e.a), "[", print_expr(*e.b), ", :]");
    return str(print_expr(*e.a), "[", print_expr(*e.b), " :+ ", e.extent, "]");
  case ExprKind::Dot:
    return e.c ? str("dot(", print_expr(*e.a), ", ", print_expr(*e.b), ", ", print_expr(*e.c), ")")
               : str("dot(", print_expr(*e.a), ", ", print_expr(*e.b), ")");
  case ExprKind::Reduce:
    return str("reduce_", reduce_op_name(e.reduce_op), "(", print_expr(*e.a), ", axis=", e.axis,
               scratch_arg(e), ")");
  case ExprKind::Scan:
    return str("scan_", reduce_op_name(e.reduce_op), "(", print_expr(*e.a), ", axis=", e.axis,
               scratch_arg(e), ")");
  case ExprKind::Fence:
    return "fence()";
  case ExprKind::Prefetch:
    return str("prefetch(", access_str(*e.access), ")");
  case ExprKind::Convert:
    return str("convert<", e.layout ? e.layout->str() : std::string(space_name(e.type.space)), ">(",
               print_expr(*e.a), scratch_arg(e), ")");
  }
  return "?";
}

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
  if (v.layout) s += " #" + v.layout->str();
  if (v.smem_offset >= 0) {
    s += str(" @smem[", v.smem_offset, "]");
    if (v.smem_row_stride) s += str(" row_stride=", v.smem_row_stride);
    if (v.stages > 1) s += str(" x", v.stages, " stages");
    if (v.read_slot) s += str(" read_slot=", v.read_slot->name);
  }
  return s;
}

std::string loc_str(const SourceLoc& loc) {
  return loc.known() ? str("  // line ", loc.line) : std::string();
}

void print_block(std::string& out, const Block& b, int indent);

/// " [slot s]" for a ring buffer's producer, and its pipeline role where one is set.
std::string slot_str(const Stmt& s) {
  std::string out;
  if (s.slot) out += " [slot " + print_expr(*s.slot) + "]";
  if (s.pipeline_role == Stmt::PipelineRole::Producer) out += " producer";
  if (s.pipeline_role == Stmt::PipelineRole::ProducerInput) out += " producer_input";
  return out;
}

void print_stmt(std::string& out, const Stmt& s, int indent) {
  auto to = std::back_inserter(out);
  std::string pad(indent * 2, ' ');
  switch (s.kind) {
  case StmtKind::Decl:
    fmt::format_to(to, "{}{}{} = {}{}\n", pad, var_decl_str(*s.var), slot_str(s),
                   print_expr(*s.value), loc_str(s.loc));
    break;
  case StmtKind::Assign:
    fmt::format_to(to, "{}{}{} = {}{}\n", pad, s.var->name, slot_str(s), print_expr(*s.value),
                   loc_str(s.loc));
    break;
  case StmtKind::Store:
    fmt::format_to(to, "{}store {} <- {}", pad, access_str(*s.access), print_expr(*s.value));
    if (s.mask) fmt::format_to(to, " mask={}", print_expr(*s.mask));
    fmt::format_to(to, "{}\n", loc_str(s.loc));
    break;
  case StmtKind::Eval:
    fmt::format_to(to, "{}{}{}\n", pad, print_expr(*s.value), loc_str(s.loc));
    break;
  case StmtKind::For:
    fmt::format_to(to, "{}for {} in [{}, {}) step {}", pad, s.var->name, print_expr(*s.lo),
                   print_expr(*s.hi), print_expr(*s.step));
    if (s.loop_kind == LoopKind::Pipelined) fmt::format_to(to, " pipelined(stages={})", s.stages);
    if (s.unroll) fmt::format_to(to, " unroll {}", s.unroll);
    fmt::format_to(to, " {{{}\n", loc_str(s.loc));
    print_block(out, s.body, indent + 1);
    fmt::format_to(to, "{}}}\n", pad);
    break;
  case StmtKind::If:
    fmt::format_to(to, "{}if {} {{{}\n", pad, print_expr(*s.value), loc_str(s.loc));
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
  }
}

void print_block(std::string& out, const Block& b, int indent) {
  for (const auto& s : b) print_stmt(out, *s, indent);
}

} // namespace

std::string print_kernel(const Kernel& k) {
  const Kernel* saved = g_kernel;
  g_kernel = &k;
  std::string out;
  auto to = std::back_inserter(out);
  fmt::format_to(to, "kernel {}", k.name);
  for (const auto& [n, v] : k.bindings) fmt::format_to(to, " {}={}", n, v);
  fmt::format_to(to, "\n  threads {}, shared memory {} bytes{}\n", k.threads, k.smem_bytes,
                 k.index32 ? ", 32-bit indices" : "");
  for (const auto& p : k.params) {
    fmt::format_to(to, "  param {}{}: {}", p.is_scratch ? "scratch " : "", p.name,
                   dtype_name(p.dtype));
    if (p.is_tensor) {
      std::vector<std::string> dims;
      for (size_t i = 0; i < p.dim_names.size(); ++i) {
        bool broadcast = i < p.broadcast_to.size() && !p.broadcast_to[i].empty();
        std::string size = p.dim_values[i] >= 0 ? std::to_string(p.dim_values[i])
                           : broadcast          ? p.broadcast_to[i]
                                                : p.dim_names[i];
        dims.push_back(broadcast ? "1|" + size : size);
      }
      fmt::format_to(to, "[{}]", join(dims, ", "));
      if (p.vector_aligned) out += " aligned16";
    }
    out += "\n";
  }
  print_block(out, k.body, 1);
  g_kernel = saved;
  return out;
}

} // namespace tilejit::ir
