#include "compiler/producer_warps.h"

#include "compiler/async_choices.h"
#include "compiler/plan_shared_memory.h"
#include "support/error.h"
#include "support/text.h"

#include <cstdlib>
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

/// `atomic_add(..., bulk = 1)` of a tile staged for it (assign-layouts' `convert<shared>`: a
/// tile of the compiler's own, written nowhere else), as a statement of its own.
bool staged_bulk_atomic(const Stmt& s) {
  return s.kind == StmtKind::Eval && s.value->kind == ExprKind::AtomicAdd && s.value->bulk &&
         s.value->a->kind == ExprKind::Convert && s.value->a->type.space == Space::Shared &&
         s.value->a->var;
}

/// Whether `v` is written by its declaration alone in `body` (a tile the threads also write,
/// or a copy's target copied into again, is theirs to order with barriers).
bool written_once(Block& body, const Var* v) {
  int writes = 0;
  for_each_stmt(body, [&](Stmt& s) {
    if ((s.kind == StmtKind::Decl || s.kind == StmtKind::Assign) && s.var == v) ++writes;
    for_each_expr_root(s, [&](ExprPtr& root) {
      for_each_node(*root, [&](Expr& n) {
        if (n.kind == ExprKind::Convert && n.var == v) ++writes;
      });
    });
  });
  return writes == 1;
}

/// Copies the producer warps may issue before `path`'s loop (its last statement): shared-tile
/// declarations by copy at a level of the path inside an enclosing loop's body, before the
/// path goes on (a tile copied once per kernel gains nothing from them; an enclosing loop's
/// next run does).
std::vector<Stmt*> outer_copy_candidates(const std::vector<Stmt*>& path,
                                         const std::vector<Block*>& levels) {
  std::vector<Stmt*> out;
  bool in_loop = false;
  for (size_t i = 0; i < path.size(); ++i) {
    in_loop = in_loop || (i > 0 && path[i - 1]->kind == StmtKind::For);
    if (!in_loop) continue;
    for (const StmtPtr& sp : *levels[i]) {
      if (sp.get() == path[i]) break;
      if (sp->kind == StmtKind::Decl && sp->var->type.space == Space::Shared && sp->value &&
          sp->value->kind == ExprKind::Copy && written_once(*levels[0], sp->var))
        out.push_back(sp.get());
    }
  }
  return out;
}

