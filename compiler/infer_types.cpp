#include "compiler/infer_types.h"

#include "compiler/fold.h"
#include "compiler/ir_printer.h"
#include "dsl/diagnostics.h"
#include "support/text.h"

#include <cmath>
#include <limits>
#include <map>
#include <optional>

namespace tilejit {

using dsl::fail_at;
using ir::ExprKind;
using ir::ExprPtr;
using ir::Space;
using ir::Type;

namespace {

using ir::broadcast;
using ir::shape_str;

int int_rank(DType t) {
  switch (t) {
  case DType::Bool:
    return 0;
  case DType::I8:
    return 1;
  case DType::U8:
    return 2;
  case DType::I16:
    return 3;
  case DType::I32:
    return 4;
  case DType::U32:
    return 5;
  case DType::I64:
    return 6;
  default:
    return 7;
  }
}

/// The common dtype of a binary operation. A literal takes its partner's dtype when the kinds
/// agree (2.0 * f16 tile -> f16) or when an int literal meets a float.
DType promote(const ir::Expr& a, const ir::Expr& b) {
  DType x = a.type.dtype, y = b.type.dtype;
  if (x == y) return x;
  bool lx = a.literal && a.kind == ExprKind::Const, ly = b.literal && b.kind == ExprKind::Const;
  if (lx && !ly && (dtype_is_float(y) || !dtype_is_float(x))) return y;
  if (ly && !lx && (dtype_is_float(x) || !dtype_is_float(y))) return x;
  bool fx = dtype_is_float(x), fy = dtype_is_float(y);
  if (fx && !fy) return x;
  if (fy && !fx) return y;
  if (fx && fy) {
    if (x == DType::F64 || y == DType::F64) return DType::F64;
    return DType::F32; // f16 with bf16, or either with f32
  }
  return int_rank(x) >= int_rank(y) ? x : y;
}

/// A reduction over the unit axis that x[:, None] added is x itself (reverse mode writes it as
/// the adjoint of a new axis; a [N, 1] variable kept rank 1 is read as x[:, None]): no loop over
/// an operand broadcast in its parent's layout, and no [N, 1] layout to convert into.
void fold_reduce_of_new_axis(ExprPtr& e) {
  if (e->kind != ExprKind::Reduce || e->axis < 0) return;
  ir::Expr* in = e->a.get();
  const bool cast = in->kind == ExprKind::Cast;
  if (cast) in = in->a.get();
  if (in->kind != ExprKind::Expand || in->axes.size() != 1 || in->axes[0] != e->axis ||
      in->a->type.space != Space::Frag || in->a->type.shape != e->type.shape)
    return;
  ExprPtr x = std::move(in->a);
  if (cast) { // the reduction's f32 of an f16/bf16 value: cast the value itself
    ExprPtr c = std::move(e->a);
    c->a = std::move(x);
    c->type.shape = e->type.shape;
    x = std::move(c);
  }
  e = std::move(x);
}

class TypeInference {
public:
  explicit TypeInference(ir::Kernel& k) : k_(k) {}

  void run() {
    block(k_.body);
    sink_.check();
  }

private:
  // Errors inside one statement abort that statement only, so we report several at once.
  struct Abort {};
  [[noreturn]] void error(const dsl::SourceLoc& loc, const std::string& msg) {
    sink_.error(loc, msg);
    throw Abort{};
  }

  void block(ir::Block& b) {
    for (auto& s : b) {
      try {
        stmt(*s);
      } catch (Abort&) {
      } catch (dsl::CompileError& e) {
        for (const auto& d : e.diagnostics()) sink_.error(d.loc, d.message);
      }
    }
  }

  /// Casts `e` to dtype `t` (folding constants) unless it already has it.
  /// A constant past its dtype's largest finite value would be an infinity nobody wrote (or,
  /// for f32, a CUDA compile error reported on another line).
  void float_constant_fits(const ir::Expr& e, DType t) {
    if (e.kind != ExprKind::Const || !dtype_is_float(e.type.dtype) || !dtype_is_float(t) ||
        !std::isfinite(e.float_value))
      return;
    const double most = t == DType::F32    ? 3.4028234663852886e38
                        : t == DType::F16  ? 65504.0
                        : t == DType::BF16 ? 3.3895313892515355e38
                                           : 0;
    if (most > 0 && std::fabs(e.float_value) > most)
      error(e.loc, str("the constant ", format_double(e.float_value), " does not fit in ",
                       dtype_name(t), " (largest finite value about ", format_double(most), ")"));
  }

  ExprPtr cast_to(ExprPtr e, DType t) {
    float_constant_fits(*e, t);
    if (e->type.dtype == t) return e;
    auto c = std::make_unique<ir::Expr>(ExprKind::Cast, e->loc);
    c->type = e->type;
    c->type.dtype = t;
    if (c->type.space == Space::Shared) c->type.space = Space::Frag;
    c->a = std::move(e);
    return fold(std::move(c));
  }

  Space tile_space(const ir::Expr& e) const {
    return e.type.is_scalar() ? Space::Scalar : Space::Frag;
  }

  void require_int_scalar(const ir::Expr& e, const char* what) {
    if (!e.type.is_scalar() || !dtype_is_int(e.type.dtype))
      error(e.loc, str(what, " must be an integer scalar, got ", e.type.str_with_space()));
  }

