// Name resolution and structural checks over the AST. Scoping rules (dsl/README.md):
// kernel-level names (generics, tunables, parameters, runtime dims) are visible everywhere;
// locals live in their block; nothing may shadow anything.
#include "dsl/checker.h"

#include "dsl/ast_printer.h"
#include "dsl/builtins.h"

#include <map>
#include <set>
#include <unordered_map>

namespace tilejit::dsl {
namespace {

enum class NameKind { Generic, Tunable, TensorParam, ScalarParam, Dim, Constant, Local, LoopVar };

const char* name_kind_text(NameKind k) {
  switch (k) {
  case NameKind::Generic:
    return "generic parameter";
  case NameKind::Tunable:
    return "tunable";
  case NameKind::TensorParam:
    return "tensor parameter";
  case NameKind::ScalarParam:
    return "scalar parameter";
  case NameKind::Dim:
    return "runtime size";
  case NameKind::Constant:
    return "built-in constant";
  case NameKind::Local:
    return "variable";
  case NameKind::LoopVar:
    return "loop variable";
  }
  return "name";
}

/// Where an expression appears decides which names it may use.
enum class Context { Where, Threads, BlocksPerSm, Cluster, HostExpr, Body, TensorDim };

class Checker {
public:
  explicit Checker(DiagnosticSink& sink) : sink_(sink) {}

  void check_kernel(const Kernel& k) {
    globals_.clear();
    scopes_.clear();
    declare_global("SMEM", NameKind::Constant, k.loc);
    declare_global("inf", NameKind::Constant, k.loc);
    for (const auto& g : k.generics) {
      check_choice(g.choice, g.name);
      declare_global(g.name, NameKind::Generic, g.loc);
      if (g.choice.is_dtype) dtype_generics_.insert(g.name);
    }
    for (const auto& t : k.tunables) {
      if (t.choice.is_dtype)
        sink_.error(t.choice.loc, str("tunable '", t.name, "' must take integer values"));
      check_choice(t.choice, t.name);
      declare_global(t.name, NameKind::Tunable, t.loc);
    }
    // Parameters first (so dims may be named after them in any order), then their dims.
    for (const auto& p : k.params) {
      if (is_dtype_name(p.type.dtype) || dtype_generics_.count(p.type.dtype)) {
        declare_global(p.name, p.type.has_dims ? NameKind::TensorParam : NameKind::ScalarParam,
                       p.loc);
      } else {
        sink_.error(p.type.loc,
                    str("unknown dtype '", p.type.dtype, "' for parameter '", p.name, "'"));
        declare_global(p.name, NameKind::ScalarParam, p.loc);
      }
      if (!p.type.has_dims && p.is_scratch)
        sink_.error(p.loc, str("scratch parameter '", p.name, "' must be a tensor"));
    }
    for (const auto& p : k.params) {
      if (!p.type.has_dims) continue;
      if (p.type.dims.empty())
        sink_.error(p.type.loc, str(p.is_scratch ? "scratch tensor '" : "tensor '", p.name,
                                    "' needs at least one dimension"));
      if (p.is_scratch) continue; // its dims are host expressions, checked below
      for (const auto& d : p.type.dims) {
        if (d->kind == ExprKind::Binary && d->binary_op == BinaryOp::BitOr) {
          check_broadcast_dim(p, *d);
          continue;
        }
        if (d->kind == ExprKind::Name) plain_dims_.insert(d->name);
        if (d->kind == ExprKind::Name) {
          auto it = globals_.find(d->name);
          if (dtype_generics_.count(d->name)) {
            sink_.error(d->loc, str("dimension '", d->name, "' of '", p.name,
                                    "' names a dtype generic; dimensions are sizes"));
          } else if (it == globals_.end()) {
            declare_global(d->name, NameKind::Dim, d->loc);
          } else if (it->second.kind != NameKind::Dim && it->second.kind != NameKind::Generic &&
                     it->second.kind != NameKind::Tunable) {
            sink_.error(d->loc, str("dimension '", d->name, "' of '", p.name, "' names a ",
                                    name_kind_text(it->second.kind), "; dimensions are sizes"));
          }
        } else if (d->kind != ExprKind::IntLit) {
          sink_.error(
              d->loc,
              str("a dimension of input tensor '", p.name,
                  "' must be a name or an integer (expressions are allowed for scratch tensors)"));
        } else if (d->int_value <= 0) {
          sink_.error(d->loc, str("dimension must be positive, got ", d->int_value));
        }
      }
    }
    // A size named only in 1|X dimensions would have no value when every such argument has
    // size 1.
    for (const auto& [name, loc] : broadcast_sizes_) {
      auto it = globals_.find(name);
      bool fixed = plain_dims_.count(name) ||
                   (it != globals_.end() &&
                    (it->second.kind == NameKind::Generic || it->second.kind == NameKind::Tunable));
      if (!fixed)
        sink_.error(loc, str("'", name, "' in 1|", name,
                             " must also be a plain dimension of a tensor (or a generic or "
                             "tunable), so that its size is known when every such argument has "
                             "size 1"));
    }
    for (const auto& p : k.params)
      if (p.is_scratch && p.type.has_dims)
        for (const auto& d : p.type.dims) {
          if (broadcast_dim_target(*d))
            sink_.error(d->loc, str("scratch tensor '", p.name,
                                    "' is allocated at its full size: a broadcast dimension 1|",
                                    expr_to_string(*broadcast_dim_target(*d)),
                                    " only applies to a caller's tensor"));
          check_expr(*d, Context::TensorDim);
        }
    for (const auto& w : k.where) check_expr(*w, Context::Where);
    for (const auto& r : k.require) check_expr(*r, Context::HostExpr);
    if (k.grid.empty()) {
      sink_.error(k.loc, str("kernel '", k.name, "' needs a 'grid (...)' clause"));
    } else if (k.grid.size() > 3) {
      sink_.error(k.grid_loc, str("a grid has at most 3 extents, got ", k.grid.size()));
    }
    for (const auto& g : k.grid) check_expr(*g, Context::HostExpr);
    if (k.threads) check_expr(*k.threads, Context::Threads);
    if (k.blocks_per_sm) check_expr(*k.blocks_per_sm, Context::BlocksPerSm);
    if (k.cluster.size() > k.grid.size() && !k.grid.empty())
      sink_.error(k.cluster_loc, str("a cluster has at most as many extents as the grid (",
                                     k.grid.size(), "), got ", k.cluster.size()));
    for (const auto& c : k.cluster) check_expr(*c, Context::Cluster);
    push_scope();
    check_stmts(k.body);
    pop_scope();
  }

private:
  struct NameInfo {
    NameKind kind;
    SourceLoc loc;
  };

