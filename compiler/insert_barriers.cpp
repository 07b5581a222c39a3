#include "compiler/insert_barriers.h"

#include "compiler/ir_printer.h"

namespace tilejit {

using ir::ExprKind;
using ir::Space;

void shared_effects(ir::Expr& e, std::set<ir::Var*>& reads, std::set<ir::Var*>& writes) {
  ir::for_each_node(e, [&](ir::Expr& n) {
    if (n.kind == ExprKind::VarRef && n.var->type.space == Space::Shared) reads.insert(n.var);
    if (n.kind == ExprKind::Convert && n.type.space == Space::Shared && n.var) {
      writes.insert(n.var);
      reads.insert(n.var);
    }
  });
}

namespace {

struct State {
  std::set<ir::Var*> reads, writes; // since the last barrier
  std::set<ir::Var*> async_writes;  // filled by cp.async and not yet waited for
  void merge(const State& o) {
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
    async_writes.insert(o.async_writes.begin(), o.async_writes.end());
  }
  void clear() {
    reads.clear();
    writes.clear();
    async_writes.clear(); // every barrier tilejit emits waits for pending copies first
  }
};

bool intersects(const std::set<ir::Var*>& a, const std::set<ir::Var*>& b) {
  for (ir::Var* v : a)
    if (b.count(v)) return true;
  return false;
}

class BarrierInsertion {
public:
  void run(ir::Block& body) {
    State s;
    walk(body, s, /*insert=*/true);
  }

private:
  /// Ring buffers of pipelined copies: synchronised by the pipeline itself.
  static bool is_ring(ir::Var* v) { return v->stages > 1; }

  void effects(ir::Stmt& s, std::set<ir::Var*>& reads, std::set<ir::Var*>& writes) {
    ir::for_each_expr_root(s, [&](ir::ExprPtr& root) { shared_effects(*root, reads, writes); });
    if ((s.kind == ir::StmtKind::Decl || s.kind == ir::StmtKind::Assign) &&
        s.var->type.space == Space::Shared)
      writes.insert(s.var);
    for (auto it = reads.begin(); it != reads.end();)
      it = is_ring(*it) ? reads.erase(it) : std::next(it);
    for (auto it = writes.begin(); it != writes.end();)
      it = is_ring(*it) ? writes.erase(it) : std::next(it);
  }

  void walk(ir::Block& b, State& st, bool insert) {
    for (size_t i = 0; i < b.size(); ++i) {
      ir::Stmt& s = *b[i];
      if (s.kind == ir::StmtKind::Barrier) {
        st.clear();
        continue;
      }
      if (s.kind == ir::StmtKind::For) {
        // A conflict with what happened before the loop is resolved once, before it.
        std::set<ir::Var*> body_reads, body_writes;
        ir::for_each_stmt(s.body,
                          [&](ir::Stmt& inner) { effects(inner, body_reads, body_writes); });
        if (intersects(body_reads, st.writes) || intersects(body_writes, st.reads) ||
            intersects(body_writes, st.writes)) {
          if (insert) {
            auto bar = std::make_unique<ir::Stmt>(ir::StmtKind::Barrier, s.loc);
            bar->note = "the loop reads shared tiles written above";
            bar->wait_async = !st.async_writes.empty();
            b.insert(b.begin() + static_cast<long>(i), std::move(bar));
            ++i;
          }
          st.clear();
        }
        if (s.loop_kind == ir::LoopKind::Pipelined) {
          // The pipeline waits and synchronises at the top of every iteration and after the loop.
          State inner;
          walk(s.body, inner, insert);
          st.clear();
          continue;
        }
        // Pass 1 finds what is pending at the end of an iteration; pass 2 inserts barriers with
        // the back edge's state merged into the entry state.
        State first = st;
        walk(s.body, first, /*insert=*/false);
        State entry = st;
        entry.merge(first);
        walk(s.body, entry, insert);
        st = entry;
        continue;
      }
      if (s.kind == ir::StmtKind::If) {
        State a = st, c = st;
        walk(s.body, a, insert);
        walk(s.else_body, c, insert);
        a.merge(c);
        st = a;
        continue;
      }
      std::set<ir::Var*> reads, writes;
      effects(s, reads, writes);
      bool need = intersects(reads, st.writes) || intersects(writes, st.reads) ||
                  intersects(writes, st.writes);
      if (need) {
        if (insert) {
          auto bar = std::make_unique<ir::Stmt>(ir::StmtKind::Barrier, s.loc);
          std::string why;
          for (ir::Var* v : reads)
            if (st.writes.count(v)) why = "'" + v->name + "' was written";
          if (why.empty())
            for (ir::Var* v : writes)
              if (st.reads.count(v) || st.writes.count(v)) why = "'" + v->name + "' is overwritten";
          bar->note = why;
          bar->wait_async = !st.async_writes.empty();
          b.insert(b.begin() + static_cast<long>(i), std::move(bar));
          ++i;
        }
        st.clear();
      }
      st.reads.insert(reads.begin(), reads.end());
      st.writes.insert(writes.begin(), writes.end());
      if ((s.kind == ir::StmtKind::Decl || s.kind == ir::StmtKind::Assign) &&
          s.value->kind == ir::ExprKind::Copy && s.var->stages <= 1)
        st.async_writes.insert(s.var);
    }
  }
};

} // namespace

void insert_barriers(ir::Kernel& k) {
  BarrierInsertion().run(k.body);
}

} // namespace tilejit