  void stmt(ir::Stmt& s) {
    switch (s.kind) {
    case ir::StmtKind::Decl:
      decl(s);
      return;
    case ir::StmtKind::Assign:
      assign(s);
      return;
    case ir::StmtKind::Store:
      store(s);
      return;
    case ir::StmtKind::Eval:
      statement_atomic_ = s.value.get();
      expr(s.value);
      if (s.value->kind != ExprKind::AtomicAdd && s.value->kind != ExprKind::Fence &&
          s.value->kind != ExprKind::Prefetch)
        error(s.loc, "only atomic_add, fence and prefetch can stand alone");
      return;
    case ir::StmtKind::For: {
      expr(s.lo);
      expr(s.hi);
      require_int_scalar(*s.lo, "loop start");
      require_int_scalar(*s.hi, "loop end");
      loop_bound_fits(*s.lo, "start");
      loop_bound_fits(*s.hi, "end");
      s.lo = cast_to(std::move(s.lo), DType::I32);
      s.hi = cast_to(std::move(s.hi), DType::I32);
      block(s.body);
      return;
    }
    case ir::StmtKind::If:
      expr(s.value);
      if (!s.value->type.is_scalar() || s.value->type.dtype != DType::Bool)
        error(s.value->loc,
              str("'if' needs a bool scalar (the whole block takes one branch), got ",
                  s.value->type.str_with_space(), "; use where(...) for per-element choices"));
      block(s.body);
      block(s.else_body);
      return;
    case ir::StmtKind::Return:
    case ir::StmtKind::Barrier:
    case ir::StmtKind::AsyncCommit:
    case ir::StmtKind::AsyncWait:
    case ir::StmtKind::WgmmaWait:
    case ir::StmtKind::MbarrierInit:
    case ir::StmtKind::MbarrierWait:
    case ir::StmtKind::MbarrierArrive:
      return;
    }
  }

  /// Loop variables are 32-bit: a constant bound that does not fit would be truncated silently
  /// (2^32 becomes 0: a loop that does not run).
  void loop_bound_fits(const ir::Expr& e, const char* which) {
    if (!dtype_is_int(e.type.dtype) || dtype_size(e.type.dtype) < 8) return;
    if (e.kind == ExprKind::Const) {
      if (e.int_value < std::numeric_limits<int32_t>::min() ||
          e.int_value > std::numeric_limits<int32_t>::max())
        error(e.loc, str("loop ", which, " ", e.int_value,
                         " is out of range: loop variables are 32-bit integers"));
    }
    // A value known only at run time is converted to i32 (dsl/README.md: loop bounds).
  }

  /// sum_to(x, like) (a Reduce with axis kSumToLike): x summed over the axes `like`
  /// broadcasts along to reach x's shape (x's leading axes beyond like's rank; the axes where
  /// like has 1 and x does not, kept as unit axes), so the result broadcasts to like's shape.
  /// Where x has 1 (or no axis) and like does not, x stays narrower: the reverse of broadcasting
  /// as far as a value can go; a `frag` declared from it takes like's shape (decl). `like` is
  /// only typed, never computed; its type goes to `like_type` when asked.
  void sum_to(ExprPtr& e, Type* like_type) {
    expr(e->a);
    expr(e->b);
    const Type x = e->a->type;
    const Type like = e->b->type;
    if (like_type) *like_type = like;
    if (x.dtype == DType::Bool || !dtype_is_float(x.dtype))
      error(e->loc, str("sum_to sums floats; its value is ", x.str()));
    if (!broadcast(x.shape, like.shape))
      error(e->loc, str("sum_to: shape ", shape_str(x.shape), " does not broadcast with ",
                        shape_str(like.shape), " (the shape it is summed to)"));
    const dsl::SourceLoc loc = e->loc;
    ExprPtr v = std::move(e->a);
    auto reduce = [&](ExprPtr a, int axis) {
      DType rt =
          a->type.dtype == DType::F16 || a->type.dtype == DType::BF16 ? DType::F32 : a->type.dtype;
      auto r = std::make_unique<ir::Expr>(ExprKind::Reduce, loc);
      r->reduce_op = ir::ReduceOp::Sum;
      std::vector<int64_t> shape = a->type.shape;
      if (axis == -1 || shape.size() == 1) {
        axis = -1;
        shape.clear();
      } else {
        shape.erase(shape.begin() + axis);
      }
      r->axis = axis;
      r->a = cast_to(std::move(a), rt);
      r->type = Type{rt, shape, shape.empty() ? Space::Scalar : Space::Frag};
      return r;
    };
    // x's leading axes that like lacks: summed away.
    while (!v->type.is_scalar() && v->type.rank() > like.rank())
      v = reduce(std::move(v), like.is_scalar() ? -1 : 0);
    // Aligned axes where like has 1 and x more: summed, the unit axis kept (x[:, None]).
    const int offset = like.rank() - v->type.rank();
    for (int ax = 0; ax < v->type.rank(); ++ax) {
      if (like.shape[ax + offset] != 1 || v->type.shape[ax] == 1) continue;
      std::vector<int64_t> shape = v->type.shape;
      shape[ax] = 1;
      v = reduce(std::move(v), ax);
      auto x1 = std::make_unique<ir::Expr>(ExprKind::Expand, loc);
      x1->axes = {ax};
      x1->int_value = v->type.rank();
      x1->type = Type{v->type.dtype, shape, Space::Frag};
      x1->a = std::move(v);
      v = std::move(x1);
    }
    e = std::move(v);
  }

