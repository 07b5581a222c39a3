// Which column accesses of which serial loops the CUDA backend stages through shared memory
// (cuda_column_streams.h says why and how).
#include "compiler/cuda/cuda_column_streams.h"

#include <algorithm>
#include <optional>
#include <set>

namespace tilejit::cuda {

using ir::ExprKind;
using ir::StmtKind;

namespace {

/// What the kernel does to each tensor parameter, over its whole body: a staged read must not
/// see a write of the same kernel, and a staged write must be the only access to its tensor
/// (atomic adds commute, so several of them may stage).
struct ParamUse {
  int reads = 0;   // loads, copies, prefetches
  int stores = 0;  // store statements
  int atomics = 0; // atomic adds whose old value is unused
  int other = 0;   // atomic adds whose old value is read
};

struct KernelScan {
  std::vector<ParamUse> use;
  bool async_or_cluster = false;
  std::set<const ir::Var*> read; ///< every variable some expression reads
};

KernelScan scan_kernel(const ir::Kernel& k) {
  KernelScan s;
  s.use.resize(k.params.size());
  auto& body = const_cast<ir::Block&>(k.body);
  ir::for_each_stmt(body, [&](ir::Stmt& st) {
    if (st.kind == StmtKind::AsyncCommit || st.kind == StmtKind::AsyncWait ||
        st.kind == StmtKind::MbarrierInit || st.kind == StmtKind::MbarrierWait ||
        st.kind == StmtKind::MbarrierArrive)
      s.async_or_cluster = true;
    if (st.kind == StmtKind::Store && st.access) ++s.use[st.access->param].stores;
    const bool eval_atomic =
        st.kind == StmtKind::Eval && st.value && st.value->kind == ExprKind::AtomicAdd;
    ir::for_each_expr_root(st, [&](ir::ExprPtr& root) {
      ir::for_each_node(*root, [&](ir::Expr& e) {
        if (e.kind == ExprKind::VarRef) s.read.insert(e.var);
        switch (e.kind) {
        case ExprKind::Load:
        case ExprKind::Copy:
        case ExprKind::Prefetch:
          if (e.access) ++s.use[e.access->param].reads;
          if (e.kind == ExprKind::Copy) s.async_or_cluster = true;
          break;
        case ExprKind::AtomicAdd:
          if (eval_atomic && &e == st.value.get())
            ++s.use[e.access->param].atomics;
          else
            ++s.use[e.access->param].other;
          break;
        case ExprKind::ClusterSum:
          s.async_or_cluster = true;
          break;
        default:
          break;
        }
      });
    });
  });
  return s;
}

/// The variables one loop's body declares or assigns (at any depth), and its top-level scalar
/// declarations in order.
struct LoopVars {
  std::set<const ir::Var*> written;
  std::map<const ir::Var*, size_t> top_decl; // scalar Decl at body index
  std::map<const ir::Var*, const ir::Expr*> top_value;
};

LoopVars loop_vars(const ir::Stmt& loop) {
  LoopVars v;
  std::map<const ir::Var*, int> assignments;
  ir::for_each_stmt(const_cast<ir::Block&>(loop.body), [&](ir::Stmt& st) {
    if ((st.kind == StmtKind::Decl || st.kind == StmtKind::Assign) && st.var) {
      v.written.insert(st.var);
      ++assignments[st.var];
    }
  });
  for (size_t i = 0; i < loop.body.size(); ++i) {
    const ir::Stmt& st = *loop.body[i];
    if (st.kind == StmtKind::Decl && st.var && st.var->type.is_scalar() &&
        assignments[st.var] == 1) {
      v.top_decl[st.var] = i;
      v.top_value[st.var] = st.value.get();
    }
  }
  return v;
}

/// How much `e` (an integer scalar) changes from one iteration of `loop` to the next, when that
/// is a constant; `deps` collects the body's scalar declarations it reads through.
std::optional<int64_t> slope(const ir::Expr& e, const ir::Stmt& loop, const LoopVars& lv,
                             std::set<const ir::Var*>& deps, int depth = 0) {
  if (depth > 32) return std::nullopt;
  auto all_flat = [&](std::initializer_list<const ir::Expr*> ops) -> std::optional<int64_t> {
    for (const ir::Expr* o : ops)
      if (o) {
        auto s = slope(*o, loop, lv, deps, depth + 1);
        if (!s || *s != 0) return std::nullopt;
      }
    return 0;
  };
  if (!e.type.is_scalar()) return std::nullopt;
  switch (e.kind) {
  case ExprKind::Const:
  case ExprKind::ParamRef:
  case ExprKind::DimRef:
  case ExprKind::ProgramId:
  case ExprKind::NumPrograms:
    return 0;
  case ExprKind::VarRef: {
    if (e.var == loop.var) return loop.step->int_value;
    if (auto it = lv.top_value.find(e.var); it != lv.top_value.end()) {
      deps.insert(e.var);
      return slope(*it->second, loop, lv, deps, depth + 1);
    }
    if (lv.written.count(e.var)) return std::nullopt;
    return 0;
  }
  case ExprKind::Binary: {
    auto a = slope(*e.a, loop, lv, deps, depth + 1);
    auto b = slope(*e.b, loop, lv, deps, depth + 1);
    if (!a || !b) return std::nullopt;
    switch (e.binary_op) {
    case dsl::BinaryOp::Add:
      return *a + *b;
    case dsl::BinaryOp::Sub:
      return *a - *b;
    case dsl::BinaryOp::Mul:
      if (*a == 0 && *b == 0) return 0;
      if (*a == 0 && e.a->kind == ExprKind::Const) return e.a->int_value * *b;
      if (*b == 0 && e.b->kind == ExprKind::Const) return e.b->int_value * *a;
      return std::nullopt;
    default:
      if (*a == 0 && *b == 0) return 0;
      return std::nullopt;
    }
  }
  case ExprKind::Unary: {
    auto a = slope(*e.a, loop, lv, deps, depth + 1);
    if (!a) return std::nullopt;
    if (e.unary_op == dsl::UnaryOp::Neg) return -*a;
    return *a == 0 ? std::optional<int64_t>(0) : std::nullopt;
  }
  case ExprKind::Cast:
    if (!dtype_is_int(e.type.dtype)) return std::nullopt;
    return slope(*e.a, loop, lv, deps, depth + 1);
  case ExprKind::Select:
  case ExprKind::Math:
    return all_flat({e.a.get(), e.b.get(), e.c.get()});
  default:
    return std::nullopt;
  }
}

/// `e` reads nothing the loop body declares or assigns (so it can be evaluated before it).
bool invariant(const ir::Expr& e, const LoopVars& lv, const ir::Stmt& loop) {
  bool ok = true;
  ir::for_each_node(const_cast<ir::Expr&>(e), [&](ir::Expr& n) {
    if (n.kind == ExprKind::VarRef && (n.var == loop.var || lv.written.count(n.var))) ok = false;
    if (n.kind == ExprKind::Load || n.kind == ExprKind::AtomicAdd) ok = false;
  });
  return ok;
}

bool scalar_or_none(const ir::ExprPtr& e) {
  return !e || e->type.is_scalar();
}

/// `X[r0 : r0 + R, col]` with X rank 2 of a 4- or 8-byte dtype, r0 invariant, col moving by
/// one per iteration; fills rows, dir and the column's dependencies.
bool column_access(const ir::Kernel& k, const ir::Access& a, const ir::Stmt& loop,
                   const LoopVars& lv, ColumnStream& cs, std::set<const ir::Var*>& deps) {
  const ir::Param& p = k.params[a.param];
  if (!p.is_tensor || p.rank() != 2 || a.indices.size() != 2 || a.speculative) return false;
  const int size = dtype_size(p.dtype);
  if (size != 4 && size != 8) return false;
  const ir::AccessIndex& rows = a.indices[0];
  const ir::AccessIndex& col = a.indices[1];
  if (rows.kind != ir::AccessIndex::Kind::Range || col.kind != ir::AccessIndex::Kind::Point)
    return false;
  if (rows.zip >= 0 || col.zip >= 0 || rows.extent < 1) return false;
  if (!invariant(*rows.index, lv, loop)) return false;
  auto s = slope(*col.index, loop, lv, deps);
  if (!s || (*s != 1 && *s != -1)) return false;
  cs.access = &a;
  cs.rows = rows.extent;
  cs.dir = static_cast<int>(*s);
  cs.element_size = size;
  return true;
}

/// A rank-1 register tile of R elements with a layout (what a lane-per-row scan holds).
bool row_tile(const ir::Expr& e, int64_t rows) {
  return !e.type.is_scalar() && e.type.rank() == 1 && e.type.shape[0] == rows && e.layout;
}

/// Two windows: the one the steps use, and the next one coming in (loads) or the last one
/// going out (writes).
int64_t stream_bytes(const ColumnStream& cs, int tb) {
  return 2 * cs.rows * tb * cs.element_size;
}

/// Candidates of one loop, before the budget.
std::vector<std::pair<ColumnStream, std::set<const ir::Var*>>>
candidates(const ir::Kernel& k, const ir::Stmt& loop, const LoopVars& lv, const KernelScan& ks,
           std::vector<size_t>& stmt_index) {
  std::vector<std::pair<ColumnStream, std::set<const ir::Var*>>> out;
  for (size_t i = 0; i < loop.body.size(); ++i) {
    ir::Stmt& st = *loop.body[i];
    // Loads anywhere in the body (a read needs no particular step to run).
    std::vector<ir::Stmt*> nested{&st};
    ir::for_each_stmt(st.body, [&](ir::Stmt& x) { nested.push_back(&x); });
    ir::for_each_stmt(st.else_body, [&](ir::Stmt& x) { nested.push_back(&x); });
    for (ir::Stmt* x : nested) {
      ir::for_each_expr_root(*x, [&](ir::ExprPtr& root) {
        ir::for_each_node(*root, [&](ir::Expr& e) {
          if (e.kind != ExprKind::Load || !e.access) return;
          // A value nothing reads (a derived kernel recomputes whole steps, loads whose
          // values its adjoints never need included): staging it would copy windows for
          // nothing, while the C++ compiler drops the plain load.
          if (x->kind == StmtKind::Decl && x->var && !ks.read.count(x->var)) return;
          const ParamUse& u = ks.use[e.access->param];
          if (u.stores || u.atomics || u.other) return;
          ColumnStream cs;
          std::set<const ir::Var*> deps;
          if (!column_access(k, *e.access, loop, lv, cs, deps)) return;
          if (!row_tile(e, cs.rows) || !scalar_or_none(e.b) || !scalar_or_none(e.c)) return;
          if (dtype_size(e.type.dtype) != cs.element_size) return;
          cs.kind = ColumnStream::Kind::Load;
          cs.expr = &e;
          cs.stmt = x;
          out.emplace_back(cs, deps);
          stmt_index.push_back(i);
        });
      });
    }
    // Writes only at the body's top level: each runs exactly once per step.
    if (st.kind == StmtKind::Store && st.access && st.value) {
      const ParamUse& u = ks.use[st.access->param];
      ColumnStream cs;
      std::set<const ir::Var*> deps;
      if (u.reads || u.atomics || u.other || u.stores != 1) continue;
      if (!column_access(k, *st.access, loop, lv, cs, deps)) continue;
      if (!row_tile(*st.value, cs.rows) || !scalar_or_none(st.mask)) continue;
      cs.kind = ColumnStream::Kind::Store;
      cs.stmt = &st;
      out.emplace_back(cs, deps);
      stmt_index.push_back(i);
    } else if (st.kind == StmtKind::Eval && st.value && st.value->kind == ExprKind::AtomicAdd &&
               st.value->access && !st.value->type.is_scalar()) {
      const ir::Expr& e = *st.value;
      const ParamUse& u = ks.use[e.access->param];
      ColumnStream cs;
      std::set<const ir::Var*> deps;
      if (u.reads || u.stores || u.other) continue;
      if (!column_access(k, *e.access, loop, lv, cs, deps)) continue;
      if (!e.layout || e.type.rank() != 1 || e.type.shape[0] != cs.rows || !scalar_or_none(e.b))
        continue;
      const DType t = k.params[e.access->param].dtype;
      if (t != DType::F32 && t != DType::I32) continue; // what atomicAdd takes at 4 bytes
      cs.kind = ColumnStream::Kind::Atomic;
      cs.expr = &e;
      cs.stmt = &st;
      out.emplace_back(cs, deps);
      stmt_index.push_back(i);
    }
  }
  return out;
}

std::optional<StagedLoop> plan_loop(const ir::Kernel& k, const ir::Stmt& loop, const KernelScan& ks,
                                    int64_t budget) {
  if (loop.loop_kind != ir::LoopKind::Serial || !loop.step) return std::nullopt;
  const int64_t step = loop.step->int_value;
  if (step != 1 && step != -1) return std::nullopt;
  bool nested_loop = false, leaves = false;
  ir::for_each_stmt(const_cast<ir::Block&>(loop.body), [&](ir::Stmt& st) {
    if (st.kind == StmtKind::For) nested_loop = true;
    if (st.kind == StmtKind::Return || st.kind == StmtKind::Barrier) leaves = true;
  });
  if (nested_loop || leaves) return std::nullopt;
  LoopVars lv = loop_vars(loop);
  std::vector<size_t> at;
  auto found = candidates(k, loop, lv, ks, at);
  // The windows turn before the first statement with a stream; a stream whose column reads a
  // body declaration made after that point cannot be placed there: drop it and look again.
  std::vector<bool> keep(found.size(), true);
  size_t first = 0;
  for (bool changed = true; changed;) {
    changed = false;
    first = loop.body.size();
    for (size_t i = 0; i < found.size(); ++i)
      if (keep[i]) first = std::min(first, at[i]);
    for (size_t i = 0; i < found.size(); ++i) {
      if (!keep[i]) continue;
      for (const ir::Var* d : found[i].second)
        if (lv.top_decl.at(d) >= first) keep[i] = false, changed = true;
    }
  }
  StagedLoop sl;
  sl.first = first;
  for (size_t i = 0; i < found.size(); ++i)
    if (keep[i]) sl.streams.push_back(found[i].first);
  if (sl.streams.empty()) return std::nullopt;
  // The widest window that fits: 16 steps move 64-byte row segments; 4 is the least worth it.
  for (int tb : {16, 8, 4}) {
    // A window moves in TB chunks of whole rows, each thread taking the same share of each.
    bool whole_rows = true;
    for (const ColumnStream& cs : sl.streams)
      whole_rows &= cs.rows % tb == 0 && (cs.rows <= k.threads || cs.rows % k.threads == 0);
    if (!whole_rows) continue;
    int64_t bytes = 0;
    for (ColumnStream& cs : sl.streams) {
      cs.offset = bytes;
      bytes += (stream_bytes(cs, tb) + 15) / 16 * 16;
    }
    if (bytes <= budget) {
      sl.tb = tb;
      sl.bytes = bytes;
      return sl;
    }
  }
  return std::nullopt;
}

} // namespace

std::map<const ir::Stmt*, StagedLoop> plan_column_streams(const ir::Kernel& k,
                                                          int64_t static_budget) {
  std::map<const ir::Stmt*, StagedLoop> out;
  KernelScan ks = scan_kernel(k);
  if (ks.async_or_cluster || k.cluster_size() > 1) return out;
  ir::for_each_stmt(const_cast<ir::Block&>(k.body), [&](ir::Stmt& st) {
    if (st.kind != StmtKind::For) return;
    if (auto sl = plan_loop(k, st, ks, static_budget)) out.emplace(&st, std::move(*sl));
  });
  return out;
}

int64_t column_stream_index(int tb, int64_t r, int64_t k) {
  const int64_t group = 32 / tb; // rows that share a bank row of 32 words
  return r * tb + (k ^ ((r / group) & (tb - 1)));
}

} // namespace tilejit::cuda
