#include "compiler/insert_barriers.h"

#include "compiler/ir_printer.h"
#include "compiler/plan_shared_memory.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <vector>

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

/// One access to a global tensor: which parameter, in which threads (the layout that spreads it
/// over the block; null: a point access, made by one thread or by all alike), read or written.
struct GlobalAccess {
  int param = -1;
  const ir::Layout* layout = nullptr;
  bool write = false;
  /// Ordered by tensor and kind first: the barrier note names the first conflict found, and
  /// must not depend on where the heap put the layouts (the module cache hashes the source).
  bool operator<(const GlobalAccess& o) const {
    if (param != o.param) return param < o.param;
    if (write != o.write) return write < o.write;
    return std::less<const ir::Layout*>()(layout, o.layout);
  }
};

/// Stands for the layout the backend picks for a scalar stored over a tile (not one of the
/// program's): any other access of the tensor is ordered against it.
const ir::Layout kScalarOverTile;

/// Whether two accesses to one tensor from the same block need a barrier between them: a write
/// and another access by threads spread differently, so that one thread may touch an element
/// another one touched (the block runs the program in order; its threads do not).
bool global_conflict(const GlobalAccess& a, const GlobalAccess& b) {
  if (a.param != b.param || (!a.write && !b.write)) return false;
  if (a.layout == nullptr && b.layout == nullptr) return false; // points: the same threads
  if (a.layout == &kScalarOverTile || b.layout == &kScalarOverTile) return true;
  return !(a.layout && b.layout && ir::equivalent(a.layout, b.layout));
}

/// The global tensors a statement reads and writes, with the layouts they are accessed in.
/// A scalar atomic_add (one thread adds, every thread gets the old value) synchronises the block
/// before and after (tj::atomic_add_uniform): `syncs` says so.
void global_effects(ir::Stmt& s, std::vector<GlobalAccess>& out, bool& syncs) {
  auto visit = [&](ir::Expr& root) {
    ir::for_each_node(root, [&](ir::Expr& n) {
      if (!n.access) return;
      const bool point = n.type.is_scalar();
      if (n.kind == ExprKind::AtomicAdd) {
        if (point) syncs = true;
        out.push_back({n.access->param, point ? nullptr : n.layout, true});
        out.push_back({n.access->param, point ? nullptr : n.layout, false});
      } else if (n.kind == ExprKind::Load || n.kind == ExprKind::Copy) {
        out.push_back({n.access->param, point ? nullptr : n.layout, false});
      }
    });
  };
  ir::for_each_expr_root(s, [&](ir::ExprPtr& root) {
    // A store's access is not an expression: its value's layout spreads it (a scalar stored
    // over a tile: the backend's default layout for the tile, never one of the program's).
    visit(*root);
  });
  if (s.kind == ir::StmtKind::Store) {
    const bool point = s.access->is_scalar();
    const ir::Layout* l = point ? nullptr : s.value->type.is_scalar() ? nullptr : s.value->layout;
    out.push_back({s.access->param, l, true});
    if (!point && !l) out.back().layout = &kScalarOverTile;
  }
}

/// What the shared tiles are doing at a point of the program, since the last barrier.
struct State {
  /// Global tensor accesses since the last barrier. A set: control-flow joins merge the two
  /// paths' accesses, and a list would double at every loop (exponential in a run of loops).
  std::set<GlobalAccess> global;
  std::set<ir::Var*> reads, writes;
  /// Tiles an asynchronous copy may still be filling, with the number of copy groups committed
  /// after theirs: a barrier alone does not make them visible, so they stay pending across
  /// barriers that do not wait; `async_wait N` retires those with N or more groups after them.
  std::map<ir::Var*, int> pending;