  void decl(ir::Stmt& s) {
    ir::Var& v = *s.var;
    // `frag d = sum_to(x, like)` declares d with like's shape (x broadcast where narrower).
    std::optional<Type> sum_to_like;
    if (s.value->kind == ExprKind::Reduce && s.value->axis == ir::kSumToLike && !v.declared_type) {
      sum_to_like.emplace();
      sum_to(s.value, &*sum_to_like);
    } else {
      expr(s.value);
    }
    const Type& vt = s.value->type;
    Space wanted = v.type.space; // from let/frag/shared; Scalar for `let`
    if (v.declared_type) {
      Type t = v.type;
      if (wanted == Space::Scalar && !t.shape.empty()) t.space = Space::Frag;
      if (wanted == Space::Frag && t.shape.empty())
        error(s.loc, str("frag '", v.name, "' needs a tile type with a shape, e.g. f32[64, 64]"));
      if (wanted == Space::Shared && t.shape.empty())
        error(s.loc, str("shared '", v.name, "' needs a tile type with a shape"));
      auto b = broadcast(vt.shape, t.shape);
      if (!b || *b != t.shape)
        error(s.value->loc, str("'", v.name, "' is declared ", t.str(), " but its value has shape ",
                                shape_str(vt.shape)));
      if (vt.dtype != t.dtype && !(s.value->literal && s.value->kind == ExprKind::Const))
        error(s.value->loc,
              str("'", v.name, "' is declared ", dtype_name(t.dtype), " but its value is ",
                  dtype_name(vt.dtype), "; write cast<", dtype_name(t.dtype), ">(...)"));
      s.value = cast_to(std::move(s.value), t.dtype);
      v.type = t;
    } else {
      Type t = vt;
      if (sum_to_like) t.shape = sum_to_like->shape;
      if (wanted == Space::Frag) {
        if (t.is_scalar())
          error(s.loc, str("frag '", v.name, "' is initialised with a scalar; give its type: frag ",
                           v.name, ": ", dtype_name(vt.dtype), "[...] = ..."));
        t.space = Space::Frag;
      } else if (wanted == Space::Shared) {
        if (t.is_scalar()) error(s.loc, str("shared '", v.name, "' needs a tile type"));
        t.space = Space::Shared;
      }
      if (t.space == Space::Scalar && !t.is_scalar()) t.space = Space::Frag;
      v.type = t;
    }
    if (v.type.rank() > 2 && v.type.space == Space::Frag)
      error(s.loc, str("register tile '", v.name, "' has rank ", v.type.rank(),
                       "; frag tiles have rank 1 or 2"));
    if (v.type.rank() > 2 && v.type.space == Space::Shared)
      error(s.loc, str("shared tile '", v.name, "' has rank ", v.type.rank(),
                       "; shared tiles have rank 1 or 2"));
    if (s.value->kind == ExprKind::Copy && v.type.space != Space::Shared)
      error(s.value->loc, str("copy(...) fills shared memory; declare '", v.name, "' as shared"));
  }

  void assign(ir::Stmt& s) {
    ir::Var& v = *s.var;
    expr(s.value);
    if (v.is_loop_var) error(s.loc, str("loop variable '", v.name, "' cannot be assigned"));
    const Type& vt = s.value->type;
    auto b = broadcast(vt.shape, v.type.shape);
    if (!b || *b != v.type.shape)
      error(s.value->loc, str("cannot assign a value of shape ", shape_str(vt.shape), " to '",
                              v.name, "' of type ", v.type.str()));
    if (vt.dtype != v.type.dtype) {
      bool literal = s.value->literal && s.value->kind == ExprKind::Const;
      bool widening = dtype_is_int(vt.dtype) && dtype_is_int(v.type.dtype) && v.type.is_scalar() &&
                      int_rank(vt.dtype) <= int_rank(v.type.dtype);
      if (!literal && !widening)
        error(s.value->loc,
              str("'", v.name, "' is ", dtype_name(v.type.dtype), " but the value is ",
                  dtype_name(vt.dtype), "; write cast<", dtype_name(v.type.dtype), ">(...)"));
      s.value = cast_to(std::move(s.value), v.type.dtype);
    }
    if (s.value->kind == ExprKind::Copy && v.type.space != Space::Shared)
      error(s.value->loc, str("copy(...) fills shared memory; '", v.name, "' is not shared"));
  }

  void store(ir::Stmt& s) {
    std::vector<int64_t> shape = access(*s.access);
    const ir::Param& p = k_.params[s.access->param];
    if (shape.size() > 2)
      error(s.access->loc, str("store to ", p.name, " writes a rank-", shape.size(),
                               " tile; tiles have rank 1 or 2 (use point subscripts for the "
                               "other axes)",
                               gather_rank_hint(*s.access)));
    expr(s.value);
    auto b = broadcast(s.value->type.shape, shape);
    if (!b || *b != shape)
      error(s.value->loc, str("store to ", p.name, " writes ", shape_str(shape),
                              " but the value has shape ", shape_str(s.value->type.shape)));
    // Stores convert to the tensor's dtype (like a C assignment).
    s.value = cast_to(std::move(s.value), p.dtype);
    if (s.mask) mask(s.mask, shape);
  }

  void mask(ExprPtr& m, const std::vector<int64_t>& shape) {
    expr(m);
    if (m->type.dtype != DType::Bool) error(m->loc, str("mask must be bool, got ", m->type.str()));
    auto b = broadcast(m->type.shape, shape);
    if (!b || *b != shape)
      error(m->loc, str("mask of shape ", shape_str(m->type.shape), " does not broadcast to ",
                        shape_str(shape)));
  }