  void check_choice(const Choice& c, const std::string& owner) {
    if (c.is_dtype) {
      std::set<std::string> seen;
      for (const auto& n : c.names) {
        if (!is_dtype_name(n))
          sink_.error(c.loc, str("'", n, "' is not a dtype (in '", owner, "')"));
        if (!seen.insert(n).second)
          sink_.error(c.loc, str("'", n, "' listed twice in '", owner, "'"));
      }
      if (c.has_default && !seen.count(c.default_name))
        sink_.error(c.loc, str("default '", c.default_name, "' of '", owner,
                               "' is not one of its choices"));
    } else {
      std::set<int64_t> seen;
      for (int64_t v : c.ints)
        if (!seen.insert(v).second)
          sink_.error(c.loc, str("value ", v, " listed twice in '", owner, "'"));
      if (c.has_default && !seen.count(c.default_int))
        sink_.error(c.loc,
                    str("default ", c.default_int, " of '", owner, "' is not one of its choices"));
    }
  }

  void declare_global(const std::string& name, NameKind kind, const SourceLoc& loc) {
    if (is_dtype_name(name) || find_builtin(name)) {
      sink_.error(loc, str("'", name, "' is a reserved name"));
      return;
    }
    auto [it, inserted] = globals_.emplace(name, NameInfo{kind, loc});
    if (!inserted && !(kind == NameKind::Constant))
      sink_.error(loc, str("'", name, "' is already declared as a ",
                           name_kind_text(it->second.kind), " at line ", it->second.loc.line));
  }

