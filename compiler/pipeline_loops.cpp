#include "compiler/pipeline_loops.h"

#include "compiler/ir_printer.h"
#include "support/text.h"

#include <functional>
#include <map>
#include <set>

namespace tilejit {

using ir::ExprKind;
using ir::Space;
using Role = ir::Stmt::PipelineRole;

namespace {

std::set<ir::Var*> stmt_reads(ir::Stmt& s) {
  std::set<ir::Var*> out;
  ir::for_each_expr_root(s, [&](ir::ExprPtr& root) { ir::vars_read(*root, out); });
  return out;
}

/// Variables assigned anywhere in a block (loop variables included).
void assigned_in(ir::Block& b, std::set<ir::Var*>& out) {
  ir::for_each_stmt(b, [&](ir::Stmt& s) {
    if ((s.kind == ir::StmtKind::Decl || s.kind == ir::StmtKind::Assign ||
         s.kind == ir::StmtKind::For) &&
        s.var)
      out.insert(s.var);
  });
}

/// The first operation in `e` that cannot run ahead of its iteration (an atomic has an
/// effect; a dot, a reduction, a scan or a layout conversion goes through shared memory and
/// barriers), or "".
std::string cannot_run_ahead(ir::Expr& e) {
  std::string what;
  ir::for_each_node(e, [&](ir::Expr& n) {
    if (!what.empty()) return;
    if (n.kind == ExprKind::AtomicAdd) what = "atomic_add";
    if (n.kind == ExprKind::Dot) what = "dot";
    if (n.kind == ExprKind::Reduce) what = str("reduce_", ir::reduce_op_name(n.reduce_op));
    if (n.kind == ExprKind::Scan) what = "a scan";
    if (n.kind == ExprKind::SolveTril) what = "solve_tril";
    if (n.kind == ExprKind::Convert) what = "a layout conversion";
  });
  return what;
}

/// What one pipelined loop's analysis knows about its body's values.
class LoopAnalysis {
public:
  explicit LoopAnalysis(ir::Stmt& loop) {
    assigned_in(loop.body, variant_);
    ahead_ok_.insert(loop.var);
  }

  /// Finds the copies that can run ahead, in program order, at any depth of `if`s whose
  /// conditions can run ahead too (not inside nested loops).
  void scan(ir::Block& b, bool guards_ok) {
    for (auto& sp : b) {
      ir::Stmt& s = *sp;
      if (s.kind == ir::StmtKind::If) {
        std::string why = blocked_by(stmt_reads(s));
        bool ok = guards_ok && why.empty();
        size_t before = candidates_.size();
        scan(s.body, ok);
        scan(s.else_body, ok);
        if (!ok && candidates_.size() == before && why_not_.empty() && !why.empty() &&
            contains_copy(s))
          why_not_ = "a copy is under an `if` whose condition " + why;
        continue;
      }
      if (s.kind != ir::StmtKind::Decl && s.kind != ir::StmtKind::Assign) continue;
      std::string why = blocked_by(stmt_reads(s));
      if (s.value->kind == ExprKind::Copy && s.var->type.space == Space::Shared) {
        if (!why.empty() || !guards_ok) {
          if (why_not_.empty())
            why_not_ = why.empty() ? "a copy is under an `if` whose condition cannot run ahead"
                                   : "a copy's address " + why;
          continue;
        }
        if (copy_targets_.count(s.var)) {
          why_not_ = "a shared tile is filled twice in one iteration";
          continue;
        }
        copy_targets_.insert(s.var);
        candidates_.push_back(&s);
        continue;
      }
      if (s.kind != ir::StmtKind::Decl || s.var->type.space == Space::Shared) continue;
      if (!why.empty()) {
        not_ahead_[s.var] = why;
      } else if (std::string op = cannot_run_ahead(*s.value); !op.empty()) {
        not_ahead_[s.var] = str("uses '", s.var->name, "' (line ", s.loc.line, "), computed with ",
                                op, ", which cannot run ahead of its iteration");
      } else {
        ahead_ok_.insert(s.var);
      }
    }
  }

  std::vector<ir::Stmt*>& candidates() { return candidates_; }
  const std::string& why_not() const { return why_not_; }
  void set_why_not(std::string w) { why_not_ = std::move(w); }

private:
  /// Empty when every variable read is fixed in the loop or can run ahead; else why not, as
  /// the end of a sentence ("depends on 'm', which ...").
  std::string blocked_by(const std::set<ir::Var*>& reads) const {
    for (ir::Var* v : reads) {
      if (!variant_.count(v) || ahead_ok_.count(v)) continue;
      auto it = not_ahead_.find(v);
      if (it != not_ahead_.end()) {
        // Say what is at the root of a chain ("uses 'r', computed with ...").
        if (starts_with(it->second, "uses ") || starts_with(it->second, "depends "))
          return it->second;
        return str("uses '", v->name, "', which ", it->second);
      }
      return str("depends on '", v->name, "' (line ", v->loc.line,
                 "), a value computed from the previous iterations");
    }
    return {};
  }