  /// Types the subscripts of an access and returns its shape: one axis per gather subscript
  /// or zip(...) group (an outer product when there are several), then one per range.
  std::vector<int64_t> access(ir::Access& a) {
    const ir::Param& p = k_.params[a.param];
    std::map<int, const ir::Expr*> zip_first; // zip group -> its first index tile
    int axis = 0;
    for (auto& ix : a.indices) {
      expr(ix.index);
      const Type& t = ix.index->type;
      if (!dtype_is_int(t.dtype))
        error(ix.index->loc,
              str("subscript ", axis, " of '", p.name, "' must be an integer, got ", t.str()));
      if (ix.kind == ir::AccessIndex::Kind::Range) {
        if (!t.is_scalar()) error(ix.index->loc, "a slice start must be a scalar");
        if (p.dim_values[axis] >= 0 && ix.extent > p.dim_values[axis])
          error(ix.index->loc, str("slice of length ", ix.extent, " is longer than dimension ",
                                   axis, " of '", p.name, "' (", p.dim_values[axis], ")"));
      } else if (!t.is_scalar()) {
        if (t.rank() != 1)
          error(ix.index->loc, str("a gather index must be a rank-1 tile, got ", t.str()));
        ix.kind = ir::AccessIndex::Kind::Gather;
      } else if (ix.zip >= 0) {
        error(ix.index->loc, str("zip(...) pairs index tiles; '", ir::print_expr(*ix.index),
                                 "' is a scalar (write it as a subscript of its own)"));
      }
      if (ix.zip >= 0) {
        auto [it, first] = zip_first.emplace(ix.zip, ix.index.get());
        if (!first && it->second->type.shape != t.shape)
          error(ix.index->loc, str("zip(...) pairs index tiles of one length; got ",
                                   shape_str(it->second->type.shape), " and ", shape_str(t.shape)));
      }
      ++axis;
    }
    return a.shape();
  }

  /// For an access of more than two axes: the hint that gathers multiply out.
  static std::string gather_rank_hint(const ir::Access& a) {
    std::vector<std::string> separate;
    for (const auto& ix : a.indices)
      if (ix.kind == ir::AccessIndex::Kind::Gather && ix.zip < 0)
        separate.push_back(ir::print_expr(*ix.index));
    if (a.gather_axes() < 2 || separate.size() < 2) return "";
    return str("; the index tiles ", join(separate, " and "),
               " each add an axis (an outer product): to pair them element by element, write "
               "zip(",
               join(separate, ", "), ")");
  }