  /// A dimension `1|X` of a caller's tensor: size X, or 1 broadcast to X (dsl/README.md,
  /// "Broadcast dimensions"). Anything else spelled with '|' is diagnosed with the fix.
  void check_broadcast_dim(const Param& p, const Expr& d) {
    const Expr* to = broadcast_dim_target(d);
    auto operand = [](const Expr& x) {
      return x.kind == ExprKind::Name || x.kind == ExprKind::IntLit;
    };
    if (!to) {
      if (operand(*d.lhs) && d.rhs->kind == ExprKind::IntLit && d.rhs->int_value == 1)
        sink_.error(d.loc, str("write a broadcast dimension with the 1 first: 1|",
                               expr_to_string(*d.lhs), " (in '", p.name, "')"));
      else if (d.lhs->kind == ExprKind::IntLit && operand(*d.rhs))
        sink_.error(d.loc, str("only a dimension of size 1 broadcasts: write 1|",
                               expr_to_string(*d.rhs), " (in '", p.name, "')"));
      else
        sink_.error(d.loc, str("a dimension of input tensor '", p.name,
                               "' must be a name, an integer, or 1|NAME (size NAME, or 1 "
                               "broadcast to it)"));
      return;
    }
    broadcast_tensors_.insert(p.name);
    if (to->kind == ExprKind::IntLit) {
      if (to->int_value <= 1)
        sink_.error(to->loc, str("1|", to->int_value, " is not a broadcast dimension; write ",
                                 to->int_value <= 0 ? "a positive size" : "1"));
      return;
    }
    auto it = globals_.find(to->name);
    if (dtype_generics_.count(to->name)) {
      sink_.error(to->loc, str("dimension '", to->name, "' of '", p.name,
                               "' names a dtype generic; dimensions are sizes"));
    } else if (it == globals_.end()) {
      declare_global(to->name, NameKind::Dim, to->loc);
    } else if (it->second.kind != NameKind::Dim && it->second.kind != NameKind::Generic &&
               it->second.kind != NameKind::Tunable) {
      sink_.error(to->loc, str("dimension '", to->name, "' of '", p.name, "' names a ",
                               name_kind_text(it->second.kind), "; dimensions are sizes"));
      return;
    }
    broadcast_sizes_.emplace(to->name, to->loc);
  }

  void push_scope() { scopes_.emplace_back(); }
  void pop_scope() { scopes_.pop_back(); }

  const NameInfo* lookup(const std::string& name) const {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
      auto it = s->find(name);
      if (it != s->end()) return &it->second;
    }
    auto it = globals_.find(name);
    return it == globals_.end() ? nullptr : &it->second;
  }

  void declare_local(const std::string& name, NameKind kind, const SourceLoc& loc) {
    if (is_dtype_name(name) || find_builtin(name)) {
      sink_.error(loc, str("'", name, "' is a reserved name"));
      return;
    }
    if (const NameInfo* prev = lookup(name)) {
      sink_.error(loc, str("'", name, "' is already declared as a ", name_kind_text(prev->kind),
                           " at line ", prev->loc.line, "; pick another name"));
      return;
    }
    scopes_.back().emplace(name, NameInfo{kind, loc});
  }

  void check_type(const TypeExpr& t) {
    if (!is_dtype_name(t.dtype) && !dtype_generics_.count(t.dtype))
      sink_.error(t.loc, str("unknown dtype '", t.dtype, "'"));
    for (const auto& d : t.dims) check_expr(*d, Context::Body);
  }

  void check_stmts(const std::vector<StmtPtr>& stmts) {
    for (const auto& s : stmts) check_stmt(*s);
  }

