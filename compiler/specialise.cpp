#include "compiler/specialise.h"

#include "compiler/target.h"

#include "compiler/fold.h"
#include "compiler/host_eval.h"
#include "compiler/ir_printer.h"
#include "dsl/ast_printer.h"
#include "dsl/builtins.h"
#include "dsl/diagnostics.h"
#include "support/text.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace tilejit {

using dsl::fail_at;
namespace ast = dsl;
using ir::ExprKind;
using ir::ExprPtr;

Bindings complete_bindings(const dsl::Kernel& k, const Bindings& given) {
  Bindings out;
  std::set<std::string> known;
  auto check_value = [&](const std::string& name, const dsl::Choice& c, const std::string& v,
                         const char* what) {
    if (c.is_dtype) {
      for (const auto& n : c.names)
        if (n == v) return;
    } else {
      char* end = nullptr;
      long long x = std::strtoll(v.c_str(), &end, 10);
      if (end && *end == 0 && !v.empty())
        for (int64_t n : c.ints)
          if (n == x) return;
    }
    std::vector<std::string> opts = c.names;
    if (!c.is_dtype)
      for (int64_t n : c.ints) opts.push_back(std::to_string(n));
    if (opts.size() > 12)
      opts = {std::to_string(c.ints.front()) + ".." + std::to_string(c.ints.back())};
    throw Error(str("kernel '", k.name, "': ", what, " ", name, "=", v, " is not one of ",
                    join(opts, "|")));
  };
  for (const auto& g : k.generics) {
    known.insert(g.name);
    auto it = given.find(g.name);
    if (it == given.end()) {
      if (g.choice.has_default) {
        out[g.name] =
            g.choice.is_dtype ? g.choice.default_name : std::to_string(g.choice.default_int);
        continue;
      }
      throw Error(str("kernel '", k.name, "': generic parameter '", g.name,
                      "' has no value; pass --set ", g.name, "=<value> or a tensor that fixes it"));
    }
    check_value(g.name, g.choice, it->second, "generic");
    out[g.name] = it->second;
  }
  for (const auto& t : k.tunables) {
    known.insert(t.name);
    auto it = given.find(t.name);
    if (it == given.end()) {
      out[t.name] =
          std::to_string(t.choice.has_default ? t.choice.default_int : t.choice.ints.front());
      continue;
    }
    check_value(t.name, t.choice, it->second, "tunable");
    out[t.name] = it->second;
  }
  for (const auto& [name, v] : given)
    if (!known.count(name)) {
      std::vector<std::string> names(known.begin(), known.end());
      throw Error(str("kernel '", k.name, "' has no generic or tunable '", name,
                      "' (it has: ", names.empty() ? "none" : join(names, ", "), ")"));
    }
  return out;
}

namespace {

/// Linear form sum(coef * atom) + constant, atoms compared by their printed IR.
struct Affine {
  std::map<std::string, int64_t> terms;
  int64_t constant = 0;
};

Affine affine_of(const ir::Expr& e) {
  Affine out;
  if (e.kind == ExprKind::Const && dtype_is_int(e.type.dtype)) {
    out.constant = e.int_value;
    return out;
  }
  if (e.kind == ExprKind::Binary) {
    if (e.binary_op == ast::BinaryOp::Add || e.binary_op == ast::BinaryOp::Sub) {
      Affine a = affine_of(*e.a), b = affine_of(*e.b);
      int64_t sign = e.binary_op == ast::BinaryOp::Add ? 1 : -1;
      for (auto& [k, v] : b.terms) a.terms[k] += sign * v;
      a.constant += sign * b.constant;
      return a;
    }
    if (e.binary_op == ast::BinaryOp::Mul) {
      const ir::Expr* c = nullptr;
      const ir::Expr* other = nullptr;
      if (e.a->kind == ExprKind::Const) c = e.a.get(), other = e.b.get();
      if (e.b->kind == ExprKind::Const) c = e.b.get(), other = e.a.get();
      if (c && dtype_is_int(c->type.dtype)) {
        Affine a = affine_of(*other);
        for (auto& [k, v] : a.terms) v *= c->int_value;
        a.constant *= c->int_value;
        return a;
      }
    }
  }
  out.terms[ir::print_expr(e)] = 1;
  return out;
}

/// stop - start when it is a constant, e.g. (m0 + 64) - m0 = 64.
std::optional<int64_t> constant_difference(const ir::Expr& start, const ir::Expr& stop) {
  Affine a = affine_of(start), b = affine_of(stop);
  for (auto& [k, v] : a.terms) b.terms[k] -= v;
  for (auto& [k, v] : b.terms)
    if (v != 0) return std::nullopt;
  return b.constant - a.constant;
}

class Lowering {
public:
  Lowering(const dsl::Kernel& k, const Bindings& b, const SpecialiseOptions& o)
      : ast_(k), bindings_(b), options_(o) {}