  void expr(ExprPtr& e) {
    switch (e->kind) {
    case ExprKind::Const:
      float_constant_fits(*e, e->type.dtype);
      return;
    case ExprKind::VarRef:
      e->type = e->var->type;
      return;
    case ExprKind::ParamRef:
      e->type = Type{k_.params[e->param].dtype, {}, Space::Scalar};
      return;
    case ExprKind::DimRef:
    case ExprKind::ProgramId:
    case ExprKind::NumPrograms:
      e->type = Type{DType::I32, {}, Space::Scalar};
      return;
    case ExprKind::Iota:
      e->type = Type{DType::I32, {e->extent}, Space::Frag};
      return;
    case ExprKind::Unary: {
      expr(e->a);
      e->type = e->a->type;
      e->type.space = tile_space(*e->a);
      if (e->unary_op == dsl::UnaryOp::Not && e->type.dtype != DType::Bool)
        error(e->loc, str("'!' needs a bool, got ", e->type.str()));
      if (e->unary_op == dsl::UnaryOp::BitNot && !dtype_is_int(e->type.dtype))
        error(e->loc, str("'~' needs an integer, got ", e->type.str()));
      if (e->unary_op == dsl::UnaryOp::Neg && e->type.dtype == DType::Bool)
        error(e->loc, "'-' on a bool; use '!'");
      e->literal = e->a->literal;
      e = fold(std::move(e));
      return;
    }
    case ExprKind::Binary:
      binary(e);
      return;
    case ExprKind::Select: {
      expr(e->a);
      expr(e->b);
      expr(e->c);
      if (e->a->type.dtype != DType::Bool)
        error(e->a->loc, str("where's condition must be bool, got ", e->a->type.str()));
      auto s1 = broadcast(e->a->type.shape, e->b->type.shape);
      auto s2 = s1 ? broadcast(*s1, e->c->type.shape) : std::nullopt;
      if (!s2)
        error(e->loc, str("where(...) operands do not broadcast: ", shape_str(e->a->type.shape),
                          ", ", shape_str(e->b->type.shape), ", ", shape_str(e->c->type.shape)));
      DType t = promote(*e->b, *e->c);
      e->b = cast_to(std::move(e->b), t);
      e->c = cast_to(std::move(e->c), t);
      e->type = Type{t, *s2, s2->empty() ? Space::Scalar : Space::Frag};
      e = fold(std::move(e));
      return;
    }
    case ExprKind::Math:
      math(e);
      return;
    case ExprKind::Cast: {
      DType t = e->type.dtype;
      expr(e->a);
      e->type = e->a->type;
      e->type.dtype = t;
      e->type.space = tile_space(*e->a);
      e = fold(std::move(e));
      return;
    }
    case ExprKind::Unpack: {
      DType t = e->type.dtype;
      expr(e->a);
      const Type& w = e->a->type;
      if (t != DType::F16 && t != DType::BF16 && t != DType::F32)
        error(e->loc, str("unpack4<", dtype_name(t),
                          ">: the values can be f16, bf16 or f32 (0..15 are exact in each)"));
      if (w.is_scalar())
        error(e->loc, "unpack4 of a scalar; it unpacks a tile of 32-bit words (load a range)");
      if (w.dtype != DType::I32 && w.dtype != DType::U32)
        error(e->loc, str("unpack4 unpacks 32-bit words (i32 or u32), not ", dtype_name(w.dtype)));
      std::vector<int64_t> shape = w.shape;
      shape.back() *= 32 / e->extent;
      e->type = Type{t, shape, Space::Frag};
      if (e->b) {
        expr(e->b);
        const Type& z = e->b->type;
        if (!dtype_is_int(z.dtype) || z.dtype == DType::Bool)
          error(e->b->loc, str("unpack4's zero point is an integer (its low 4 bits are used), not ",
                               dtype_name(z.dtype)));
        const bool per_row =
            z.rank() == 2 && shape.size() == 2 && z.shape[0] == shape[0] && z.shape[1] == 1;
        if (!z.is_scalar() && !per_row)
          error(e->b->loc, str("unpack4's zero point is a scalar or one per row of the values (",
                               shape.size() == 2 ? str("[", shape[0], ", 1]: write z[:, None]")
                                                 : std::string("rank-1 values take a scalar"),
                               "), not ", z.str()));
        if (z.dtype != DType::I32) e->b = cast_to(std::move(e->b), DType::I32);
      }
      return;
    }
    case ExprKind::Expand: {
      expr(e->a);
      const Type& t = e->a->type;
      if (t.is_scalar()) error(e->loc, "a scalar cannot be indexed");
      if (e->int_value != t.rank())
        error(e->loc, str("'", ir::print_expr(*e->a), "' has rank ", t.rank(),
                          " but the subscript names ", e->int_value, " of its axes"));
      std::vector<int64_t> shape = t.shape;
      for (int ax : e->axes) shape.insert(shape.begin() + ax, 1);
      if (shape.size() > 2)
        error(e->loc, str("'", ir::print_expr(*e->a), "' with new axes has shape ",
                          shape_str(shape), "; tiles have rank 1 or 2"));
      e->type = Type{t.dtype, shape, Space::Frag};
      if (e->axes.empty()) e = std::move(e->a); // x[:, :] is x
      return;
    }
    case ExprKind::Trans: {
      expr(e->a);
      if (e->a->type.rank() != 2)
        error(e->loc, str("trans needs a rank-2 tile, got ", e->a->type.str()));
      e->type = e->a->type;
      std::swap(e->type.shape[0], e->type.shape[1]);
      return;
    }
    case ExprKind::Load:
    case ExprKind::Copy: {
      std::vector<int64_t> shape = access(*e->access);
      const ir::Param& p = k_.params[e->access->param];
      if (e->kind == ExprKind::Copy && shape.empty())
        error(e->loc,
              "copy(...) fills a shared tile; this access names a single element (use load)");
      if (e->b) mask(e->b, shape);
      if (e->c) {
        expr(e->c);
        if (!e->c->type.is_scalar()) error(e->c->loc, "'other' must be a scalar");
        e->c = cast_to(std::move(e->c), p.dtype);
      }
      e->type = Type{p.dtype, shape,
                     shape.empty()               ? Space::Scalar
                     : e->kind == ExprKind::Copy ? Space::Shared
                                                 : Space::Frag};
      if (e->type.space == Space::Frag && e->type.rank() > 2)
        error(e->loc, str("load(...) gives a rank-", e->type.rank(),
                          " tile; register tiles have rank 1 or 2 "
                          "(use point subscripts for the other axes)",
                          gather_rank_hint(*e->access)));
      if (e->type.space == Space::Shared && e->type.rank() > 2)
        error(e->loc, str("copy(...) gives a rank-", e->type.rank(),
                          " tile; shared tiles have rank 1 or 2 "
                          "(use point subscripts for the other axes)",
                          gather_rank_hint(*e->access)));
      return;
    }
    case ExprKind::SharedSlice: {
      expr(e->a);
      expr(e->b);
      const Type& t = e->a->type;
      // The backend reads windows of a tile variable; a window of a window has no variable
      // under it (the lowering fuzz test found s[0 : 8][0 : 4] reaching the emitter).
      if (e->a->kind == ExprKind::SharedSlice) {
        error(e->loc, "a slice of a slice of a shared tile: slice the tile once "
                      "(s[a + b : a + b + N] for s[a : a + M][b : b + N])");
        return;
      }
      if (t.space != Space::Shared)
        error(e->loc, str("only shared tiles can be sliced; '", ir::print_expr(*e->a), "' is ",
                          t.str_with_space()));
      if (e->int_value != t.rank())
        error(e->loc, str("'", ir::print_expr(*e->a), "' has rank ", t.rank(), " but ",
                          e->int_value, " subscripts were given"));
      if (e->extent > t.shape[0])
        error(e->loc,
              str("slice of length ", e->extent, " is longer than the tile (", t.shape[0], ")"));
      require_int_scalar(*e->b, "slice start");
      e->b = cast_to(std::move(e->b), DType::I32);
      e->type = t;
      e->type.shape[0] = e->extent;
      if (!e->axes.empty()) { // a row: axis 0 dropped
        if (t.rank() != 2) error(e->loc, str("s[i, :] needs a rank-2 shared tile, got ", t.str()));
        e->type.shape.erase(e->type.shape.begin());
      }
      return;
    }
    case ExprKind::Dot:
      dot(e);
      return;
    case ExprKind::Reduce: {
      if (e->axis == ir::kSumToLike) {
        sum_to(e, nullptr);
        return;
      }
      expr(e->a);
      const Type& t = e->a->type;
      if (t.is_scalar()) error(e->loc, "reduce of a scalar");
      if (t.dtype == DType::Bool) error(e->loc, "reduce of a bool tile; cast it first");
      DType rt = t.dtype;
      if (rt == DType::F16 || rt == DType::BF16) rt = DType::F32; // reductions run in f32
      if (e->axis < -1 || e->axis >= t.rank())
        error(e->loc, str("axis ", e->axis, " out of range for a rank-", t.rank(), " tile"));
      if (e->axis == -1 || t.rank() == 1) {
        e->axis = -1;
        e->type = Type{rt, {}, Space::Scalar};
      } else {
        std::vector<int64_t> shape = t.shape;
        shape.erase(shape.begin() + e->axis);
        e->type = Type{rt, shape, Space::Frag};
      }
      if (rt != t.dtype) e->a = cast_to(std::move(e->a), rt);
      fold_reduce_of_new_axis(e);
      return;
    }
    case ExprKind::Scan: {
      expr(e->a);
      const Type& t = e->a->type;
      if (t.is_scalar()) error(e->loc, "cumsum of a scalar");
      if (e->axis == -1) e->axis = t.rank() - 1;
      if (e->axis < 0 || e->axis >= t.rank())
        error(e->loc, str("axis ", e->axis, " out of range for a rank-", t.rank(), " tile"));
      DType rt = t.dtype;
      if (rt == DType::F16 || rt == DType::BF16) rt = DType::F32;
      if (rt == DType::Bool) error(e->loc, "cumsum of a bool tile; cast it first");
      e->a = cast_to(std::move(e->a), rt);
      e->type = Type{rt, t.shape, Space::Frag};
      return;
    }
    case ExprKind::SolveTril: {
      expr(e->a);
      const Type& t = e->a->type;
      if (t.rank() != 2 || t.shape[0] != t.shape[1])
        error(e->loc, str("solve_tril takes a square [C, C] tile; this one is ",
                          t.is_scalar() ? std::string("a scalar") : shape_str(t.shape)));
      if (!dtype_is_float(t.dtype))
        error(e->loc, str("solve_tril of a ", dtype_name(t.dtype), " tile; it takes floats"));
      if (t.shape[0] > 256)
        error(e->loc, str("solve_tril of a [", t.shape[0], ", ", t.shape[1],
                          "] tile: at most 256 rows (it is solved in shared memory)"));
      e->a = cast_to(std::move(e->a), DType::F32);
      e->type = Type{DType::F32, t.shape, Space::Frag};
      return;
    }
    case ExprKind::ClusterSum: {
      expr(e->a);
      const Type& t = e->a->type;
      if (t.space == Space::Shared)
        error(e->loc, "cluster_sum of a shared tile; load it into a frag first");
      if (t.dtype != DType::F32 && t.dtype != DType::I32)
        error(e->loc, str("cluster_sum adds f32 or i32 values, got ", dtype_name(t.dtype),
                          " (cast it: cluster_sum(cast<f32>(x)))"));
      e->type = t;
      return;
    }
    case ExprKind::AtomicAdd: {
      std::vector<int64_t> shape = access(*e->access);
      const ir::Param& p = k_.params[e->access->param];
      if (p.dtype != DType::I32 && p.dtype != DType::U32 && p.dtype != DType::F32)
        error(e->loc, str("atomic_add works on i32, u32 and f32 tensors; '", p.name, "' is ",
                          dtype_name(p.dtype)));
      if (shape.size() > 2)
        error(e->loc, str("atomic_add to ", p.name, " names a rank-", shape.size(),
                          " tile; tiles have rank 1 or 2 (use point subscripts for the other "
                          "axes)",
                          gather_rank_hint(*e->access)));
      expr(e->a);
      auto b = broadcast(e->a->type.shape, shape);
      if (!b || *b != shape)
        error(e->a->loc, str("atomic_add to ", p.name, " of shape ", shape_str(shape),
                             " with a value of shape ", shape_str(e->a->type.shape)));
      e->a = cast_to(std::move(e->a), p.dtype);
      if (e->b) mask(e->b, shape);
      if (!shape.empty() && e.get() != statement_atomic_)
        error(e->loc, str("atomic_add on a tile (", p.name, shape_str(shape),
                          ") is a statement and returns nothing; only an atomic_add of one element "
                          "returns the old value"));
      e->type = Type{p.dtype, shape, shape.empty() ? Space::Scalar : Space::Frag};
      return;
    }
    case ExprKind::Fence:
      e->type = Type{DType::I32, {}, Space::Scalar};
      return;
    case ExprKind::Prefetch: {
      std::vector<int64_t> shape = access(*e->access);
      if (shape.size() > 2)
        error(e->loc, str("prefetch names a rank-", shape.size(),
                          " tile; use point subscripts for all but two axes",
                          gather_rank_hint(*e->access)));
      // Typed as the tile it names (a statement: the value is never used).
      e->type = Type{k_.params[e->access->param].dtype, shape, Space::Frag};
      return;
    }
    case ExprKind::Convert:
      return;
    }
  }