  /// Control flow joins: anything either path did; a copy pending on either path is pending,
  /// with the fewer groups committed after it.
  void merge(const State& o) {
    global.insert(o.global.begin(), o.global.end());
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
    for (const auto& [v, age] : o.pending) {
      auto it = pending.find(v);
      if (it == pending.end())
        pending[v] = age;
      else
        it->second = std::min(it->second, age);
    }
  }
  /// After a barrier; `waited`: it waited for every pending copy first.
  void barrier(bool waited) {
    global.clear();
    reads.clear();
    writes.clear();
    if (waited) pending.clear();
  }
  void commit() {
    for (auto& [v, age] : pending) ++age;
  }
  /// This thread's copies with `groups_in_flight` or more groups after them have landed: they
  /// are its writes now, which the other threads see only after a barrier (a pipeline whose
  /// slots are released by mbarriers waits at its top with no barrier after the wait).
  void wait(int groups_in_flight) {
    for (auto it = pending.begin(); it != pending.end();) {
      if (it->second >= groups_in_flight) {
        writes.insert(it->first);
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
  }
};

/// Whether two tiles share bytes: the same tile, or tiles plan-shared-memory placed in the
/// same storage because their lifetimes do not overlap (the second one's first write must
/// still wait for the first one's last reads).
bool same_storage(const ir::Var* a, const ir::Var* b) {
  if (a == b) return true;
  if (a->smem_offset < 0 || b->smem_offset < 0) return false;
  const int64_t a_end = a->smem_offset + shared_tile_bytes(*a) * a->stages;
  const int64_t b_end = b->smem_offset + shared_tile_bytes(*b) * b->stages;
  return a->smem_offset < b_end && b->smem_offset < a_end;
}

std::vector<ir::Var*> by_id(const std::set<ir::Var*>& vars) {
  std::vector<ir::Var*> out(vars.begin(), vars.end());
  std::sort(out.begin(), out.end(), [](ir::Var* a, ir::Var* b) { return a->id < b->id; });
  return out;
}

bool intersects(const std::set<ir::Var*>& a, const std::set<ir::Var*>& b) {
  for (ir::Var* v : a)
    for (ir::Var* w : b)
      if (same_storage(v, w)) return true;
  return false;
}

/// Whether a statement reads, or overwrites, a tile an asynchronous copy may still be filling:
/// then the barrier before it must wait for this thread's copies first (and only then: a
/// barrier for ordinary shared writes leaves a pipeline's prefetches in flight).
bool touches_pending(const std::set<ir::Var*>& reads, const std::set<ir::Var*>& writes,
                     const State& st) {
  for (const auto& [v, age] : st.pending)
    for (const std::set<ir::Var*>* set : {&reads, &writes})
      for (ir::Var* w : *set)
        if (same_storage(v, w)) return true;
  return false;
}

bool conflicts(const std::set<ir::Var*>& reads, const std::set<ir::Var*>& writes, const State& st) {
  return intersects(reads, st.writes) || intersects(writes, st.reads) ||
         intersects(writes, st.writes);
}

/// The trip count of a loop with constant bounds, or -1.
int64_t constant_trips(const ir::Stmt& loop) {
  if (loop.lo->kind != ExprKind::Const || loop.hi->kind != ExprKind::Const) return -1;
  const int64_t lo = loop.lo->int_value, hi = loop.hi->int_value, step = loop.step->int_value;
  if (step > 0) return hi > lo ? (hi - lo + step - 1) / step : 0;
  return lo > hi ? (lo - hi - step - 1) / -step : 0;
}

class BarrierInsertion {
public:
  /// `check`: insert nothing; record the first place a barrier is missing there instead.
  explicit BarrierInsertion(const ir::Kernel& k, BarrierHazard* check = nullptr)
      : k_(k), check_(check) {}

  void run(ir::Block& body) {
    State s;
    walk(body, s, /*insert=*/true);
  }

private:
  const ir::Kernel& k_;
  BarrierHazard* check_ = nullptr;
  /// Statements walked so far, and how many may be walked before loops stop being replayed.
  int64_t walked_ = 0;
  static constexpr int64_t kReplayBudget = 50'000;

  std::string k_params_name(int param) const {
    return param >= 0 && param < static_cast<int>(k_.params.size()) ? k_.params[param].name : "?";
  }

  /// Puts `bar` before b[i] (advancing i past it), or, in check mode, records the hazard.
  void place(ir::Block& b, size_t& i, std::unique_ptr<ir::Stmt> bar, ir::Stmt& before) {
    if (check_) {
      if (!check_->stmt) check_->stmt = &before, check_->why = bar->note;
      return;
    }
    b.insert(b.begin() + static_cast<long>(i), std::move(bar));
    ++i;
  }

  /// What a statement may leave behind, without walking its loops: every access in it stays
  /// unordered and every copy of its own pending (no barrier or wait in it is counted), so the
  /// state can only demand more barriers than the exact walk would.
  void summarise(ir::Stmt& loop, State& st) {
    auto one = [&](ir::Stmt& t) {
      std::set<ir::Var*> reads, writes;
      if (t.kind == ir::StmtKind::For || t.kind == ir::StmtKind::If) {
        // Its own bounds or condition only: the statements nested in it are visited apart.
        ir::for_each_expr_root(t, [&](ir::ExprPtr& root) { shared_effects(*root, reads, writes); });
        for (ir::Var* v : reads)
          if (!is_ring(v)) st.reads.insert(v);
        return;
      }
      effects(t, reads, writes);
      st.reads.insert(reads.begin(), reads.end());
      st.writes.insert(writes.begin(), writes.end());
      std::vector<GlobalAccess> global;
      bool syncs = false;
      global_effects(t, global, syncs);
      st.global.insert(global.begin(), global.end());
      if ((t.kind == ir::StmtKind::Decl || t.kind == ir::StmtKind::Assign) &&
          t.value->kind == ir::ExprKind::Copy && t.value->async_copy && !is_ring(t.var))
        st.pending[t.var] = 0;
    };
    ir::for_each_stmt(loop.body, one);
  }

  /// Ring buffers of pipelined copies: synchronised by the pipeline itself.
  /// Rings, and the tiles the producer warps fill before their loop: mbarriers order them.
  static bool is_ring(ir::Var* v) { return v->stages > 1 || v->by_mbarrier; }

  /// The shared tiles a statement (with everything nested in it) reads and writes.
  void effects(ir::Stmt& s, std::set<ir::Var*>& reads, std::set<ir::Var*>& writes) {
    auto one = [&](ir::Stmt& t) {
      ir::for_each_expr_root(t, [&](ir::ExprPtr& root) { shared_effects(*root, reads, writes); });
      if ((t.kind == ir::StmtKind::Decl || t.kind == ir::StmtKind::Assign) &&
          t.var->type.space == Space::Shared)
        writes.insert(t.var);
    };
    one(s);
    ir::for_each_stmt(s.body, one);
    ir::for_each_stmt(s.else_body, one);
    for (auto it = reads.begin(); it != reads.end();)
      it = is_ring(*it) ? reads.erase(it) : std::next(it);
    for (auto it = writes.begin(); it != writes.end();)
      it = is_ring(*it) ? writes.erase(it) : std::next(it);
  }

  /// Whether the start of a loop body (up to its first barrier) conflicts with `st`, the state
  /// before the loop: then one barrier before the loop resolves it for every iteration.
  /// `wait`: that barrier must wait for pending copies.
  bool entry_conflict(ir::Block& body, State st, bool& wait) {
    wait = false;
    // A tile pending at the loop's entry and read before the body's first barrier needs the
    // barrier before the loop to wait for the copies, even where the body waits for its own
    // thread's copies first (the others' may not have landed).
    const State entry = st;
    for (auto& sp : body) {
      ir::Stmt& s = *sp;
      if (s.kind == ir::StmtKind::Barrier) return false;
      if (s.kind == ir::StmtKind::AsyncCommit) {
        st.commit();
        continue;
      }
      if (s.kind == ir::StmtKind::AsyncWait) {
        st.wait(s.pending);
        continue;
      }
      // Registers, or the mbarriers a TMA copy signals (synchronisation, not data).
      if (s.kind == ir::StmtKind::WgmmaWait || s.kind == ir::StmtKind::MbarrierInit ||
          s.kind == ir::StmtKind::MbarrierWait || s.kind == ir::StmtKind::MbarrierArrive)
        continue;
      std::set<ir::Var*> reads, writes;
      effects(s, reads, writes);
      wait = touches_pending(reads, writes, st) || touches_pending(reads, writes, entry);
      if (wait || conflicts(reads, writes, st)) return true;
    }
    return false;
  }

  void walk(ir::Block& b, State& st, bool insert) {
    for (size_t i = 0; i < b.size(); ++i) {
      ir::Stmt& s = *b[i];
      ++walked_;
      switch (s.kind) {
      case ir::StmtKind::Barrier:
        st.barrier(s.wait_async);
        continue;
      case ir::StmtKind::AsyncCommit:
        st.commit();
        continue;
      case ir::StmtKind::AsyncWait:
        st.wait(s.pending);
        continue;
      case ir::StmtKind::WgmmaWait:
      case ir::StmtKind::MbarrierInit:
      case ir::StmtKind::MbarrierWait:
      case ir::StmtKind::MbarrierArrive:
        continue; // registers, or synchronisation through the mbarriers (not data)
      case ir::StmtKind::For: {
        TJ_ICHECK(s.loop_kind != ir::LoopKind::Pipelined,
                  "insert-barriers runs after expand-pipelines");
        // Each loop walks its body twice (more for a replay), so nested loops multiply the
        // walks; past the budget a walk that only computes state takes a loop's summary.
        if (!insert && walked_ >= kReplayBudget) {
          summarise(s, st);
          continue;
        }
        // A conflict with what happened before the loop is resolved once, before it.
        bool wait = false;
        if (entry_conflict(s.body, st, wait)) {
          if (insert) {
            auto bar = std::make_unique<ir::Stmt>(ir::StmtKind::Barrier, s.loc);
            bar->note = "the loop reads shared tiles written above, or reuses their storage";
            bar->wait_async = wait;
            place(b, i, std::move(bar), s);
          }
          st.barrier(wait);
        }
        const State before = st;
        // Pass 1 finds what is pending at the end of an iteration; pass 2 inserts barriers with
        // the back edge's state merged into the entry state.
        State first = st;
        walk(s.body, first, /*insert=*/false);
        State entry = st;
        entry.merge(first);
        walk(s.body, entry, insert);
        st = entry;
        // A loop that runs a known number of times (a pipeline's prologue) leaves exactly
        // what that many iterations leave: the copy groups it commits age what came before.
        int64_t trips = constant_trips(s);
        // Nested, such replays multiply: past a budget the merged state stands (it keeps
        // more copies pending and more accesses unordered, so it can only add barriers).
        if (trips >= 1 && trips <= 16 && walked_ < kReplayBudget) {
          State exact = before;
          for (int64_t t = 0; t < trips; ++t) walk(s.body, exact, /*insert=*/false);
          st = exact;
        }
        continue;
      }
      case ir::StmtKind::If: {
        State a = st, c = st;
        walk(s.body, a, insert);
        walk(s.else_body, c, insert);
        a.merge(c);
        st = a;
        continue;
      }
      default:
        break;
      }
      std::set<ir::Var*> reads_set, writes_set;
      effects(s, reads_set, writes_set);
      std::vector<GlobalAccess> global;
      bool syncs = false;
      if (s.kind != ir::StmtKind::If && s.kind != ir::StmtKind::For)
        global_effects(s, global, syncs);
      std::string global_why;
      for (const GlobalAccess& a : global)
        for (const GlobalAccess& b : st.global)
          if (global_why.empty() && global_conflict(a, b))
            global_why = "tensor '" + k_params_name(a.param) + "' is " +
                         (a.write ? "written" : "read") + " by other threads than " +
                         (b.write ? "wrote" : "read") + " it above";
      bool wait = touches_pending(reads_set, writes_set, st);
      if (wait || conflicts(reads_set, writes_set, st) || !global_why.empty()) {
        if (insert) {
          auto bar = std::make_unique<ir::Stmt>(ir::StmtKind::Barrier, s.loc);
          std::string why;
          // By id, not by address: the note is in the generated source, which the module
          // cache hashes, so it must not depend on where the heap put the variables.
          const std::vector<ir::Var*> reads = by_id(reads_set), writes = by_id(writes_set);
          for (ir::Var* v : reads)
            if (intersects({v}, st.writes) || st.pending.count(v))
              why = "'" + v->name + "' was written";
          if (why.empty())
            for (ir::Var* v : writes)
              if (intersects({v}, st.reads) || intersects({v}, st.writes) || st.pending.count(v))
                why = "'" + v->name + "' is overwritten";
          if (why.empty())
            for (ir::Var* v : writes)
              if (!st.pending.empty()) why = "'" + v->name + "' reuses storage still being filled";
          if (why.empty()) why = global_why;
          bar->note = why;
          bar->wait_async = wait;
          place(b, i, std::move(bar), s);
        }
        st.barrier(wait);
      }
      st.reads.insert(reads_set.begin(), reads_set.end());
      st.writes.insert(writes_set.begin(), writes_set.end());
      if (syncs) st.global.clear(); // the scalar atomic's own barriers order everything before it
      st.global.insert(global.begin(), global.end());
      // An asynchronous copy of its own (not a pipeline's) is committed as its own group.
      if ((s.kind == ir::StmtKind::Decl || s.kind == ir::StmtKind::Assign) &&
          s.value->kind == ir::ExprKind::Copy && s.value->async_copy && !is_ring(s.var))
        st.pending[s.var] = 0;
    }
  }
};

} // namespace

void insert_barriers(ir::Kernel& k) {
  BarrierInsertion(k).run(k.body);
}

BarrierHazard find_barrier_hazard(ir::Kernel& k) {
  BarrierHazard found;
  BarrierInsertion(k, &found).run(k.body);
  return found;
}

} // namespace tilejit