  std::unique_ptr<ir::Kernel> run() {
    auto kernel = std::make_unique<ir::Kernel>();
    k_ = kernel.get();
    k_->name = ast_.name;
    k_->source_path = ast_.loc.path();
    k_->bindings = bindings_;
    k_->target = &target_for(options_.arch);
    k_->layouts.set_warp_size(k_->target->warp_size());
    smem_limit_ = shared_memory_within(*k_->target, options_.smem_limit);
    k_->smem_limit = static_cast<int>(smem_limit_);
    k_->index32 = options_.index32;
    k_->debug_bounds = options_.debug_bounds;
    bind_constants();
    check_where();
    lower_params();
    k_->grid_rank = static_cast<int>(ast_.grid.size());
    if (ast_.threads) {
      k_->threads = static_cast<int>(host_eval_int(*ast_.threads, env_, "threads"));
      const int warp = k_->target->warp_size(), most = k_->target->max_threads_per_block();
      if (k_->threads <= 0 || k_->threads > most || k_->threads % warp != 0)
        fail_at(ast_.threads->loc,
                str("threads must be a multiple of ", warp, " between ", warp, " and ", most,
                    " on ", k_->target->arch(), ", got ", k_->threads));
    }
    if (ast_.blocks_per_sm) {
      const int64_t b = host_eval_int(*ast_.blocks_per_sm, env_, "blocks_per_sm");
      if (b < 1 || b > 32)
        fail_at(ast_.blocks_per_sm->loc, str("blocks_per_sm must be between 1 and 32, got ", b));
      if (b * k_->threads > k_->target->max_threads_per_sm())
        fail_at(ast_.blocks_per_sm->loc,
                str(b, " blocks of ", k_->threads, " threads do not fit on one multiprocessor of ",
                    k_->target->arch(), " (", k_->target->max_threads_per_sm(), " threads)"));
      k_->blocks_per_sm = static_cast<int>(b);
    }
    lower_cluster();
    scopes_.emplace_back();
    k_->body = lower_block(ast_.body, 0);
    check_reused_copies();
    return kernel;
  }

private:
  /// copy(..., reuse = 1) keeps a ring slot's bytes from an earlier iteration: right only for a
  /// tensor the kernel never writes (a store or atomic_add to it could change the block the
  /// slot holds).
  void check_reused_copies() {
    std::set<int> written;
    ir::for_each_stmt(k_->body, [&](ir::Stmt& s) {
      if (s.kind == ir::StmtKind::Store && s.access) written.insert(s.access->param);
      ir::for_each_expr_root(s, [&](ir::ExprPtr& root) {
        ir::for_each_node(*root, [&](ir::Expr& n) {
          if (n.kind == ExprKind::AtomicAdd && n.access) written.insert(n.access->param);
        });
      });
    });
    for (const auto& [copy, loc] : reuse_locs_)
      if (written.count(copy->access->param))
        fail_at(loc, str("copy's reuse = 1 needs a tensor the kernel only reads, but the kernel "
                         "writes '",
                         k_->params[copy->access->param].name,
                         "' (a ring slot could keep a block that was overwritten)"));
  }

  void lower_cluster() {
    for (size_t i = 0; i < ast_.cluster.size(); ++i) {
      const int64_t c = host_eval_int(*ast_.cluster[i], env_, "cluster");
      if (c < 1 || c > 8)
        fail_at(ast_.cluster[i]->loc, str("a cluster extent must be between 1 and 8, got ", c));
      k_->cluster[i] = static_cast<int>(c);
    }
    if (k_->cluster_size() > 8)
      fail_at(ast_.cluster_loc, str("a cluster holds at most 8 programs (the portable limit), got ",
                                    k_->cluster[0], " x ", k_->cluster[1], " x ", k_->cluster[2]));
    if (k_->cluster_size() > 1 && !k_->target->clusters())
      fail_at(ast_.cluster_loc, str("thread block clusters need sm_90 or newer; this variant "
                                    "is compiled for ",
                                    k_->target->arch(), " (a cluster of 1 runs anywhere)"));
  }

  void bind_constants() {
    env_["SMEM"] = HostValue::of_int(smem_limit_);
    for (const auto& g : ast_.generics) {
      const std::string& v = bindings_.at(g.name);
      if (g.choice.is_dtype) {
        dtypes_[g.name] = *parse_dtype(v);
      } else {
        int64_t x = std::stoll(v);
        consts_[g.name] = x;
        env_[g.name] = HostValue::of_int(x);
      }
    }
    for (const auto& t : ast_.tunables) {
      int64_t x = std::stoll(bindings_.at(t.name));
      consts_[t.name] = x;
      env_[t.name] = HostValue::of_int(x);
    }
  }

  void check_where() {
    for (const auto& w : ast_.where) {
      std::string missing;
      auto v = host_eval(*w, env_, &missing);
      if (!v) fail_at(w->loc, str("'where' uses '", missing, "', which has no compile-time value"));
      if (!v->b) {
        std::vector<std::string> vals;
        for (const auto& [n, x] : bindings_) vals.push_back(n + "=" + x);
        throw ConstraintError(str(w->loc.path(), ":", w->loc.line, ": constraint '",
                                  dsl::expr_to_string(*w), "' does not hold for ",
                                  join(vals, ", ")));
      }
    }
  }

  DType resolve_dtype(const std::string& name, const dsl::SourceLoc& loc) {
    if (auto t = parse_dtype(name)) return *t;
    auto it = dtypes_.find(name);
    if (it == dtypes_.end()) fail_at(loc, str("unknown dtype '", name, "'"));
    return it->second;
  }

  void lower_params() {
    for (const auto& p : ast_.params) {
      ir::Param q;
      q.name = p.name;
      q.dtype = resolve_dtype(p.type.dtype, p.type.loc);
      q.is_tensor = p.type.has_dims;
      q.is_scratch = p.is_scratch;
      q.zero_init = p.zero_init;
      q.loc = p.loc;
      q.vector_aligned = options_.vector_aligned.count(p.name) > 0;
      // (Scratch tensors are the runtime's own: their maps are not built.)
      q.tma = q.vector_aligned && !p.is_scratch && p.type.dims.size() >= 2 &&
              options_.tma_params.count(p.name) > 0;
      int index = static_cast<int>(k_->params.size());
      for (size_t axis = 0; axis < p.type.dims.size(); ++axis) {
        const dsl::Expr& written = *p.type.dims[axis];
        // 1|X: the dimension has X's value; an argument of size 1 is expanded to it at launch.
        const dsl::Expr* to = p.is_scratch ? nullptr : dsl::broadcast_dim_target(written);
        const dsl::Expr& d = to ? *to : written;
        q.dim_names.push_back(to ? "1|" + dsl::expr_to_string(d) : dsl::expr_to_string(d));
        q.broadcast_to.push_back(to ? dsl::expr_to_string(d) : "");
        std::string missing;
        auto v = host_eval(d, env_, &missing);
        q.dim_values.push_back(v && v->kind == HostValue::Kind::Int ? v->i : -1);
        if (to) continue; // X is fixed by a plain dimension (the checker made sure of it)
        if (d.kind == dsl::ExprKind::Name && !consts_.count(d.name) && !dims_.count(d.name) &&
            !p.is_scratch)
          dims_[d.name] = {index, static_cast<int>(axis)};
      }
      if (q.is_tensor) {
        tensors_[p.name] = index;
      } else {
        scalars_[p.name] = index;
      }
      k_->params.push_back(std::move(q));
    }
    check_parameter_space();
  }