  void binary(ExprPtr& e) {
    using dsl::BinaryOp;
    expr(e->a);
    expr(e->b);
    auto shape = broadcast(e->a->type.shape, e->b->type.shape);
    if (!shape)
      error(e->loc,
            str("shapes ", shape_str(e->a->type.shape), " and ", shape_str(e->b->type.shape),
                " do not broadcast in '", dsl::binary_op_spelling(e->binary_op),
                "' (add a new axis with x[:, None] or x[None, :])"));
    Space space = shape->empty() ? Space::Scalar : Space::Frag;
    BinaryOp op = e->binary_op;
    DType t = promote(*e->a, *e->b);
    bool cmp = op == BinaryOp::Lt || op == BinaryOp::Le || op == BinaryOp::Gt ||
               op == BinaryOp::Ge || op == BinaryOp::Eq || op == BinaryOp::Ne;
    bool logic = op == BinaryOp::And || op == BinaryOp::Or;
    bool shift = op == BinaryOp::Shl || op == BinaryOp::Shr;
    bool bits = op == BinaryOp::BitAnd || op == BinaryOp::BitOr || op == BinaryOp::BitXor || shift;
    // Checked on the operands, not on the promoted dtype: `n + true` promotes to i32.
    bool any_bool = e->a->type.dtype == DType::Bool || e->b->type.dtype == DType::Bool;
    if (logic) {
      if (e->a->type.dtype != DType::Bool || e->b->type.dtype != DType::Bool)
        error(e->loc, str("'", dsl::binary_op_spelling(op), "' needs bool operands, got ",
                          e->a->type.str(), " and ", e->b->type.str()));
    } else if (bits) {
      bool ok = shift ? dtype_is_int(t) && !any_bool : dtype_is_int(t) || t == DType::Bool;
      if (!ok)
        error(e->loc, str("'", dsl::binary_op_spelling(op), "' needs integer operands, got ",
                          e->a->type.str(), " and ", e->b->type.str()));
    } else if (!cmp && any_bool) {
      error(e->loc, str("arithmetic on bools; cast<i32>(...) first"));
    }
    // An integer division by a constant zero is an error for every element (the interpreter's
    // meaning); the GPU would give an undefined result without a word.
    if ((op == BinaryOp::Div || op == BinaryOp::Mod) && dtype_is_int(t) &&
        e->b->kind == ExprKind::Const && dtype_is_int(e->b->type.dtype) && e->b->int_value == 0)
      error(e->b->loc, str(op == BinaryOp::Div ? "division" : "modulo", " by zero"));
    e->a = cast_to(std::move(e->a), t);
    e->b = cast_to(std::move(e->b), t);
    e->literal = e->a->literal && e->b->literal;
    e->type = Type{cmp ? DType::Bool : t, *shape, space};
    e = fold(std::move(e));
  }