  void check_stmt(const Stmt& s) {
    switch (s.kind) {
    case StmtKind::Let:
      if (s.type) check_type(*s.type);
      check_expr(*s.value, Context::Body);
      declare_local(s.name, NameKind::Local, s.loc);
      break;
    case StmtKind::Assign: {
      check_expr(*s.value, Context::Body);
      const NameInfo* info = lookup(s.name);
      if (!info) {
        sink_.error(s.loc, str("assignment to undeclared '", s.name,
                               "'; declare it first with let, frag or shared"));
      } else if (info->kind != NameKind::Local) {
        sink_.error(s.loc, str("cannot assign to ", name_kind_text(info->kind), " '", s.name, "'"));
      }
      break;
    }
    case StmtKind::ExprStmt:
      check_expr(*s.value, Context::Body);
      if (s.value->kind != ExprKind::Call)
        sink_.warning(s.loc, "expression statement has no effect");
      break;
    case StmtKind::For: {
      static const std::set<std::string> kinds = {"range", "serial", "pipelined"};
      if (!kinds.count(s.range_kind)) {
        sink_.error(s.range_loc, str("unknown loop kind '", s.range_kind,
                                     "'; expected range, serial or pipelined"));
      }
      if (s.range_args.size() < 2 || s.range_args.size() > 3)
        sink_.error(s.range_loc, str(s.range_kind, "(lo, hi[, step]) takes 2 or 3 arguments, got ",
                                     s.range_args.size()));
      for (const auto& kw : s.range_kwargs) {
        bool ok = ((kw.name == "stages" || kw.name == "producer") && s.range_kind == "pipelined") ||
                  (kw.name == "unroll" && s.range_kind != "pipelined");
        if (!ok)
          sink_.error(kw.loc, str("unknown keyword '", kw.name, "' for ", s.range_kind,
                                  s.range_kind == "pipelined" ? " (only 'stages' and 'producer')"
                                                              : " (only 'unroll')"));
        check_expr(*kw.value, Context::Body);
      }
      for (const auto& a : s.range_args) check_expr(*a, Context::Body);
      push_scope();
      declare_local(s.name, NameKind::LoopVar, s.loc);
      check_stmts(s.body);
      pop_scope();
      break;
    }
    case StmtKind::If:
      check_expr(*s.value, Context::Body);
      push_scope();
      check_stmts(s.body);
      pop_scope();
      push_scope();
      check_stmts(s.else_body);
      pop_scope();
      break;
    case StmtKind::Return:
      break;
    case StmtKind::Block:
      push_scope();
      check_stmts(s.body);
      pop_scope();
      break;
    }
  }

  bool allowed(NameKind k, Context c) const {
    switch (c) {
    case Context::Where:
      return k == NameKind::Generic || k == NameKind::Tunable || k == NameKind::Constant;
    case Context::Threads:
    case Context::BlocksPerSm:
    case Context::Cluster:
      return k == NameKind::Generic || k == NameKind::Tunable;
    case Context::HostExpr:
    case Context::TensorDim:
      return k == NameKind::Generic || k == NameKind::Tunable || k == NameKind::Dim ||
             k == NameKind::ScalarParam || k == NameKind::Constant;
    case Context::Body:
      return true;
    }
    return true;
  }

  static const char* context_text(Context c) {
    switch (c) {
    case Context::Where:
      return "a 'where' constraint (compile time: generics and tunables only)";
    case Context::Threads:
      return "'threads' (compile time: generics and tunables only)";
    case Context::BlocksPerSm:
      return "'blocks_per_sm' (compile time: generics and tunables only)";
    case Context::Cluster:
      return "'cluster' (compile time: generics and tunables only)";
    case Context::HostExpr:
      return "a host-side expression (sizes, scalars, generics, tunables only)";
    case Context::TensorDim:
      return "a scratch tensor's shape (sizes, scalars, generics, tunables only)";
    case Context::Body:
      return "the kernel body";
    }
    return "";
  }

