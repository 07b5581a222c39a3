#include "compiler/ir.h"

#include "support/text.h"

#include <algorithm>
#include <map>

namespace tilejit::ir {

const char* space_name(Space s) {
  switch (s) {
  case Space::Scalar:
    return "scalar";
  case Space::Frag:
    return "frag";
  case Space::Shared:
    return "shared";
  }
  return "?";
}

const char* math_fn_name(MathFn f) {
  switch (f) {
  case MathFn::Exp:
    return "exp";
  case MathFn::Exp2:
    return "exp2";
  case MathFn::Log:
    return "log";
  case MathFn::Log2:
    return "log2";
  case MathFn::Sqrt:
    return "sqrt";
  case MathFn::Rsqrt:
    return "rsqrt";
  case MathFn::Abs:
    return "abs";
  case MathFn::Floor:
    return "floor";
  case MathFn::Ceil:
    return "ceil";
  case MathFn::Tanh:
    return "tanh";
  case MathFn::Sigmoid:
    return "sigmoid";
  case MathFn::Pow:
    return "pow";
  case MathFn::Min:
    return "min";
  case MathFn::Max:
    return "max";
  }
  return "?";
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Max:
    return "max";
  case ReduceOp::Min:
    return "min";
  case ReduceOp::Prod:
    return "prod";
  }
  return "?";
}

int64_t Type::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string Type::str() const {
  std::string s = dtype_name(dtype);
  if (!shape.empty()) {
    std::vector<std::string> dims;
    for (int64_t d : shape) dims.push_back(std::to_string(d));
    s += "[" + join(dims, ", ") + "]";
  }
  return s;
}

std::string Type::str_with_space() const {
  if (space == Space::Scalar) return str();
  return std::string(space_name(space)) + " " + str();
}

AccessIndex AccessIndex::clone() const {
  AccessIndex c;
  c.kind = kind;
  c.index = index ? index->clone() : nullptr;
  c.extent = extent;
  c.zip = zip;
  return c;
}

Access Access::clone() const {
  Access c;
  c.param = param;
  c.loc = loc;
  c.speculative = speculative;
  for (const auto& i : indices) c.indices.push_back(i.clone());
  return c;
}

bool Access::is_scalar() const {
  for (const auto& i : indices)
    if (i.kind != AccessIndex::Kind::Point) return false;
  return true;
}

std::vector<int> Access::tile_axes() const {
  std::vector<int> axes(indices.size(), -1);
  std::map<int, int> zip_axis; // zip group -> its axis
  int next = 0;
  for (size_t d = 0; d < indices.size(); ++d) {
    const AccessIndex& ix = indices[d];
    if (ix.kind != AccessIndex::Kind::Gather) continue;
    if (ix.zip >= 0) {
      auto [it, fresh] = zip_axis.emplace(ix.zip, next);
      if (fresh) ++next;
      axes[d] = it->second;
    } else {
      axes[d] = next++;
    }
  }
  for (size_t d = 0; d < indices.size(); ++d)
    if (indices[d].kind == AccessIndex::Kind::Range) axes[d] = next++;
  return axes;
}

int Access::gather_axes() const {
  std::vector<int> axes = tile_axes();
  int n = 0;
  for (size_t d = 0; d < indices.size(); ++d)
    if (indices[d].kind == AccessIndex::Kind::Gather) n = std::max(n, axes[d] + 1);
  return n;
}

std::vector<int64_t> Access::shape() const {
  std::vector<int> axes = tile_axes();
  int rank = 0;
  for (int a : axes) rank = std::max(rank, a + 1);
  std::vector<int64_t> out(rank, 1);
  for (size_t d = 0; d < indices.size(); ++d) {
    const AccessIndex& ix = indices[d];
    if (axes[d] < 0) continue;
    if (ix.kind == AccessIndex::Kind::Range)
      out[axes[d]] = ix.extent;
    else
      out[axes[d]] = ix.index->type.shape.empty() ? 1 : ix.index->type.shape[0];
  }
  return out;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::vector<std::string> p;
  for (int64_t d : s) p.push_back(std::to_string(d));
  return "[" + join(p, ", ") + "]";
}

std::optional<std::vector<int64_t>> broadcast(const std::vector<int64_t>& a,
                                              const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = std::max(x, y);
  }
  return out;
}

ExprPtr Expr::clone() const {
  auto e = std::make_unique<Expr>(kind, loc);
  e->type = type;
  e->layout = layout;
  e->int_value = int_value;
  e->float_value = float_value;
  e->var = var;
  e->param = param;
  e->axis = axis;
  e->unary_op = unary_op;
  e->binary_op = binary_op;
  e->math = math;
  e->reduce_op = reduce_op;
  e->axes = axes;
  e->extent = extent;
  e->async_copy = async_copy;
  e->scratch_region = scratch_region;
  e->literal = literal;
  e->wgmma = wgmma;
  e->issue_early = issue_early;
  e->registers_a = registers_a;
  e->bulk = bulk;
  e->tma_barrier = tma_barrier;
  e->reuse_slot = reuse_slot;
  if (a) e->a = a->clone();
  if (b) e->b = b->clone();
  if (c) e->c = c->clone();
  if (access) e->access = std::make_unique<Access>(access->clone());
  return e;
}