  void math(ExprPtr& e) {
    expr(e->a);
    if (e->b) expr(e->b);
    std::vector<int64_t> shape = e->a->type.shape;
    DType t = e->a->type.dtype;
    if (e->b) {
      auto s = broadcast(e->a->type.shape, e->b->type.shape);
      if (!s)
        error(e->loc, str(ir::math_fn_name(e->math), ": shapes ", shape_str(e->a->type.shape),
                          " and ", shape_str(e->b->type.shape), " do not broadcast"));
      shape = *s;
      t = promote(*e->a, *e->b);
    }
    bool int_ok =
        e->math == ir::MathFn::Min || e->math == ir::MathFn::Max || e->math == ir::MathFn::Abs;
    if (t == DType::Bool) error(e->loc, str(ir::math_fn_name(e->math), " of a bool"));
    if (!int_ok && !dtype_is_float(t)) t = DType::F32;
    e->a = cast_to(std::move(e->a), t);
    if (e->b) e->b = cast_to(std::move(e->b), t);
    e->literal = e->a->literal && (!e->b || e->b->literal);
    e->type = Type{t, shape, shape.empty() ? Space::Scalar : Space::Frag};
    e = fold(std::move(e));
  }

  void dot(ExprPtr& e) {
    expr(e->a);
    expr(e->b);
    const Type& a = e->a->type;
    const Type& b = e->b->type;
    if (a.rank() != 2 || b.rank() != 2)
      error(e->loc, str("dot needs rank-2 tiles, got ", a.str(), " and ", b.str()));
    if (a.shape[1] != b.shape[0])
      error(e->loc,
            str("dot(", a.str(), ", ", b.str(), "): inner dimensions ", a.shape[1], " and ",
                b.shape[0], " differ", b.shape[1] == a.shape[1] ? "; did you mean trans(b)?" : ""));
    if (a.dtype != b.dtype)
      error(e->loc, str("dot operands must have one dtype, got ", dtype_name(a.dtype), " and ",
                        dtype_name(b.dtype)));
    if (a.dtype != DType::F16 && a.dtype != DType::BF16 && a.dtype != DType::F32)
      error(e->loc, str("dot takes f16, bf16 or f32 tiles, got ", dtype_name(a.dtype)));
    e->type = Type{DType::F32, {a.shape[0], b.shape[1]}, Space::Frag};
    if (e->c) {
      expr(e->c);
      if (e->c->type.shape != e->type.shape || e->c->type.dtype != DType::F32)
        error(e->c->loc, str("dot's accumulator must be f32", shape_str(e->type.shape), ", got ",
                             e->c->type.str()));
    }
  }

