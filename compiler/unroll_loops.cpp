#include "compiler/unroll_loops.h"

#include "support/text.h"

#include <map>
#include <set>

namespace tilejit {

using namespace ir;

namespace {

/// Touches memory other than by a load (an atomic, a fence, a copy into shared memory, a
/// prefetch): then later iterations' loads may not move above this iteration's work.
bool has_effect(const Expr& e) {
  bool effect = false;
  for_each_node(const_cast<Expr&>(e), [&](Expr& n) {
    effect = effect || n.kind == ExprKind::AtomicAdd || n.kind == ExprKind::Fence ||
             n.kind == ExprKind::Copy || n.kind == ExprKind::Prefetch;
  });
  return effect;
}

bool rewritable(const Stmt& loop) {
  if (loop.kind != StmtKind::For || loop.loop_kind != LoopKind::Serial || loop.unroll < 2)
    return false;
  if (!loop.step || loop.step->kind != ExprKind::Const || loop.step->int_value <= 0) return false;
  for (const StmtPtr& s : loop.body) {
    if (s->kind != StmtKind::Decl && s->kind != StmtKind::Assign) return false;
    if (s->var->type.space == Space::Shared) return false;
    if (s->value && has_effect(*s->value)) return false;
  }
  return true;
}

class LoopUnroller {
public:
  explicit LoopUnroller(Kernel& k) : k_(k) {
    for (const auto& v : k.vars) names_.insert(v->name);
  }

  void run(Block& block) {
    for (StmtPtr& s : block) {
      run(s->body);
      run(s->else_body);
      if (rewritable(*s)) rewrite(*s);
    }
  }

private:
  /// A fresh name for copy `k` of `v` ("m_u1"), unique in the kernel.
  Var* copy_of(const Var* v, int k) {
    std::string name = str(v->name, "_u", k);
    for (int n = 2; names_.count(name); ++n) name = str(v->name, "_u", k, "_", n);
    names_.insert(name);
    Var* c = k_.new_var(name, v->type, v->loc);
    c->declared_type = v->declared_type;
    c->assigned_in_loop = v->assigned_in_loop;
    return c;
  }

  /// A copy of `e` for iteration `k` of the group: the loop variable becomes `i + k * step` and
  /// the body's own variables become that iteration's copies.
  ExprPtr for_iteration(const Expr& e, const Var* loop_var, int64_t offset,
                        const std::map<const Var*, Var*>& renamed) {
    ExprPtr c = e.clone();
    for_each_node(*c, [&](Expr& n) {
      if (n.kind != ExprKind::VarRef) return;
      if (n.var == loop_var && offset != 0) {
        n.kind = ExprKind::Binary;
        n.binary_op = dsl::BinaryOp::Add;
        n.a = make_var_ref(n.var, n.loc);
        n.b = make_int(offset, DType::I32, n.loc);
        n.b->literal = true;
        n.var = nullptr;
      } else if (auto it = renamed.find(n.var); it != renamed.end()) {
        n.var = it->second;
      }
    });
    return c;
  }

  void rewrite(Stmt& loop) {
    const int unroll = loop.unroll;
    const int64_t step = loop.step->int_value;
    std::set<const Var*> changed; // declared or assigned in the body
    for (const StmtPtr& s : loop.body) changed.insert(s->var);
    // A load is hoisted when it reads only the loop variable and values fixed in the loop.
    auto hoistable = [&](const Stmt& s) {
      if (s.kind != StmtKind::Decl || s.value->kind != ExprKind::Load) return false;
      std::set<Var*> reads;
      vars_read(*s.value, reads);
      for (const Var* v : reads)
        if (v != loop.var && changed.count(v)) return false;
      return true;
    };
    Block loads, bodies;
    for (int k = 0; k < unroll; ++k) {
      std::map<const Var*, Var*> renamed;
      Block rest;
      for (const StmtPtr& s : loop.body) {
        auto c = std::make_unique<Stmt>(s->kind, s->loc);
        c->value = for_iteration(*s->value, loop.var, k * step, renamed);
        if (s->kind == StmtKind::Decl && k > 0) {
          c->var = copy_of(s->var, k);
          renamed[s->var] = c->var;
        } else {
          c->var = s->kind == StmtKind::Decl ? s->var
                                             : (renamed.count(s->var) ? renamed[s->var] : s->var);
        }
        // A later iteration's load runs before its guard: out-of-range subscripts in it are
        // errors only where the iteration runs and uses the value (the interpreter checks so).
        if (hoistable(*s) && k > 0) c->value->access->speculative = true;
        (hoistable(*s) ? loads : rest).push_back(std::move(c));
      }
      if (k == 0) {
        for (auto& s : rest) bodies.push_back(std::move(s));
        continue;
      }
      // Iteration i + k * step runs only where it exists (its loads ran regardless: they read
      // in bounds or not at all, and nothing uses them).
      auto guard = std::make_unique<Stmt>(StmtKind::If, loop.loc);
      auto at = make_binary(dsl::BinaryOp::Add, make_var_ref(loop.var, loop.loc),
                            make_int(k * step, DType::I32, loop.loc), loop.loc);
      at->b->literal = true;
      guard->value = make_binary(dsl::BinaryOp::Lt, std::move(at), loop.hi->clone(), loop.loc);
      guard->body = std::move(rest);
      bodies.push_back(std::move(guard));
    }
    loop.body = std::move(loads);
    for (auto& s : bodies) loop.body.push_back(std::move(s));
    loop.step = make_int(step * unroll, DType::I32, loop.step->loc);
    loop.step->literal = true;
    loop.unroll = 0;
  }

  Kernel& k_;
  std::set<std::string> names_;
};

} // namespace

void unroll_loops(Kernel& k) {
  LoopUnroller(k).run(k.body);
}

} // namespace tilejit