  void check_expr(const Expr& e, Context ctx) {
    switch (e.kind) {
    case ExprKind::IntLit:
    case ExprKind::FloatLit:
    case ExprKind::BoolLit:
      return;
    case ExprKind::Name: {
      const NameInfo* info = lookup(e.name);
      // A dtype generic is declared like other generics but is a type, never a value.
      if (!info || dtype_generics_.count(e.name)) {
        if (is_dtype_name(e.name) || dtype_generics_.count(e.name))
          sink_.error(e.loc, str("dtype '", e.name, "' used as a value; did you mean cast<", e.name,
                                 ">(...)?"));
        else
          sink_.error(e.loc, str("unknown name '", e.name, "'"));
        return;
      }
      if (!allowed(info->kind, ctx))
        sink_.error(e.loc, str(name_kind_text(info->kind), " '", e.name, "' cannot be used in ",
                               context_text(ctx)));
      if (info->kind == NameKind::TensorParam && ctx == Context::Body)
        sink_.error(e.loc, str("tensor '", e.name,
                               "' must be indexed inside load/copy/store/atomic_add, e.g. load(",
                               e.name, "[i, :])"));
      return;
    }
    case ExprKind::Unary:
      check_expr(*e.lhs, ctx);
      return;
    case ExprKind::Binary:
      check_expr(*e.lhs, ctx);
      check_expr(*e.rhs, ctx);
      return;
    case ExprKind::Index:
      check_index(e, ctx, /*tensor_access_ok=*/false);
      return;
    case ExprKind::Call:
      check_call(e, ctx);
      return;
    }
  }

  void check_index(const Expr& e, Context ctx, bool tensor_access_ok) {
    if (e.lhs->kind != ExprKind::Name) {
      // A computed tile: x(...)[:, None], s[a : a + N][None, :].
      check_expr(*e.lhs, ctx);
    } else {
      const NameInfo* info = lookup(e.lhs->name);
      if (!info) {
        sink_.error(e.lhs->loc, str("unknown name '", e.lhs->name, "'"));
      } else if (info->kind == NameKind::TensorParam) {
        if (!tensor_access_ok)
          sink_.error(e.loc, str("tensor '", e.lhs->name,
                                 "' can only be indexed inside load/gather/copy/store/atomic_add"));
      } else if (info->kind != NameKind::Local) {
        sink_.error(e.lhs->loc,
                    str(name_kind_text(info->kind), " '", e.lhs->name, "' cannot be indexed"));
      }
    }
    for (const auto& it : e.index) {
      if (tensor_access_ok && it.expr && it.expr->kind == ExprKind::Call &&
          it.expr->name == "zip") {
        check_zip(*it.expr, ctx);
        continue;
      }
      if (it.expr) check_expr(*it.expr, ctx);
      if (it.start) check_expr(*it.start, ctx);
      if (it.stop) check_expr(*it.stop, ctx);
    }
  }

  /// zip(i, j, ...) as one subscript of a tensor access: index tiles paired element by element.
  void check_zip(const Expr& e, Context ctx) {
    const BuiltinInfo* b = find_builtin(e.name);
    int n = static_cast<int>(e.args.size());
    if (n < b->min_args || n > b->max_args)
      sink_.error(e.loc, str("zip takes ", b->min_args, " to ", b->max_args, " index tiles, got ",
                             n, " (", b->signature, ")"));
    for (const auto& kw : e.kwargs)
      sink_.error(kw.loc, str("unknown keyword '", kw.name, "' for ", b->signature));
    for (const auto& a : e.args) check_expr(*a, ctx);
  }