  ir::Kernel& k_;
  dsl::DiagnosticSink sink_;
  /// The atomic_add that stands alone as the current statement (its tile form returns nothing).
  const ir::Expr* statement_atomic_ = nullptr;
};

} // namespace

/// Register tiles with a unit axis ([N, 1], [1, N]) are kept as rank-1 tiles read through
/// x[:, None] / x[None, :], when every value assigned to them can drop that axis: then they
/// broadcast against [N, M] (and [M, N]) tiles the way rank-1 row vectors do, in the Slice
/// layout of whatever layout they are combined with, for free. A variable whose values cannot
/// drop the axis (a load, a dot) stays rank 2; assign_layouts stages it through shared memory
/// where it is broadcast.
class UnitAxisVariables {
public:
  explicit UnitAxisVariables(ir::Kernel& k) : k_(k) {}

  void run() {
    // Candidates: rank-2 frag variables with a unit axis (axis 1 of [1, 1]).
    for (const auto& v : k_.vars)
      if (v->type.space == Space::Frag && v->type.rank() == 2 && !v->is_loop_var &&
          (v->type.shape[1] == 1 || v->type.shape[0] == 1))
        axis_[v.get()] = v->type.shape[1] == 1 ? 1 : 0;
    if (axis_.empty()) return;
    // A variable stays a candidate while every value assigned to it can drop its unit axis
    // (which may depend on other candidates): shrink to a fixed point.
    for (bool changed = true; changed;) {
      changed = false;
      ir::for_each_stmt(k_.body, [&](ir::Stmt& s) {
        if ((s.kind == ir::StmtKind::Decl || s.kind == ir::StmtKind::Assign) &&
            axis_.count(s.var) && !squeezable(*s.value, axis_[s.var])) {
          axis_.erase(s.var);
          changed = true;
        }
      });
    }
    if (axis_.empty()) return;
    ir::for_each_stmt(k_.body, [&](ir::Stmt& s) {
      if ((s.kind == ir::StmtKind::Decl || s.kind == ir::StmtKind::Assign) && axis_.count(s.var))
        s.value = squeeze(std::move(s.value), axis_[s.var]);
    });
    for (auto& [v, axis] : axis_) {
      old_type_[v] = v->type;
      v->type.shape.erase(v->type.shape.begin() + axis);
    }
    // Every other read sees the rank-2 value it saw before: x[:, None] (or x[None, :]).
    ir::for_each_stmt(k_.body, [&](ir::Stmt& s) {
      ir::for_each_expr_root(s, [&](ExprPtr& root) { expand_reads(root); });
    });
  }

private:
  /// Whether `e` (rank 2, unit axis `axis`) can be rewritten with that axis dropped.
  bool squeezable(const ir::Expr& e, int axis) const {
    if (e.type.is_scalar()) return true;
    if (e.type.rank() != 2 || e.type.shape[axis] != 1) return e.type.rank() == 1;
    switch (e.kind) {
    case ExprKind::Expand:
      return e.a->type.rank() == 1;
    case ExprKind::VarRef:
      return axis_.count(e.var) > 0;
    case ExprKind::Unary:
    case ExprKind::Binary:
    case ExprKind::Select:
    case ExprKind::Math:
    case ExprKind::Cast:
      for (const ir::Expr* op : {e.a.get(), e.b.get(), e.c.get()})
        if (op && !squeezable(*op, axis)) return false;
      return true;
    case ExprKind::Scan:
      return squeezable(*e.a, axis);
    default:
      return false;
    }
  }

  /// `e` with unit axis `axis` dropped (squeezable(e, axis) holds). Scalar and rank-1
  /// operands stay: they broadcast against the rank-1 result as they did against the rank-2.
  ExprPtr squeeze(ExprPtr e, int axis) {
    if (e->type.rank() != 2) return e;
    std::vector<int64_t> shape = e->type.shape;
    shape.erase(shape.begin() + axis);
    switch (e->kind) {
    case ExprKind::Expand:
      return std::move(e->a); // x[:, None] -> x ([1] -> [1, 1] -> [1] whichever axis)
    case ExprKind::VarRef:
      e->type.shape = shape; // the variable's new type
      return e;
    case ExprKind::Scan:
      if (e->axis == axis) return squeeze(std::move(e->a), axis); // a scan over one element
      e->axis = 0;
      break;
    default:
      break;
    }
    for (ExprPtr* op : {&e->a, &e->b, &e->c})
      if (*op) *op = squeeze(std::move(*op), axis);
    e->type.shape = shape;
    return e;
  }

  void expand_reads(ExprPtr& e) {
    for (ExprPtr* op : {&e->a, &e->b, &e->c})
      if (*op) expand_reads(*op);
    if (e->access)
      for (auto& ix : e->access->indices) expand_reads(ix.index);
    fold_reduce_of_new_axis(e);
    if (e->kind != ExprKind::VarRef || !axis_.count(e->var) || e->type.rank() != 2) return;
    const Type rank2 = old_type_.at(e->var);
    auto x = std::make_unique<ir::Expr>(ExprKind::Expand, e->loc);
    x->axes = {axis_.at(e->var)};
    x->int_value = 1;
    x->type = Type{rank2.dtype, rank2.shape, Space::Frag};
    e->type = e->var->type;
    x->a = std::move(e);
    e = std::move(x);
  }

  ir::Kernel& k_;
  std::map<ir::Var*, int> axis_; ///< variables kept rank 1: the unit axis dropped
  std::map<ir::Var*, Type> old_type_;
};

void infer_types(ir::Kernel& k) {
  TypeInference(k).run();
  UnitAxisVariables(k).run();
}

} // namespace tilejit