/// TILEJIT_PRODUCER_OUTER_COPIES=0 leaves the copies before the loop to the threads (to
/// measure what the copying thread's issuing them is worth).
bool outer_copies_enabled() {
  return env_switch("TILEJIT_PRODUCER_OUTER_COPIES",
                    "whether producer warps issue the copies before their loop");
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

  /// Why the producer warps cannot run their programs around `loop` ("" when they can), with
  /// the loop's bulk atomic_adds among their work or not; fills the path, the levels, the
  /// statements to clone and the reductions taken.
  std::string check(Stmt& loop, bool with_reductions) {
    path_.clear();
    levels_.clear();
    keep_.clear();
    reductions_.clear();
    outer_.clear();
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
    // The additions' addresses (not their values: the threads stage those).
    if (with_reductions)
      for (const StmtPtr& sp : loop.body) {
        if (!staged_bulk_atomic(*sp)) continue;
        if (std::string why = staged_alone(*sp->value->a->var); !why.empty()) return why;
        for (const AccessIndex& ix : sp->value->access->indices) need(*ix.index);
        reductions_.push_back(sp.get());
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
    if (std::string why = slice(needed, own, keep_); !why.empty()) return why;
    // The copies before the loop in an enclosing loop's body that the TMA can make and whose
    // addresses the copying thread can compute (the others stay the threads').
    for (Stmt* c : outer_copy_candidates(path_, levels_)) {
      if (!outer_copies_enabled() || !tma_copy_fits(k_, *c)) continue;
      std::set<Var*> reads;
      for_each_expr_root(*c, [&](ExprPtr& root) { vars_read(*root, reads); });
      std::set<const Stmt*> keep;
      if (!slice(reads, own, keep).empty()) continue;
      keep_.insert(keep.begin(), keep.end());
      keep_.insert(c);
      outer_.insert(c);
    }
    return "";
  }

  /// The roles' programs around the loop: enclosing loops and ifs, kept statements, cloned
  /// with fresh variables (the copying thread's named `_p`, the reducing warp's `_r`).
  ProducerProgram build(Stmt& loop) {
    ProducerProgram p;
    p.loop = &loop;
    p.loc = loop.loc;
    build_level(0, p.copies.program, p.copies, "_p", &p.outer_copies);
    p.reductions = reductions_;
    if (!reductions_.empty()) build_level(0, p.reduces.program, p.reduces, "_r", nullptr);
    return p;
  }

  /// The loop's bulk atomic_adds of staged tiles (the producer warps may leave them to the
  /// threads: then check again without).
  bool has_reductions(const Stmt& loop) const {
    for (const StmtPtr& sp : loop.body)
      if (staged_bulk_atomic(*sp)) return true;
    return false;
  }

private:
  /// The backward slice of `needed`: every definition of a needed scalar (but the role's own
  /// `own`), at an enclosing level, into `keep`; why not, if one is not the copying thread's
  /// to compute.
  std::string slice(const std::set<Var*>& needed, const std::set<const Var*>& own,
                    std::set<const Stmt*>& keep) const {
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
          keep.insert(&s);
        std::set<Var*> vs;
        vars_read(*s.value, vs);
        for (Var* u : vs)
          if (seen.insert(u).second) work.push_back(u);
      });
      if (!why.empty()) return why;
    }
    return "";
  }

  /// Why the threads cannot hand staged tile `v` to the reducing warp: its bytes must be its
  /// own while the warp reads them (the plan lets tiles whose lifetimes do not overlap share,
  /// and the warp reads it past the statement that staged it).
  std::string staged_alone(const Var& v) const {
    const int64_t lo = v.smem_offset, hi = lo + shared_tile_bytes(v) * v.stages;
    for (const auto& u : k_.vars) {
      if (u.get() == &v || u->type.space != Space::Shared || u->smem_offset < 0) continue;
      const int64_t ulo = u->smem_offset, uhi = ulo + shared_tile_bytes(*u) * u->stages;
      if (ulo < hi && lo < uhi)
        return str("the tile its atomic_add stages shares storage with '", u->name, "'");
    }
    return "";
  }

  bool on_a_level(const Stmt& s) const {
    for (Block* b : levels_)
      for (const StmtPtr& sp : *b)
        if (sp.get() == &s) return true;
    return false;
  }

  Var* copy_var(const Var* v, RoleProgram& p, const char* suffix) {
    Var* c = fresh_(v->name + suffix, v->type, v->loc);
    c->layout = v->layout;
    c->declared_type = v->declared_type;
    c->is_loop_var = v->is_loop_var;
    c->assigned_in_loop = v->assigned_in_loop;
    p.renamed[v] = c;
    return c;
  }

  /// `outer`: the copying thread's program, which issues the copies before the loop (their
  /// pairs recorded there); the reducing warp's (null) has none.
  void build_level(size_t i, Block& out, RoleProgram& p, const char* suffix,
                   std::vector<std::pair<Stmt*, Stmt*>>* outer) {
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
          c->var = copy_var(s.var, p, suffix);
          build_level(i + 1, c->body, p, suffix, outer);
        } else {
          c->value = clone_renamed(*s.value, p.renamed);
          const bool in_then = levels_[i + 1] == &s.body;
          build_level(i + 1, in_then ? c->body : c->else_body, p, suffix, outer);
        }
        out.push_back(std::move(c));
        continue;
      }
      if (!keep_.count(&s)) continue;
      if (outer_.count(&s) && !outer) continue;
      auto c = std::make_unique<Stmt>(s.kind, s.loc);
      c->value = clone_renamed(*s.value, p.renamed);
      if (outer_.count(&s)) {
        c->var = s.var; // the tile itself, filled by the TMA
        outer->emplace_back(sp.get(), c.get());
      } else if (early_return(s)) {
        c->body.push_back(std::make_unique<Stmt>(StmtKind::Return, s.body[0]->loc));
      } else if (s.kind == StmtKind::Decl) {
        c->var = copy_var(s.var, p, suffix);
      } else {
        auto it = p.renamed.find(s.var);
        c->var = it != p.renamed.end() ? it->second : copy_var(s.var, p, suffix);
      }
      out.push_back(std::move(c));
    }
  }

  Kernel& k_;
  const Fresh& fresh_;
  std::vector<Stmt*> path_;
  std::vector<Block*> levels_;
  std::set<const Stmt*> keep_;
  std::vector<Stmt*> reductions_;
  std::set<const Stmt*> outer_; ///< copies before the loop the copying thread issues
};

} // namespace

std::set<const Var*> producer_outer_tiles(Kernel& k) {
  std::set<const Var*> out;
  if (!outer_copies_enabled()) return out; // the threads' copies, planned as before
  for_each_stmt(k.body, [&](Stmt& s) {
    if (s.kind != StmtKind::For || s.loop_kind != LoopKind::Pipelined || !s.producer) return;
    std::vector<Stmt*> path;
    std::vector<Block*> levels;
    if (!find_path(k.body, &s, path, levels)) return;
    for (Stmt* c : outer_copy_candidates(path, levels)) out.insert(c->var);
  });
  return out;
}

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
    if (why.empty()) {
      // With the bulk additions if the reducing warp can issue them; without, the threads.
      const std::string with = planner.check(*loop, true);
      if (!with.empty() && planner.has_reductions(*loop)) {
        why = planner.check(*loop, false);
        if (why.empty()) loop->note = "bulk atomic_adds issued by the threads: " + with;
      } else {
        why = with;
      }
    }
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
