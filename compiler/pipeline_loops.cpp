#include "compiler/pipeline_loops.h"

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

bool has_side_effects_or_shared_temps(ir::Expr& e) {
  bool bad = false;
  ir::for_each_node(e, [&](ir::Expr& n) {
    if (n.kind == ExprKind::AtomicAdd || n.kind == ExprKind::Dot || n.kind == ExprKind::Convert ||
        n.kind == ExprKind::Reduce || n.kind == ExprKind::Scan)
      bad = true;
  });
  return bad;
}

void pipeline_one(ir::Stmt& loop, std::vector<dsl::Diagnostic>& warnings) {
  std::set<ir::Var*> variant; // assigned inside the loop body
  assigned_in(loop.body, variant);
  // Statements that only compute from the loop variable, loop-invariant values and earlier
  // such statements can run ahead.
  std::set<ir::Var*> ahead_ok = {loop.var};
  std::set<ir::Var*> copy_targets;
  std::string why_not;
  std::vector<ir::Stmt*> candidates;
  for (auto& sp : loop.body) {
    ir::Stmt& s = *sp;
    if (s.kind != ir::StmtKind::Decl && s.kind != ir::StmtKind::Assign) continue;
    std::set<ir::Var*> reads = stmt_reads(s);
    bool ok = true;
    for (ir::Var* v : reads)
      if (variant.count(v) && !ahead_ok.count(v)) ok = false;
    if (s.value->kind == ExprKind::Copy && s.var->type.space == Space::Shared) {
      if (!ok) {
        why_not = "a copy's address depends on a value computed from the previous iterations";
        continue;
      }
      if (copy_targets.count(s.var)) {
        why_not = "a shared tile is filled twice in one iteration";
        continue;
      }
      copy_targets.insert(s.var);
      candidates.push_back(&s);
    } else if (ok && s.kind == ir::StmtKind::Decl && s.var->type.space != Space::Shared &&
               !has_side_effects_or_shared_temps(*s.value)) {
      ahead_ok.insert(s.var);
    }
  }
  // A copy target written anywhere else in the loop cannot become a ring buffer.
  for (ir::Stmt* c : candidates) {
    int writes = 0;
    ir::for_each_stmt(loop.body, [&](ir::Stmt& s) {
      if ((s.kind == ir::StmtKind::Decl || s.kind == ir::StmtKind::Assign) && s.var == c->var)
        ++writes;
    });
    if (writes > 1) {
      why_not = "a shared tile '" + c->var->name + "' is written more than once in the loop";
      candidates.clear();
      break;
    }
  }
  if (candidates.empty()) {
    loop.loop_kind = ir::LoopKind::Serial;
    warnings.push_back(
        {dsl::Severity::Warning, loop.loc,
         "pipelined loop runs serially: " +
             (why_not.empty() ? std::string("it copies nothing into shared memory") : why_not)});
    return;
  }
  // Producer inputs: the statements the copies need, found backwards from the copies.
  std::set<ir::Var*> needed;
  for (ir::Stmt* c : candidates) {
    c->pipeline_role = Role::Producer;
    c->var->stages = loop.stages;
    for (ir::Var* v : stmt_reads(*c)) needed.insert(v);
  }
  for (auto it = loop.body.rbegin(); it != loop.body.rend(); ++it) {
    ir::Stmt& s = **it;
    if (s.kind == ir::StmtKind::Decl && needed.count(s.var) && s.pipeline_role == Role::None) {
      s.pipeline_role = Role::ProducerInput;
      for (ir::Var* v : stmt_reads(s)) needed.insert(v);
    }
  }
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