  /// The launch signature must fit the target's parameter space (NVRTC's "formal parameter
  /// space overflowed" is otherwise reported as a tilejit bug).
  void check_parameter_space() {
    const int64_t index_bytes = options_.index32 ? 4 : 8;
    int64_t bytes = options_.debug_bounds ? 8 : 0;
    for (const auto& p : k_->params) {
      const int64_t b = p.is_tensor ? 8 + 2 * index_bytes * p.rank() : dtype_size(p.dtype);
      bytes = (bytes + 7) / 8 * 8 + b; // each parameter aligned (8 bytes at most)
    }
    const int64_t most = k_->target->max_parameter_bytes();
    if (bytes > most)
      fail_at(ast_.loc, str("kernel '", ast_.name, "' takes ", k_->params.size(), " parameters in ",
                            bytes, " bytes; a kernel on ", k_->target->arch(), " may take at most ",
                            most, " bytes of parameters"));
  }

  // ---- statements ------------------------------------------------------------------------
  ir::Block lower_block(const std::vector<dsl::StmtPtr>& stmts, int loop_depth) {
    ir::Block out;
    scopes_.emplace_back();
    for (const auto& s : stmts) lower_stmt(*s, out, loop_depth);
    scopes_.pop_back();
    return out;
  }

  ir::Var* lookup_local(const std::string& name) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    return nullptr;
  }

  ir::Var* declare(const std::string& name, ir::Type type, const dsl::SourceLoc& loc) {
    std::string unique = name;
    for (int n = 1; used_names_.count(unique); ++n) unique = str(name, "_", n);
    used_names_.insert(unique);
    ir::Var* v = k_->new_var(unique, std::move(type), loc);
    scopes_.back()[name] = v;
    var_loop_depth_[v] = current_loop_depth_;
    return v;
  }