ExprPtr make_int(int64_t v, DType t, SourceLoc loc) {
  auto e = std::make_unique<Expr>(ExprKind::Const, std::move(loc));
  e->int_value = v;
  e->float_value = static_cast<double>(v);
  e->type = Type{t, {}, Space::Scalar};
  return e;
}

ExprPtr make_float(double v, DType t, SourceLoc loc) {
  auto e = std::make_unique<Expr>(ExprKind::Const, std::move(loc));
  e->float_value = v;
  // int_value only mirrors finite values in range (casting inf or NaN is undefined).
  e->int_value = (v == v && v > -9.2e18 && v < 9.2e18) ? static_cast<int64_t>(v) : 0;
  e->type = Type{t, {}, Space::Scalar};
  return e;
}

ExprPtr make_bool(bool v, SourceLoc loc) {
  auto e = std::make_unique<Expr>(ExprKind::Const, std::move(loc));
  e->int_value = v ? 1 : 0;
  e->float_value = v ? 1 : 0;
  e->type = Type{DType::Bool, {}, Space::Scalar};
  return e;
}

ExprPtr make_var_ref(Var* v, SourceLoc loc) {
  auto e = std::make_unique<Expr>(ExprKind::VarRef, std::move(loc));
  e->var = v;
  e->type = v->type;
  e->layout = v->layout;
  return e;
}

ExprPtr make_binary(dsl::BinaryOp op, ExprPtr a, ExprPtr b, SourceLoc loc) {
  auto e = std::make_unique<Expr>(ExprKind::Binary, std::move(loc));
  e->binary_op = op;
  e->a = std::move(a);
  e->b = std::move(b);
  return e;
}

Var* Kernel::new_var(std::string name, Type type, SourceLoc loc) {
  auto v = std::make_unique<Var>();
  v->id = static_cast<int>(vars.size());
  v->name = std::move(name);
  v->type = std::move(type);
  v->loc = std::move(loc);
  vars.push_back(std::move(v));
  return vars.back().get();
}

bool Kernel::typed() const {
  // Passes in order (compiler/pipeline.cpp): everything but these runs after infer-types.
  return !after_pass.empty() && after_pass != "specialise" && after_pass != "unroll-loops";
}

bool Kernel::laid_out() const {
  return typed() && after_pass != "infer-types";
}

int Kernel::find_param(const std::string& n) const {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].name == n) return static_cast<int>(i);
  return -1;
}

void for_each_stmt(Block& block, const std::function<void(Stmt&)>& fn) {
  for (auto& s : block) {
    fn(*s);
    for_each_stmt(s->body, fn);
    for_each_stmt(s->else_body, fn);
  }
}

namespace {
void access_roots(Access& a, const std::function<void(ExprPtr&)>& fn) {
  for (auto& i : a.indices)
    if (i.index) fn(i.index);
}
} // namespace

void for_each_expr_root(Stmt& s, const std::function<void(ExprPtr&)>& fn) {
  if (s.value) fn(s.value);
  if (s.mask) fn(s.mask);
  if (s.access) access_roots(*s.access, fn);
  if (s.lo) fn(s.lo);
  if (s.hi) fn(s.hi);
  if (s.step) fn(s.step);
  if (s.slot) fn(s.slot);
}

void for_each_node(Expr& e, const std::function<void(Expr&)>& fn) {
  if (e.a) for_each_node(*e.a, fn);
  if (e.b) for_each_node(*e.b, fn);
  if (e.c) for_each_node(*e.c, fn);
  if (e.access)
    for (auto& i : e.access->indices)
      if (i.index) for_each_node(*i.index, fn);
  fn(e);
}

void vars_read(Expr& e, std::set<Var*>& out) {
  for_each_node(e, [&](Expr& n) {
    if (n.kind == ExprKind::VarRef) out.insert(n.var);
    if (n.kind == ExprKind::Convert && n.var) out.insert(n.var);
  });
}

bool mentions(const Expr& e, const Var* v) {
  bool found = false;
  for_each_node(const_cast<Expr&>(e), [&](Expr& n) { found = found || n.var == v; });
  return found;
}

bool mentions(const Stmt& s, const Var* v) {
  bool found = s.var == v;
  for_each_expr_root(const_cast<Stmt&>(s),
                     [&](ExprPtr& root) { found = found || mentions(*root, v); });
  for (const auto& b : {&s.body, &s.else_body})
    for (const auto& c : *b) found = found || mentions(*c, v);
  return found;
}

} // namespace tilejit::ir
