#include "dsl/ast_printer.h"

#include "support/error.h"
#include "support/text.h"

#include <fmt/format.h>

#include <iterator>

namespace tilejit::dsl {

std::string type_to_string(const TypeExpr& t) {
  std::string s = t.dtype;
  if (t.has_dims) {
    s += "[";
    for (size_t i = 0; i < t.dims.size(); ++i) {
      if (i) s += ", ";
      const Expr* to = broadcast_dim_target(*t.dims[i]);
      s += to ? "1|" + expr_to_string(*to) : expr_to_string(*t.dims[i]);
    }
    s += "]";
  }
  return s;
}

namespace {

std::string index_item_to_string(const IndexItem& it) {
  switch (it.kind) {
  case IndexItem::Kind::Expr:
    return expr_to_string(*it.expr);
  case IndexItem::Kind::Slice:
    return expr_to_string(*it.start) + " : " + expr_to_string(*it.stop);
  case IndexItem::Kind::Full:
    return ":";
  case IndexItem::Kind::NewAxis:
    return "None";
  }
  return "?";
}

std::string args_to_string(const std::vector<ExprPtr>& args, const std::vector<KeywordArg>& kw) {
  std::vector<std::string> parts;
  for (const auto& a : args) parts.push_back(expr_to_string(*a));
  for (const auto& k : kw) parts.push_back(k.name + "=" + expr_to_string(*k.value));
  return join(parts, ", ");
}

std::string choice_to_string(const Choice& c) {
  std::vector<std::string> parts;
  if (c.is_dtype) {
    parts = c.names;
  } else {
    for (int64_t v : c.ints) parts.push_back(std::to_string(v));
  }
  std::string s = join(parts, "|");
  if (c.has_default) s += " = " + (c.is_dtype ? c.default_name : std::to_string(c.default_int));
  return s;
}

std::string loc_suffix(const SourceLoc& loc) {
  return str("  @", loc.line, ":", loc.col);
}

void print_stmts(std::string& out, const std::vector<StmtPtr>& stmts, int indent);

void print_stmt(std::string& out, const Stmt& s, int indent) {
  auto to = std::back_inserter(out);
  std::string pad(indent * 2, ' ');
  switch (s.kind) {
  case StmtKind::Let: {
    const char* kw = s.let_kind == LetKind::Let    ? "let"
                     : s.let_kind == LetKind::Frag ? "frag"
                                                   : "shared";
    fmt::format_to(to, "{}{} {}", pad, kw, s.name);
    if (s.type) fmt::format_to(to, ": {}", type_to_string(*s.type));
    fmt::format_to(to, " = {}{}\n", expr_to_string(*s.value), loc_suffix(s.loc));
    break;
  }
  case StmtKind::Assign:
    fmt::format_to(to, "{}{} {}= {}{}\n", pad, s.name,
                   s.compound ? binary_op_spelling(s.assign_op) : "", expr_to_string(*s.value),
                   loc_suffix(s.loc));
    break;
  case StmtKind::ExprStmt:
    fmt::format_to(to, "{}{}{}\n", pad, expr_to_string(*s.value), loc_suffix(s.loc));
    break;
  case StmtKind::For:
    fmt::format_to(to, "{}for {} in {}({}){}\n", pad, s.name, s.range_kind,
                   args_to_string(s.range_args, s.range_kwargs), loc_suffix(s.loc));
    print_stmts(out, s.body, indent + 1);
    break;
  case StmtKind::If:
    fmt::format_to(to, "{}if {}{}\n", pad, expr_to_string(*s.value), loc_suffix(s.loc));
    print_stmts(out, s.body, indent + 1);
    if (s.has_else) {
      fmt::format_to(to, "{}else\n", pad);
      print_stmts(out, s.else_body, indent + 1);
    }
    break;
  case StmtKind::Return:
    fmt::format_to(to, "{}return{}\n", pad, loc_suffix(s.loc));
    break;
  case StmtKind::Block:
    fmt::format_to(to, "{}block{}\n", pad, loc_suffix(s.loc));
    print_stmts(out, s.body, indent + 1);
    break;
  }
}

void print_stmts(std::string& out, const std::vector<StmtPtr>& stmts, int indent) {
  for (const auto& s : stmts) print_stmt(out, *s, indent);
}

} // namespace

std::string expr_to_string(const Expr& e) {
  switch (e.kind) {
  case ExprKind::IntLit:
    return std::to_string(e.int_value);
  case ExprKind::FloatLit: {
    std::string s = format_double(e.float_value);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s;
  }
  case ExprKind::BoolLit:
    return e.bool_value ? "true" : "false";
  case ExprKind::Name:
    return e.name;
  case ExprKind::Unary:
    return str(unary_op_spelling(e.unary_op), expr_to_string(*e.lhs));
  case ExprKind::Binary:
    return str("(", expr_to_string(*e.lhs), " ", binary_op_spelling(e.binary_op), " ",
               expr_to_string(*e.rhs), ")");
  case ExprKind::Call: {
    std::string s = e.name;
    if (e.type_arg) s += "<" + type_to_string(*e.type_arg) + ">";
    return s + "(" + args_to_string(e.args, e.kwargs) + ")";
  }
  case ExprKind::Index: {
    std::vector<std::string> parts;
    for (const auto& it : e.index) parts.push_back(index_item_to_string(it));
    return expr_to_string(*e.lhs) + "[" + join(parts, ", ") + "]";
  }
  }
  return "?";
}

std::string print_ast(const Module& m) {
  std::string out;
  auto to = std::back_inserter(out);
  for (const auto& kp : m.kernels) {
    const Kernel& k = *kp;
    fmt::format_to(to, "kernel {}{}\n", k.name, loc_suffix(k.loc));
    for (const auto& g : k.generics)
      fmt::format_to(to, "  generic {}: {}\n", g.name, choice_to_string(g.choice));
    for (const auto& p : k.params)
      fmt::format_to(to, "  param {}{}: {}{}\n", p.is_scratch ? "scratch " : "", p.name,
                     type_to_string(p.type), p.zero_init ? " = 0" : "");
    for (const auto& t : k.tunables)
      fmt::format_to(to, "  tune {}: {}\n", t.name, choice_to_string(t.choice));
    for (const auto& w : k.where) fmt::format_to(to, "  where {}\n", expr_to_string(*w));
    for (const auto& r : k.require) fmt::format_to(to, "  require {}\n", expr_to_string(*r));
    if (!k.grid.empty()) {
      std::vector<std::string> g;
      for (const auto& e : k.grid) g.push_back(expr_to_string(*e));
      fmt::format_to(to, "  grid ({})\n", join(g, ", "));
    }
    if (k.threads) fmt::format_to(to, "  threads {}\n", expr_to_string(*k.threads));
    if (!k.cluster.empty()) {
      std::vector<std::string> c;
      for (const auto& e : k.cluster) c.push_back(expr_to_string(*e));
      fmt::format_to(to, "  cluster ({})\n", join(c, ", "));
    }
    out += "  body\n";
    print_stmts(out, k.body, 2);
  }
  return out;
}

} // namespace tilejit::dsl