  void lower_stmt(const dsl::Stmt& s, ir::Block& out, int loop_depth) {
    current_loop_depth_ = loop_depth;
    switch (s.kind) {
    case dsl::StmtKind::Let: {
      cluster_sum_allowed_ = is_cluster_sum(*s.value) && loop_depth == 0 && cond_depth_ == 0;
      ExprPtr value = lower_expr(*s.value);
      ir::Type t;
      t.space = s.let_kind == dsl::LetKind::Frag     ? ir::Space::Frag
                : s.let_kind == dsl::LetKind::Shared ? ir::Space::Shared
                                                     : ir::Space::Scalar;
      // The declared type (if any) is recorded as dtype+shape; infer_types checks it.
      bool declared = s.type != nullptr;
      if (declared) {
        t.dtype = resolve_dtype(s.type->dtype, s.type->loc);
        for (const auto& d : s.type->dims) t.shape.push_back(const_int(*d, "a tile dimension"));
        for (int64_t d : t.shape)
          if (d <= 0) fail_at(s.type->loc, str("tile dimensions must be positive, got ", d));
      }
      auto st = std::make_unique<ir::Stmt>(ir::StmtKind::Decl, s.loc);
      ir::Var* v = declare(s.name, t, s.loc);
      v->declared_type = declared;
      st->var = v;
      st->value = std::move(value);
      out.push_back(std::move(st));
      return;
    }
    case dsl::StmtKind::Assign: {
      ir::Var* v = lookup_local(s.name);
      TJ_ICHECK(v, "checker let an undeclared assignment through: ", s.name);
      if (var_loop_depth_[v] < loop_depth) v->assigned_in_loop = true;
      cluster_sum_allowed_ =
          is_cluster_sum(*s.value) && !s.compound && loop_depth == 0 && cond_depth_ == 0;
      ExprPtr value = lower_expr(*s.value);
      if (s.compound)
        value =
            fold(ir::make_binary(s.assign_op, ir::make_var_ref(v, s.loc), std::move(value), s.loc));
      auto st = std::make_unique<ir::Stmt>(ir::StmtKind::Assign, s.loc);
      st->var = v;
      st->value = std::move(value);
      out.push_back(std::move(st));
      return;
    }
    case dsl::StmtKind::ExprStmt: {
      const dsl::Expr& e = *s.value;
      if (e.kind == dsl::ExprKind::Call && (e.name == "store")) {
        auto st = std::make_unique<ir::Stmt>(ir::StmtKind::Store, s.loc);
        st->access = std::make_unique<ir::Access>(lower_access(*e.args[0]));
        st->value = lower_expr(*e.args[1]);
        for (const auto& kw : e.kwargs)
          if (kw.name == "mask") st->mask = lower_expr(*kw.value);
        out.push_back(std::move(st));
        return;
      }
      if (e.kind == dsl::ExprKind::Call &&
          (e.name == "atomic_add" || e.name == "fence" || e.name == "prefetch")) {
        auto st = std::make_unique<ir::Stmt>(ir::StmtKind::Eval, s.loc);
        st->value = lower_expr(e);
        out.push_back(std::move(st));
        return;
      }
      fail_at(s.loc, "this expression has no effect; only store, atomic_add, fence and prefetch "
                     "stand alone");
    }
    case dsl::StmtKind::For: {
      auto st = std::make_unique<ir::Stmt>(ir::StmtKind::For, s.loc);
      st->lo = lower_expr(*s.range_args[0]);
      st->hi = lower_expr(*s.range_args[1]);
      int64_t step = 1;
      if (s.range_args.size() == 3) step = const_int(*s.range_args[2], "a loop step");
      if (step == 0) fail_at(s.range_args[2]->loc, "loop step must not be 0");
      // Loop variables are 32-bit: a larger step would wrap (an endless loop on the GPU).
      if (step < -std::numeric_limits<int32_t>::max() || step > std::numeric_limits<int32_t>::max())
        fail_at(s.range_args[2]->loc,
                str("loop step ", step, " is out of range: loop variables are 32-bit integers"));
      st->step = ir::make_int(step, DType::I32, s.loc);
      st->step->literal = true;
      for (const auto& kw : s.range_kwargs)
        if (kw.name == "unroll") {
          st->unroll = static_cast<int>(const_int(*kw.value, "unroll"));
          if (st->unroll < 1 || st->unroll > 64)
            fail_at(kw.loc, str("unroll must be between 1 and 64, got ", st->unroll));
        }
      if (s.range_kind == "pipelined") {
        st->loop_kind = ir::LoopKind::Pipelined;
        st->stages = 2;
        for (const auto& kw : s.range_kwargs)
          if (kw.name == "stages") st->stages = static_cast<int>(const_int(*kw.value, "stages"));
        if (st->stages < 1 || st->stages > 16)
          fail_at(s.range_loc, str("stages must be between 1 and 16, got ", st->stages));
        for (const auto& kw : s.range_kwargs)
          if (kw.name == "producer") {
            const int64_t p = const_int(*kw.value, "producer");
            if (p != 0 && p != 1) fail_at(kw.loc, str("producer must be 0 or 1, got ", p));
            st->producer = p == 1;
          }
        if (st->stages == 1) st->loop_kind = ir::LoopKind::Serial;
      }
      scopes_.emplace_back();
      st->var = declare(s.name, ir::Type{DType::I32, {}, ir::Space::Scalar}, s.loc);
      st->var->is_loop_var = true;
      var_loop_depth_[st->var] = loop_depth + 1;
      st->body = lower_block(s.body, loop_depth + 1);
      scopes_.pop_back();
      out.push_back(std::move(st));
      return;
    }
    case dsl::StmtKind::If: {
      ExprPtr cond = lower_expr(*s.value);
      if (cond->kind == ExprKind::Const) {
        // Decided at compile time (e.g. on a generic): keep only the branch taken. The branch
        // not taken is never typed, so the condition's own type is checked here.
        if (cond->type.dtype != DType::Bool)
          fail_at(s.value->loc,
                  str("'if' needs a bool condition, got '", dsl::expr_to_string(*s.value),
                      "', a constant of type ", dtype_name(cond->type.dtype),
                      " (compare it: ", dsl::expr_to_string(*s.value), " != 0)"));
        const auto& taken = cond->int_value ? s.body : s.else_body;
        ir::Block b = lower_block(taken, loop_depth);
        for (auto& x : b) out.push_back(std::move(x));
        return;
      }
      auto st = std::make_unique<ir::Stmt>(ir::StmtKind::If, s.loc);
      st->value = std::move(cond);
      ++cond_depth_;
      st->body = lower_block(s.body, loop_depth);
      st->else_body = lower_block(s.else_body, loop_depth);
      --cond_depth_;
      out.push_back(std::move(st));
      return;
    }
    case dsl::StmtKind::Return:
      saw_return_ = true;
      out.push_back(std::make_unique<ir::Stmt>(ir::StmtKind::Return, s.loc));
      return;
    case dsl::StmtKind::Block: {
      ir::Block b = lower_block(s.body, loop_depth);
      for (auto& x : b) out.push_back(std::move(x));
      return;
    }
    }
  }

  // ---- expressions -----------------------------------------------------------------------
  int64_t const_int(const dsl::Expr& e, const char* what) {
    ExprPtr v = lower_expr(e);
    if (v->kind != ExprKind::Const || !dtype_is_int(v->type.dtype))
      fail_at(e.loc,
              str(what, " must be a compile-time integer (literals, generics, tunables), got '",
                  dsl::expr_to_string(e), "'"));
    return v->int_value;
  }

  ExprPtr literal_int(int64_t v, const dsl::SourceLoc& loc) {
    bool small =
        v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
    auto e = ir::make_int(v, small ? DType::I32 : DType::I64, loc);
    e->literal = true;
    return e;
  }

  ExprPtr lower_expr(const dsl::Expr& e) {
    switch (e.kind) {
    case dsl::ExprKind::IntLit:
      return literal_int(e.int_value, e.loc);
    case dsl::ExprKind::FloatLit: {
      auto x = ir::make_float(e.float_value, DType::F32, e.loc);
      x->literal = true;
      return x;
    }
    case dsl::ExprKind::BoolLit:
      return ir::make_bool(e.bool_value, e.loc);
    case dsl::ExprKind::Name:
      return lower_name(e);
    case dsl::ExprKind::Unary: {
      auto x = std::make_unique<ir::Expr>(ExprKind::Unary, e.loc);
      x->unary_op = e.unary_op;
      x->a = lower_expr(*e.lhs);
      return fold(std::move(x));
    }
    case dsl::ExprKind::Binary:
      return fold(ir::make_binary(e.binary_op, lower_expr(*e.lhs), lower_expr(*e.rhs), e.loc));
    case dsl::ExprKind::Index:
      return lower_local_index(e);
    case dsl::ExprKind::Call:
      return lower_call(e);
    }
    fail_at(e.loc, "unsupported expression");
  }