  void check_call(const Expr& e, Context ctx) {
    const BuiltinInfo* b = find_builtin(e.name);
    if (!b) {
      sink_.error(e.loc, str("unknown function '", e.name, "'"));
      for (const auto& a : e.args) check_expr(*a, ctx);
      return;
    }
    int n = static_cast<int>(e.args.size());
    if (n < b->min_args || n > b->max_args)
      sink_.error(
          e.loc,
          str(b->name, " takes ",
              b->min_args == b->max_args ? str(b->min_args) : str(b->min_args, " to ", b->max_args),
              " argument", b->max_args == 1 ? "" : "s", ", got ", n, " (", b->signature, ")"));
    for (const auto& kw : e.kwargs) {
      bool ok = false;
      for (auto k : b->keywords) ok = ok || k == kw.name;
      if (!ok) sink_.error(kw.loc, str("unknown keyword '", kw.name, "' for ", b->signature));
      check_expr(*kw.value, ctx);
    }
    const bool typed_call = b->kind == BuiltinKind::Cast || b->kind == BuiltinKind::Unpack4;
    if (typed_call && e.type_arg) {
      if (e.type_arg->has_dims)
        sink_.error(e.type_arg->loc, str(b->name, "<...> takes a dtype, not a tile type"));
      check_type(*e.type_arg);
    }
    if (b->kind == BuiltinKind::Cast && !e.type_arg)
      sink_.error(e.loc, "cast needs a dtype: cast<f32>(x)");
    if (b->kind == BuiltinKind::Unpack4 && !e.type_arg)
      sink_.error(e.loc, "unpack4 needs the dtype of its values: unpack4<f16>(words)");
    if (b->kind == BuiltinKind::Zip)
      sink_.error(e.loc, "zip(...) pairs index tiles as one subscript of a tensor access "
                         "(X[zip(rows, cols), :]); it is not a value");
    bool takes_access = b->kind == BuiltinKind::Load || b->kind == BuiltinKind::Copy ||
                        b->kind == BuiltinKind::Store || b->kind == BuiltinKind::AtomicAdd ||
                        b->kind == BuiltinKind::Prefetch;
    bool device_only = takes_access || b->kind == BuiltinKind::ProgramId ||
                       b->kind == BuiltinKind::NumPrograms || b->kind == BuiltinKind::Dot ||
                       b->kind == BuiltinKind::Iota || b->kind == BuiltinKind::Fence;
    if (device_only && ctx != Context::Body)
      sink_.error(e.loc, str(b->name, " cannot be used in ", context_text(ctx)));
    for (size_t i = 0; i < e.args.size(); ++i) {
      const Expr& a = *e.args[i];
      if (takes_access && i == 0) {
        const Expr* tensor = a.kind == ExprKind::Index ? a.lhs.get() : &a;
        bool writes = b->kind == BuiltinKind::Store || b->kind == BuiltinKind::AtomicAdd;
        if (writes && tensor->kind == ExprKind::Name && broadcast_tensors_.count(tensor->name))
          sink_.error(tensor->loc, str("'", tensor->name,
                                       "' has a broadcast dimension (1|...) "
                                       "and cannot be written: given with size 1, every index "
                                       "along it is the same element"));
        if (a.kind == ExprKind::Index && a.lhs->kind == ExprKind::Name) {
          const NameInfo* info = lookup(a.lhs->name);
          if (info && info->kind == NameKind::TensorParam) {
            check_index(a, ctx, /*tensor_access_ok=*/true);
            continue;
          }
        }
        if (a.kind == ExprKind::Name) {
          const NameInfo* info = lookup(a.name);
          if (info && info->kind == NameKind::TensorParam) continue; // whole tensor
        }
        sink_.error(a.loc, str("first argument of ", b->name,
                               " must be a tensor access such as X[i, a : a + N]"));
        check_expr(a, ctx);
        continue;
      }
      check_expr(a, ctx);
    }
  }

  DiagnosticSink& sink_;
  std::unordered_map<std::string, NameInfo> globals_;
  std::vector<std::map<std::string, NameInfo>> scopes_;
  std::set<std::string> dtype_generics_;
  std::set<std::string> plain_dims_;                 ///< sizes named as a whole dimension
  std::map<std::string, SourceLoc> broadcast_sizes_; ///< X of each 1|X, first use
  std::set<std::string> broadcast_tensors_;          ///< tensors with a 1|X dimension
};

} // namespace

std::vector<Diagnostic> check_module(const Module& m) {
  DiagnosticSink sink;
  std::set<std::string> names;
  for (const auto& k : m.kernels) {
    if (!names.insert(k->name).second)
      sink.error(k->loc, str("kernel '", k->name, "' is defined twice"));
    Checker(sink).check_kernel(*k);
  }
  sink.check();
  return sink.all(); // no errors: only warnings (and notes) remain
}

} // namespace tilejit::dsl