  static bool contains_copy(ir::Stmt& s) {
    bool found = false;
    ir::for_each_stmt(s.body, [&](ir::Stmt& t) {
      found = found || ((t.kind == ir::StmtKind::Decl || t.kind == ir::StmtKind::Assign) &&
                        t.value && t.value->kind == ExprKind::Copy);
    });
    return found;
  }

  std::set<ir::Var*> variant_;  // assigned inside the loop body
  std::set<ir::Var*> ahead_ok_; // can be computed for a later iteration
  std::map<ir::Var*, std::string> not_ahead_;
  std::set<ir::Var*> copy_targets_;
  std::vector<ir::Stmt*> candidates_;
  std::string why_not_;
};

/// Marks producer inputs: the declarations the producers need (transitively), and the `if`s
/// that hold producers or their inputs, so that expand-pipelines can run them ahead.
void mark_producer_inputs(ir::Block& body, const std::vector<ir::Stmt*>& producers) {
  std::set<ir::Var*> needed;
  for (ir::Stmt* c : producers)
    for (ir::Var* v : stmt_reads(*c)) needed.insert(v);
  // Conditions of the ifs around producers are needed too.
  std::function<bool(ir::Block&)> holds_producer = [&](ir::Block& b) {
    bool any = false;
    for (auto& sp : b) {
      ir::Stmt& s = *sp;
      if (s.pipeline_role == Role::Producer) any = true;
      // Both branches are visited (not ||): each marks the producers it holds.
      const bool in_branches =
          s.kind == ir::StmtKind::If && (static_cast<int>(holds_producer(s.body)) |
                                         static_cast<int>(holds_producer(s.else_body)));
      if (in_branches) {
        for (ir::Var* v : stmt_reads(s)) needed.insert(v);
        s.pipeline_role = Role::ProducerInput;
        any = true;
      }
    }
    return any;
  };
  holds_producer(body);
  // Declarations the producers read, to a fixed point (an input's own inputs).
  for (bool changed = true; changed;) {
    changed = false;
    ir::for_each_stmt(body, [&](ir::Stmt& s) {
      if (s.kind == ir::StmtKind::Decl && needed.count(s.var) && s.pipeline_role == Role::None) {
        s.pipeline_role = Role::ProducerInput;
        for (ir::Var* v : stmt_reads(s)) changed |= needed.insert(v).second;
      }
    });
  }
}

void pipeline_one(ir::Stmt& loop, std::vector<dsl::Diagnostic>& warnings) {
  LoopAnalysis a(loop);
  a.scan(loop.body, /*guards_ok=*/true);
  std::vector<ir::Stmt*>& candidates = a.candidates();
  // A copy target written anywhere else in the loop cannot become a ring buffer.
  for (ir::Stmt* c : candidates) {
    int writes = 0;
    ir::for_each_stmt(loop.body, [&](ir::Stmt& s) {
      if ((s.kind == ir::StmtKind::Decl || s.kind == ir::StmtKind::Assign) && s.var == c->var)
        ++writes;
    });
    if (writes > 1) {
      a.set_why_not("a shared tile '" + c->var->name + "' is written more than once in the loop");
      candidates.clear();
      break;
    }
  }
  if (candidates.empty()) {
    loop.loop_kind = ir::LoopKind::Serial;
    warnings.push_back(
        {dsl::Severity::Warning, loop.loc,
         "pipelined loop runs serially: " +
             (a.why_not().empty() ? std::string("it copies nothing into shared memory")
                                  : a.why_not())});
    return;
  }
  for (ir::Stmt* c : candidates) {
    c->pipeline_role = Role::Producer;
    c->var->stages = loop.stages;
  }
  mark_producer_inputs(loop.body, candidates);
}

void walk(ir::Block& b, std::vector<dsl::Diagnostic>& warnings) {
  for (auto& s : b) {
    if (s->kind == ir::StmtKind::For && s->loop_kind == ir::LoopKind::Pipelined)
      pipeline_one(*s, warnings);
    walk(s->body, warnings);
    walk(s->else_body, warnings);
  }
}

} // namespace

std::vector<dsl::Diagnostic> pipeline_loops(ir::Kernel& k) {
  std::vector<dsl::Diagnostic> warnings;
  walk(k.body, warnings);
  return warnings;
}

} // namespace tilejit