  ExprPtr lower_name(const dsl::Expr& e) {
    if (ir::Var* v = lookup_local(e.name)) return ir::make_var_ref(v, e.loc);
    if (auto it = consts_.find(e.name); it != consts_.end()) return literal_int(it->second, e.loc);
    if (e.name == "SMEM") return literal_int(smem_limit_, e.loc);
    if (e.name == "inf") {
      auto x = ir::make_float(std::numeric_limits<double>::infinity(), DType::F32, e.loc);
      x->literal = true;
      return x;
    }
    if (auto it = scalars_.find(e.name); it != scalars_.end()) {
      auto x = std::make_unique<ir::Expr>(ExprKind::ParamRef, e.loc);
      x->param = it->second;
      return x;
    }
    if (auto it = dims_.find(e.name); it != dims_.end()) {
      auto x = std::make_unique<ir::Expr>(ExprKind::DimRef, e.loc);
      x->param = it->second.first;
      x->axis = it->second.second;
      return x;
    }
    if (tensors_.count(e.name))
      fail_at(e.loc, str("tensor '", e.name, "' must be indexed inside load/copy/store"));
    fail_at(e.loc, str("unknown name '", e.name, "'"));
  }

  /// x[:, None], x[None, :] (new axes) and shared[a : a + N] (a window of a shared tile).
  ExprPtr lower_local_index(const dsl::Expr& e) {
    ExprPtr base = lower_expr(*e.lhs);
    bool has_slice = false, has_point = false;
    for (const auto& it : e.index) {
      if (it.kind == dsl::IndexItem::Kind::Slice) has_slice = true;
      if (it.kind == dsl::IndexItem::Kind::Expr) has_point = true;
    }
    if (has_point) {
      // s[i, :]: one row of a shared tile (a window of one row with the axis dropped).
      bool row = e.index.size() >= 2 && e.index[0].kind == dsl::IndexItem::Kind::Expr;
      for (size_t i = 1; row && i < e.index.size(); ++i)
        row = e.index[i].kind == dsl::IndexItem::Kind::Full;
      if (!row)
        fail_at(
            e.loc,
            "a tile cannot be indexed by a scalar, except a row of a shared tile: s[i, :]; reduce "
            "it, or slice a shared tile with a : a + N");
      auto x = std::make_unique<ir::Expr>(ExprKind::SharedSlice, e.loc);
      x->a = std::move(base);
      x->b = lower_expr(*e.index[0].expr);
      x->extent = 1;
      x->axes = {0}; // axis 0 is dropped
      x->int_value = static_cast<int64_t>(e.index.size());
      return x;
    }
    if (has_slice) {
      const auto& first = e.index[0];
      if (first.kind != dsl::IndexItem::Kind::Slice)
        fail_at(e.loc, "only the first axis of a shared tile can be sliced: x[a : a + N, :]");
      for (size_t i = 1; i < e.index.size(); ++i)
        if (e.index[i].kind != dsl::IndexItem::Kind::Full)
          fail_at(e.index[i].loc, "after a slice on axis 0 the other axes must be ':'");
      auto x = std::make_unique<ir::Expr>(ExprKind::SharedSlice, e.loc);
      ExprPtr start = lower_expr(*first.start);
      ExprPtr stop = lower_expr(*first.stop);
      auto extent = constant_difference(*start, *stop);
      if (!extent)
        fail_at(first.loc, str("slice length must be a compile-time constant: write ",
                               dsl::expr_to_string(*first.start), " : ",
                               dsl::expr_to_string(*first.start), " + N"));
      if (*extent <= 0) fail_at(first.loc, str("slice length must be positive, got ", *extent));
      x->a = std::move(base);
      x->b = std::move(start);
      x->extent = *extent;
      x->int_value = static_cast<int64_t>(e.index.size()); // written rank, checked by infer_types
      return x;
    }
    auto x = std::make_unique<ir::Expr>(ExprKind::Expand, e.loc);
    int written_rank = 0;
    for (size_t i = 0; i < e.index.size(); ++i) {
      if (e.index[i].kind == dsl::IndexItem::Kind::NewAxis)
        x->axes.push_back(static_cast<int>(i));
      else
        ++written_rank;
    }
    x->int_value = written_rank; // checked against the operand's rank by infer_types
    x->a = std::move(base);
    return x; // x[:, :] (no new axis) stays an Expand so infer_types can check the rank
  }

