#include "compiler/producer_warps.h"

#include "support/text.h"

#include <set>
#include <vector>

namespace tilejit {

using namespace ir;

ExprPtr clone_renamed(const Expr& e, const std::map<const Var*, Var*>& renamed) {
  ExprPtr c = e.clone();
  for_each_node(*c, [&](Expr& n) {
    if ((n.kind != ExprKind::VarRef && n.kind != ExprKind::Convert) || !n.var) return;
    if (auto it = renamed.find(n.var); it != renamed.end()) n.var = it->second;
  });
  return c;
}

namespace {

using Fresh = std::function<Var*(const std::string&, const Type&, const SourceLoc&)>;

/// The statements from the kernel's body down to `target`: enclosing loops and ifs, then
/// target itself; with, per step, the block holding it. False if target is not found.
bool find_path(Block& b, const Stmt* target, std::vector<Stmt*>& path,
               std::vector<Block*>& levels) {
  for (StmtPtr& sp : b) {
    path.push_back(sp.get());
    levels.push_back(&b);
    if (sp.get() == target) return true;
    if (find_path(sp->body, target, path, levels) || find_path(sp->else_body, target, path, levels))
      return true;
    path.pop_back();
    levels.pop_back();
  }
  return false;
}

/// A value the copying thread can compute by itself: scalar nodes only (scalar loads and
/// arithmetic on program ids, sizes, parameters and other scalars), nothing with an effect.
bool scalar_only(const Expr& e) {
  bool ok = true;
  for_each_node(const_cast<Expr&>(e), [&](Expr& n) {
    if (!n.type.is_scalar() || n.type.space != Space::Scalar) ok = false;
    if (n.kind == ExprKind::AtomicAdd || n.kind == ExprKind::Fence || n.kind == ExprKind::Copy ||
        n.kind == ExprKind::ClusterSum)
      ok = false;
  });
  return ok;
}

/// `if c { return }`: an early exit the producer follows (c computed like the copies' inputs).
bool early_return(const Stmt& s) {
  return s.kind == StmtKind::If && s.else_body.empty() && s.body.size() == 1 &&
         s.body[0]->kind == StmtKind::Return;
}

bool contains_return(const Stmt& s) {
  if (s.kind == StmtKind::Return) return true;
  for (const Block* b : {&s.body, &s.else_body})
    for (const StmtPtr& c : *b)
      if (contains_return(*c)) return true;
  return false;
}

class Planner {
public:
  Planner(Kernel& k, const Fresh& fresh) : k_(k), fresh_(fresh) {}

  /// Why the copying thread cannot run the program around `loop` ("" when it can); fills the
  /// path, the levels and the statements to clone.
  std::string check(Stmt& loop) {
    path_.clear();
    levels_.clear();
    keep_.clear();
    if (!find_path(k_.body, &loop, path_, levels_)) return "not found in the kernel";
    for (size_t i = 0; i + 1 < path_.size(); ++i) {
      const Stmt& s = *path_[i];
      if (s.kind == StmtKind::For && s.loop_kind == LoopKind::Pipelined)
        return "it is inside another pipelined loop";
      if (s.kind != StmtKind::For && s.kind != StmtKind::If)
        return "it is inside a statement that is not a loop or an if";
    }
    if (k_.threads + 128 > 1024) return str("the block has ", k_.threads, " threads already");
    std::set<Var*> needed;
    auto need = [&](const Expr& e) {
      std::set<Var*> vs;
      vars_read(const_cast<Expr&>(e), vs);
      needed.insert(vs.begin(), vs.end());
    };
    // The loop's bounds and everything its copies and their inputs read.
    need(*loop.lo);
    need(*loop.hi);
    std::set<const Var*> own{loop.var};
    for (const StmtPtr& sp : loop.body) {
      if (sp->pipeline_role == Stmt::PipelineRole::None) continue;
      if (sp->kind != StmtKind::Decl) return "its copies sit inside an if";
      for_each_expr_root(*sp, [&](ExprPtr& root) { need(*root); });
      own.insert(sp->var);
    }
    // The enclosing loops' bounds and ifs' conditions.
    for (size_t i = 0; i + 1 < path_.size(); ++i) {
      Stmt& s = *path_[i];
      if (s.kind == StmtKind::For) {
        need(*s.lo);
        need(*s.hi);
        own.insert(s.var);
      } else {
        need(*s.value);
      }
    }
    // Early returns: `if c { return }` before the path at an enclosing level is followed;
    // any other return before the loop ends (or inside it) would leave the copying thread
    // waiting for slots nobody releases.
    for (size_t i = 0; i < path_.size(); ++i) {
      bool before = true;
      for (StmtPtr& sp : *levels_[i]) {
        if (sp.get() == path_[i]) {
          before = false;
          continue;
        }
        if (!contains_return(*sp)) continue;
        if (before && early_return(*sp)) {
          need(*sp->value);
          keep_.insert(sp.get());
          continue;
        }
        if (before || i > 0) return "the block returns early where its producer cannot follow";
      }
    }
    for (const StmtPtr& sp : loop.body)
      if (contains_return(*sp)) return "the block returns from inside the loop";
    // The backward slice: every definition of a needed scalar, at an enclosing level.
    std::vector<Var*> work(needed.begin(), needed.end());
    std::set<Var*> seen(needed.begin(), needed.end());
    while (!work.empty()) {
      Var* v = work.back();
      work.pop_back();
      if (own.count(v)) continue;
      std::string why;
      for_each_stmt(k_.body, [&](Stmt& s) {
        if ((s.kind != StmtKind::Decl && s.kind != StmtKind::Assign) || s.var != v) return;
        if (!on_a_level(s))
          why = str("its copies read '", v->name, "', which is set inside a branch or a loop");
        else if (v->type.space != Space::Scalar || !v->type.is_scalar() || !scalar_only(*s.value))
          why = str("its copies read '", v->name, "', which is computed from tiles");
        else
          keep_.insert(&s);
        std::set<Var*> vs;
        vars_read(*s.value, vs);
        for (Var* u : vs)
          if (seen.insert(u).second) work.push_back(u);
      });
      if (!why.empty()) return why;
    }
    return "";
  }