  /// tensor[...] inside load/copy/store/atomic_add.
  ir::Access lower_access(const dsl::Expr& e) {
    ir::Access acc;
    acc.loc = e.loc;
    const dsl::Expr* name = e.kind == dsl::ExprKind::Index ? e.lhs.get() : &e;
    auto it = tensors_.find(name->name);
    if (it == tensors_.end())
      fail_at(name->loc, str("'", name->name, "' is not a tensor parameter"));
    acc.param = it->second;
    const ir::Param& p = k_->params[acc.param];
    // One entry per tensor dimension written: zip(i, j) is one subscript over two dimensions.
    struct Subscript {
      const dsl::IndexItem* item;
      const dsl::Expr* zipped; ///< an argument of zip(...), else null
      int zip;
    };
    std::vector<Subscript> subs;
    bool has_zip = false;
    if (e.kind == dsl::ExprKind::Index)
      for (size_t i = 0; i < e.index.size(); ++i) {
        const dsl::IndexItem& item = e.index[i];
        if (item.kind == dsl::IndexItem::Kind::Expr && item.expr->kind == dsl::ExprKind::Call &&
            item.expr->name == "zip") {
          has_zip = true;
          for (const auto& arg : item.expr->args)
            subs.push_back({&item, arg.get(), static_cast<int>(i)});
        } else {
          subs.push_back({&item, nullptr, -1});
        }
      }
    size_t written = subs.size();
    if (written > static_cast<size_t>(p.rank()))
      fail_at(e.loc, str("tensor '", p.name, "' has ", p.rank(), " dimensions (", p.name, ": ",
                         dtype_name(p.dtype), "[", join(p.dim_names, ", "), "]) but ", written,
                         " subscripts were given",
                         has_zip ? " (zip(...) covers one dimension per index tile)" : ""));
    for (int axis = 0; axis < p.rank(); ++axis) {
      ir::AccessIndex ix;
      if (static_cast<size_t>(axis) < written && subs[axis].zipped) {
        ix.kind = ir::AccessIndex::Kind::Point; // infer_types checks it is an index tile
        ix.index = lower_expr(*subs[axis].zipped);
        ix.zip = subs[axis].zip;
        acc.indices.push_back(std::move(ix));
        continue;
      }
      if (static_cast<size_t>(axis) >= written ||
          subs[axis].item->kind == dsl::IndexItem::Kind::Full) {
        int64_t extent = p.dim_values[axis];
        const dsl::SourceLoc& loc =
            static_cast<size_t>(axis) < written ? subs[axis].item->loc : e.loc;
        if (extent < 0)
          fail_at(loc, str("':' over dimension ", axis, " ('", p.dim_names[axis], "') of '", p.name,
                           "' needs a size known at compile time; slice it: i : i + N"));
        ix.kind = ir::AccessIndex::Kind::Range;
        ix.index = literal_int(0, loc);
        ix.extent = extent;
      } else {
        const dsl::IndexItem& item = *subs[axis].item;
        if (item.kind == dsl::IndexItem::Kind::NewAxis)
          fail_at(item.loc, "None cannot appear in a tensor access");
        if (item.kind == dsl::IndexItem::Kind::Slice) {
          ExprPtr start = lower_expr(*item.start);
          ExprPtr stop = lower_expr(*item.stop);
          auto extent = constant_difference(*start, *stop);
          if (!extent)
            fail_at(item.loc, str("slice length must be a compile-time constant: write ",
                                  dsl::expr_to_string(*item.start), " : ",
                                  dsl::expr_to_string(*item.start), " + N"));
          if (*extent <= 0) fail_at(item.loc, str("slice length must be positive, got ", *extent));
          ix.kind = ir::AccessIndex::Kind::Range;
          ix.index = std::move(start);
          ix.extent = *extent;
        } else {
          ix.kind = ir::AccessIndex::Kind::Point; // infer_types turns tile indices into Gather
          ix.index = lower_expr(*item.expr);
        }
      }
      acc.indices.push_back(std::move(ix));
    }
    return acc;
  }

  const dsl::Expr* kwarg(const dsl::Expr& e, const char* name) {
    for (const auto& kw : e.kwargs)
      if (kw.name == name) return kw.value.get();
    return nullptr;
  }

  int axis_arg(const dsl::Expr& e, int default_axis) {
    const dsl::Expr* a = kwarg(e, "axis");
    if (!a) return default_axis;
    // Checked as written (64 bits): 4294967297 is not axis 1. Negative axes are refused, not
    // read as "every axis" (the IR's -1) or as Python's "the last axis"; infer-types checks
    // the rest against the tile's rank.
    const int64_t axis = const_int(*a, "axis");
    if (axis < 0 || axis > std::numeric_limits<int32_t>::max())
      fail_at(a->loc, str("axis ", axis, " does not exist: tiles have axes 0 and 1 (leave ",
                          "`axis` out to reduce over every axis, or to scan the last)"));
    return static_cast<int>(axis);
  }

  ExprPtr math(ir::MathFn f, const dsl::Expr& e, size_t nargs) {
    auto x = std::make_unique<ir::Expr>(ExprKind::Math, e.loc);
    x->math = f;
    x->a = lower_expr(*e.args[0]);
    if (nargs > 1) x->b = lower_expr(*e.args[1]);
    return fold(std::move(x));
  }