  /// The producer program around the loop: enclosing loops and ifs, kept statements, cloned
  /// with fresh variables.
  ProducerProgram build(Stmt& loop) {
    ProducerProgram p;
    p.loop = &loop;
    p.loc = loop.loc;
    build_level(0, p.program, p);
    return p;
  }

private:
  bool on_a_level(const Stmt& s) const {
    for (Block* b : levels_)
      for (const StmtPtr& sp : *b)
        if (sp.get() == &s) return true;
    return false;
  }

  Var* copy_var(const Var* v, ProducerProgram& p) {
    Var* c = fresh_(v->name + "_p", v->type, v->loc);
    c->layout = v->layout;
    c->declared_type = v->declared_type;
    c->is_loop_var = v->is_loop_var;
    c->assigned_in_loop = v->assigned_in_loop;
    p.renamed[v] = c;
    return c;
  }

  void build_level(size_t i, Block& out, ProducerProgram& p) {
    for (const StmtPtr& sp : *levels_[i]) {
      const Stmt& s = *sp;
      if (sp.get() == path_[i]) {
        if (i + 1 == path_.size()) {
          p.loop_block = i == 0 ? nullptr : &out;
          p.loop_index = out.size();
          continue;
        }
        auto c = std::make_unique<Stmt>(s.kind, s.loc);
        if (s.kind == StmtKind::For) {
          c->lo = clone_renamed(*s.lo, p.renamed);
          c->hi = clone_renamed(*s.hi, p.renamed);
          c->step = s.step->clone();
          c->var = copy_var(s.var, p);
          build_level(i + 1, c->body, p);
        } else {
          c->value = clone_renamed(*s.value, p.renamed);
          const bool in_then = levels_[i + 1] == &s.body;
          build_level(i + 1, in_then ? c->body : c->else_body, p);
        }
        out.push_back(std::move(c));
        continue;
      }
      if (!keep_.count(&s)) continue;
      auto c = std::make_unique<Stmt>(s.kind, s.loc);
      c->value = clone_renamed(*s.value, p.renamed);
      if (early_return(s)) {
        c->body.push_back(std::make_unique<Stmt>(StmtKind::Return, s.body[0]->loc));
      } else if (s.kind == StmtKind::Decl) {
        c->var = copy_var(s.var, p);
      } else {
        auto it = p.renamed.find(s.var);
        c->var = it != p.renamed.end() ? it->second : copy_var(s.var, p);
      }
      out.push_back(std::move(c));
    }
  }

  Kernel& k_;
  const Fresh& fresh_;
  std::vector<Stmt*> path_;
  std::vector<Block*> levels_;
  std::set<const Stmt*> keep_;
};

} // namespace

ProducerProgram plan_producer_warps(Kernel& k, const std::function<std::string(Stmt&)>& why_not,
                                    const Fresh& fresh) {
  std::vector<Stmt*> asked;
  for_each_stmt(k.body, [&](Stmt& s) {
    if (s.kind == StmtKind::For && s.loop_kind == LoopKind::Pipelined && s.producer)
      asked.push_back(&s);
  });
  ProducerProgram taken;
  Planner planner(k, fresh);
  for (Stmt* loop : asked) {
    std::string why = taken.loop ? "another loop of the kernel has the producer warps" : "";
    if (why.empty()) why = why_not(*loop);
    if (why.empty()) why = planner.check(*loop);
    if (!why.empty()) {
      loop->producer = false;
      loop->note = "producer = 1 not taken: " + why;
      continue;
    }
    taken = planner.build(*loop);
  }
  return taken;
}

} // namespace tilejit