  ExprPtr lower_call(const dsl::Expr& e) {
    const dsl::BuiltinInfo* b = dsl::find_builtin(e.name);
    if (!b) fail_at(e.loc, str("unknown function '", e.name, "'"));
    using BK = dsl::BuiltinKind;
    switch (b->kind) {
    case BK::ProgramId:
    case BK::NumPrograms: {
      auto x = std::make_unique<ir::Expr>(
          b->kind == BK::ProgramId ? ExprKind::ProgramId : ExprKind::NumPrograms, e.loc);
      const int64_t axis = const_int(*e.args[0], "the grid axis"); // 64 bits, as written
      if (axis < 0 || axis >= static_cast<int64_t>(ast_.grid.size()))
        fail_at(e.args[0]->loc, str("grid axis ", axis, " does not exist; the grid has ",
                                    ast_.grid.size(), " axes"));
      x->axis = static_cast<int>(axis);
      return x;
    }
    case BK::Iota: {
      auto x = std::make_unique<ir::Expr>(ExprKind::Iota, e.loc);
      x->extent = const_int(*e.args[0], "iota's length");
      if (x->extent <= 0) fail_at(e.loc, "iota's length must be positive");
      return x;
    }
    case BK::Load:
    case BK::Copy: {
      auto x =
          std::make_unique<ir::Expr>(b->kind == BK::Load ? ExprKind::Load : ExprKind::Copy, e.loc);
      x->access = std::make_unique<ir::Access>(lower_access(*e.args[0]));
      if (auto m = kwarg(e, "mask")) x->b = lower_expr(*m);
      if (auto o = kwarg(e, "other")) x->c = lower_expr(*o);
      if (const dsl::Expr* reuse = kwarg(e, "reuse")) {
        // 1: a ring slot that already holds this block keeps it (ir.h: reuse_slot).
        const int64_t v = const_int(*reuse, "reuse");
        if (v != 0 && v != 1) fail_at(reuse->loc, str("copy's reuse must be 0 or 1, got ", v));
        x->reuse_slot = v == 1;
        if (x->reuse_slot) reuse_locs_[x.get()] = reuse->loc;
      }
      return x;
    }
    case BK::Store:
      fail_at(e.loc, "store(...) is a statement; it returns nothing");
    case BK::AtomicAdd: {
      auto x = std::make_unique<ir::Expr>(ExprKind::AtomicAdd, e.loc);
      x->access = std::make_unique<ir::Access>(lower_access(*e.args[0]));
      x->a = lower_expr(*e.args[1]);
      if (auto m = kwarg(e, "mask")) x->b = lower_expr(*m);
      if (const dsl::Expr* bulk = kwarg(e, "bulk")) {
        // 1: the bulk copy engine adds the tile where the target and the form allow
        // (assign-layouts decides; ir.h: bulk); 0 (the default): each thread its elements.
        const int64_t v = const_int(*bulk, "bulk");
        if (v != 0 && v != 1) fail_at(bulk->loc, str("atomic_add's bulk must be 0 or 1, got ", v));
        x->bulk = v == 1;
      }
      return x;
    }
    case BK::Fence:
      return std::make_unique<ir::Expr>(ExprKind::Fence, e.loc);
    case BK::Prefetch: {
      auto x = std::make_unique<ir::Expr>(ExprKind::Prefetch, e.loc);
      x->access = std::make_unique<ir::Access>(lower_access(*e.args[0]));
      return x;
    }
    case BK::Dot: {
      auto x = std::make_unique<ir::Expr>(ExprKind::Dot, e.loc);
      x->a = lower_expr(*e.args[0]);
      x->b = lower_expr(*e.args[1]);
      if (e.args.size() == 3) x->c = lower_expr(*e.args[2]);
      if (const dsl::Expr* exact = kwarg(e, "exact")) {
        // f32 operands: 0 rounds them to TF32 (one MMA per K step), 1 keeps fp32 accuracy
        // (3xTF32). 16-bit operands' products are exact in f32 either way.
        const int64_t v = const_int(*exact, "exact");
        if (v != 0 && v != 1) fail_at(exact->loc, str("dot's exact must be 0 or 1, got ", v));
        x->int_value = v;
      }
      if (const dsl::Expr* wg = kwarg(e, "wgmma")) {
        // 1 (the default): Hopper's warpgroup tensor cores where the dot fits them
        // (select-wgmma); 0: mma.sync always, so that a tunable can let the tuner choose.
        const int64_t v = const_int(*wg, "wgmma");
        if (v != 0 && v != 1) fail_at(wg->loc, str("dot's wgmma must be 0 or 1, got ", v));
        x->wgmma = v ? 0 : -1;
      }
      if (const dsl::Expr* issue = kwarg(e, "issue")) {
        // 1: on wgmma, issued and waited for at its result's first use (ir.h: issue_early), so
        // that the statements written between overlap it; 0 (the default): done when it returns.
        const int64_t v = const_int(*issue, "issue");
        if (v != 0 && v != 1) fail_at(issue->loc, str("dot's issue must be 0 or 1, got ", v));
        x->issue_early = v == 1;
      }
      if (const dsl::Expr* sa = kwarg(e, "shared_a")) {
        // 1 (the default): a shared A tile the tensor cores can read through a descriptor is
        // read so (select-wgmma); 0: loaded into registers, so that a tunable lets the tuner
        // weigh the registers saved against the shared-memory bytes read again at each wgmma.
        const int64_t v = const_int(*sa, "shared_a");
        if (v != 0 && v != 1) fail_at(sa->loc, str("dot's shared_a must be 0 or 1, got ", v));
        x->registers_a = v == 0;
      }
      return x;
    }
    case BK::Trans: {
      auto x = std::make_unique<ir::Expr>(ExprKind::Trans, e.loc);
      x->a = lower_expr(*e.args[0]);
      return x;
    }
    case BK::ReduceSum:
    case BK::ReduceMax:
    case BK::ReduceMin: {
      auto x = std::make_unique<ir::Expr>(ExprKind::Reduce, e.loc);
      x->reduce_op = b->kind == BK::ReduceSum   ? ir::ReduceOp::Sum
                     : b->kind == BK::ReduceMax ? ir::ReduceOp::Max
                                                : ir::ReduceOp::Min;
      x->axis = axis_arg(e, -1);
      x->a = lower_expr(*e.args[0]);
      return x;
    }
    case BK::ClusterSum: {
      // A barrier of the whole cluster: every program must reach it, once per launch, so it
      // may only be the whole value of a top-level declaration or assignment.
      if (!cluster_sum_allowed_)
        fail_at(e.loc, "cluster_sum must be the whole value of a 'let'/'frag' declaration or "
                       "an assignment at the kernel body's top level (not in a loop, a runtime "
                       "'if' or another expression): every program of a cluster must reach it");
      if (saw_return_)
        fail_at(e.loc, "cluster_sum after a 'return': the programs that returned would never "
                       "reach it (the others would wait for them forever)");
      cluster_sum_allowed_ = false;
      auto x = std::make_unique<ir::Expr>(ExprKind::ClusterSum, e.loc);
      x->a = lower_expr(*e.args[0]);
      return x;
    }
    case BK::SumTo: {
      // Resolved by infer_types, which knows both shapes.
      auto x = std::make_unique<ir::Expr>(ExprKind::Reduce, e.loc);
      x->reduce_op = ir::ReduceOp::Sum;
      x->axis = ir::kSumToLike;
      x->a = lower_expr(*e.args[0]);
      x->b = lower_expr(*e.args[1]);
      return x;
    }
    case BK::CumSum:
    case BK::CumProd: {
      auto x = std::make_unique<ir::Expr>(ExprKind::Scan, e.loc);
      x->reduce_op = b->kind == BK::CumSum ? ir::ReduceOp::Sum : ir::ReduceOp::Prod;
      x->axis = axis_arg(e, -1); // -1: the last axis (resolved by infer_types)
      x->a = lower_expr(*e.args[0]);
      return x;
    }
    case BK::SolveTril: {
      auto x = std::make_unique<ir::Expr>(ExprKind::SolveTril, e.loc);
      x->a = lower_expr(*e.args[0]);
      return x;
    }
    case BK::Where: {
      auto x = std::make_unique<ir::Expr>(ExprKind::Select, e.loc);
      x->a = lower_expr(*e.args[0]);
      x->b = lower_expr(*e.args[1]);
      x->c = lower_expr(*e.args[2]);
      return fold(std::move(x));
    }
    case BK::Min:
      return math(ir::MathFn::Min, e, 2);
    case BK::Max:
      return math(ir::MathFn::Max, e, 2);
    case BK::Clamp: {
      // clamp(x, lo, hi) = min(max(x, lo), hi)
      auto inner = std::make_unique<ir::Expr>(ExprKind::Math, e.loc);
      inner->math = ir::MathFn::Max;
      inner->a = lower_expr(*e.args[0]);
      inner->b = lower_expr(*e.args[1]);
      auto outer = std::make_unique<ir::Expr>(ExprKind::Math, e.loc);
      outer->math = ir::MathFn::Min;
      outer->a = fold(std::move(inner));
      outer->b = lower_expr(*e.args[2]);
      return fold(std::move(outer));
    }
    case BK::Abs:
      return math(ir::MathFn::Abs, e, 1);
    case BK::Exp:
      return math(ir::MathFn::Exp, e, 1);
    case BK::Exp2:
      return math(ir::MathFn::Exp2, e, 1);
    case BK::Log:
      return math(ir::MathFn::Log, e, 1);
    case BK::Log2:
      return math(ir::MathFn::Log2, e, 1);
    case BK::Sqrt:
      return math(ir::MathFn::Sqrt, e, 1);
    case BK::Rsqrt:
      return math(ir::MathFn::Rsqrt, e, 1);
    case BK::Floor:
      return math(ir::MathFn::Floor, e, 1);
    case BK::Ceil:
      return math(ir::MathFn::Ceil, e, 1);
    case BK::Tanh:
      return math(ir::MathFn::Tanh, e, 1);
    case BK::Sigmoid:
      return math(ir::MathFn::Sigmoid, e, 1);
    case BK::Pow:
      return math(ir::MathFn::Pow, e, 2);
    case BK::Cast: {
      auto x = std::make_unique<ir::Expr>(ExprKind::Cast, e.loc);
      x->type.dtype = resolve_dtype(e.type_arg->dtype, e.type_arg->loc);
      x->a = lower_expr(*e.args[0]);
      return fold(std::move(x));
    }
    case BK::Unpack4: {
      auto x = std::make_unique<ir::Expr>(ExprKind::Unpack, e.loc);
      x->type.dtype = resolve_dtype(e.type_arg->dtype, e.type_arg->loc);
      x->extent = 4; // bits per field
      x->a = lower_expr(*e.args[0]);
      if (e.args.size() == 2) x->b = lower_expr(*e.args[1]);
      if (const dsl::Expr* il = kwarg(e, "interleaved")) {
        // 1: a word's fields i and i + 4 are adjacent values (the order a repack can choose
        // so that the tensor cores' operand pairs need no permutes: tj::dot_q4).
        const int64_t v = const_int(*il, "interleaved");
        if (v != 0 && v != 1)
          fail_at(il->loc, str("unpack4's interleaved must be 0 or 1, got ", v));
        x->int_value = v;
      }
      return x;
    }
    case BK::Zip:
      fail_at(e.loc, "zip(...) pairs index tiles as one subscript of a tensor access "
                     "(X[zip(rows, cols), :]); it is not a value");
    case BK::Cdiv: {
      // cdiv(a, b) = (a + b - 1) / b
      ExprPtr a = lower_expr(*e.args[0]);
      ExprPtr b2 = lower_expr(*e.args[1]);
      ExprPtr num = fold(ir::make_binary(
          dsl::BinaryOp::Sub,
          fold(ir::make_binary(dsl::BinaryOp::Add, std::move(a), b2->clone(), e.loc)),
          literal_int(1, e.loc), e.loc));
      return fold(ir::make_binary(dsl::BinaryOp::Div, std::move(num), std::move(b2), e.loc));
    }
    }
    fail_at(e.loc, str("unsupported call '", e.name, "'"));
  }

  const dsl::Kernel& ast_;
  std::map<const ir::Expr*, dsl::SourceLoc> reuse_locs_; ///< copies with reuse = 1
  const Bindings& bindings_;
  const SpecialiseOptions& options_;
  int64_t smem_limit_ = 0; ///< SMEM: the options' limit within the target's (set first thing)
  ir::Kernel* k_ = nullptr;
  HostEnv env_;
  std::map<std::string, int64_t> consts_;
  std::map<std::string, DType> dtypes_;
  std::map<std::string, std::pair<int, int>> dims_;
  std::map<std::string, int> scalars_;
  std::map<std::string, int> tensors_;
  std::vector<std::map<std::string, ir::Var*>> scopes_;
  std::set<std::string> used_names_;
  std::map<ir::Var*, int> var_loop_depth_;
  int current_loop_depth_ = 0;
  int cond_depth_ = 0;               ///< runtime 'if's around the statement being lowered
  bool cluster_sum_allowed_ = false; ///< the value being lowered is a top-level cluster_sum
  bool saw_return_ = false;
  static bool is_cluster_sum(const dsl::Expr& e) {
    return e.kind == dsl::ExprKind::Call && e.name == "cluster_sum";
  }
};

} // namespace

std::unique_ptr<ir::Kernel> specialise(const dsl::Kernel& k, const Bindings& bindings,
                                       const SpecialiseOptions& options) {
  return Lowering(k, bindings, options).run();
}

} // namespace tilejit
