#include "compiler/place_scratch.h"

#include "compiler/target.h"
#include "support/error.h"

#include <map>
#include <utility>

namespace tilejit {

using ir::ExprKind;
using ir::Space;
using ir::StmtKind;

bool uses_scratch(const ir::Kernel& k, const ir::Expr& e) {
  switch (e.kind) {
  case ExprKind::Reduce:
    if (e.axis < 0) return k.threads > k.target->warp_size();
    return e.a->layout && e.a->layout->warps_along(e.axis) > 1;
  case ExprKind::Scan:
  case ExprKind::SolveTril:
    return true;
  case ExprKind::ClusterSum: // a cluster of one program: its own value; the exchange over the
                             // dead tiles (plan-shared-memory) is no half of the scratch area
    return k.cluster_size() > 1 && e.scratch_region != ir::kExchangeRegion;
  case ExprKind::Convert:
    return e.type.space == Space::Frag;
  case ExprKind::AtomicAdd:
    return e.type.is_scalar();
  default:
    return false;
  }
}

namespace {

/// The halves the previous users may still be reading (no barrier since): bit r for half r.
using Busy = unsigned;
constexpr Busy kBoth = 3;

/// Walks the statements in the order the emitter prints their operations (operands before the
/// operation; an access's mask and `other` before its subscripts), so that "the previous user"
/// here is the previous one in the generated code. Control flow merges what each path leaves
/// busy; a loop's top sees what the loop's end leaves busy too (walked until nothing changes).
class ScratchPlacement {
public:
  explicit ScratchPlacement(const ir::Kernel& k) : k_(k) {}

  /// Walks `b` from `busy`; returns what is busy at its end. With `apply`, records each user's
  /// half and inserts the barriers; without, only computes.
  Busy block(ir::Block& b, Busy busy, bool apply) {
    // A walk that only computes depends on nothing but the block and what is busy at its top
    // (four cases): remembered, so that nested loops, each walked at least twice, cost a walk
    // per level rather than one per path (2^depth).
    if (!apply) {
      auto key = std::make_pair(&b, busy);
      auto it = computed_.find(key);
      if (it != computed_.end()) return it->second;
      const Busy end = walk(b, busy, false);
      computed_[key] = end;
      return end;
    }
    return walk(b, busy, true);
  }

private:
  Busy walk(ir::Block& b, Busy busy, bool apply) {
    for (size_t i = 0; i < b.size(); ++i) {
      ir::Stmt& s = *b[i];
      bool barrier = false;
      busy = statement(s, busy, apply, barrier);
      if (barrier && apply) {
        auto bar = std::make_unique<ir::Stmt>(StmtKind::Barrier, s.loc);
        bar->note = "scratch: both halves may be in use here";
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(i), std::move(bar));
        ++i;
      }
    }
    return busy;
  }

  Busy statement(ir::Stmt& s, Busy busy, bool apply, bool& barrier) {
    busy_ = busy;
    apply_ = apply;
    barrier_ = false;
    operands(s);
    barrier = barrier_;
    busy = busy_;
    switch (s.kind) {
    case StmtKind::For: {
      // The loop's top: reached from above, and from its own end.
      Busy top = busy;
      for (;;) {
        Busy end = block(s.body, top, false);
        if ((top | end) == top) break;
        top |= end;
      }
      block(s.body, top, apply);
      return top; // also what a loop that runs no iteration leaves
    }
    case StmtKind::If: {
      Busy then_end = block(s.body, busy, apply);
      Busy else_end = block(s.else_body, busy, apply);
      return then_end | else_end;
    }
    case StmtKind::Barrier:
      return 0;
    default:
      return busy;
    }
  }

  /// The statement's own expressions (a loop's bounds, an `if`'s condition): not its body.
  void operands(ir::Stmt& s) {
    switch (s.kind) {
    case StmtKind::Decl:
    case StmtKind::Assign:
      if (s.var->type.space == Space::Frag && s.value->kind == ExprKind::Dot && s.value->c &&
          s.value->c->kind == ExprKind::VarRef && s.value->c->var == s.var) {
        expr(*s.value->a); // accumulated in place: the accumulator is not prepared
        expr(*s.value->b);
      } else if (s.var->type.space == Space::Shared && s.value->kind == ExprKind::Copy) {
        if (s.slot) expr(*s.slot);
        access_expr(*s.value);
      } else {
        expr(*s.value);
      }
      return;
    case StmtKind::Store:
      expr(*s.value);
      if (s.mask) expr(*s.mask);
      subscripts(*s.access);
      return;
    case StmtKind::Eval:
      if (s.value->kind == ExprKind::AtomicAdd && !s.value->type.is_scalar()) {
        expr(*s.value->a);
        if (s.value->b) expr(*s.value->b);
        subscripts(*s.value->access);
      } else if (s.value->kind != ExprKind::Fence && s.value->kind != ExprKind::Prefetch) {
        expr(*s.value);
      }
      return;
    case StmtKind::For:
      expr(*s.lo);
      expr(*s.hi);
      return;
    case StmtKind::If:
      expr(*s.value);
      return;
    case StmtKind::Barrier:
    case StmtKind::Return:
    case StmtKind::AsyncCommit:
    case StmtKind::AsyncWait:
    case StmtKind::WgmmaWait:
    case StmtKind::MbarrierInit:
    case StmtKind::MbarrierWait:
    case StmtKind::MbarrierArrive:
      return;
    }
  }

  /// A Load or Copy: its mask and `other`, then its subscripts.
  void access_expr(ir::Expr& e) {
    if (e.b) expr(*e.b);
    if (e.c) expr(*e.c);
    subscripts(*e.access);
  }

  void subscripts(ir::Access& a) {
    for (auto& ix : a.indices) expr(*ix.index);
  }

  void expr(ir::Expr& e) {
    switch (e.kind) {
    case ExprKind::Load:
    case ExprKind::Copy:
      access_expr(e);
      break;
    case ExprKind::AtomicAdd:
      expr(*e.a);
      if (e.b) expr(*e.b);
      subscripts(*e.access);
      break;
    case ExprKind::Fence:
    case ExprKind::Prefetch:
      return;
    default:
      for (ir::Expr* op : {e.a.get(), e.b.get(), e.c.get()})
        if (op) expr(*op);
    }
    if (e.kind == ExprKind::Convert && e.type.space == Space::Shared) {
      busy_ = 0; // staging a tile ends with a barrier
      return;
    }
    if (!uses_scratch(k_, e)) return;
    if (e.kind == ExprKind::SolveTril) { // both halves, between barriers of its own
      if (apply_) e.scratch_region = ir::kWholeScratch;
      busy_ = 0;
      return;
    }
    if (busy_ == kBoth) {
      barrier_ = true; // placed before this statement
      busy_ = 0;
    }
    const int half = (busy_ & 1) ? 1 : 0;
    if (apply_) e.scratch_region = half;
    busy_ = 1u << half;
    if (e.kind == ExprKind::ClusterSum) busy_ = 0; // it ends with a barrier of the cluster
  }

  const ir::Kernel& k_;
  /// Compute-only walks done: (block, busy at its top) to busy at its end.
  std::map<std::pair<const ir::Block*, Busy>, Busy> computed_;
  Busy busy_ = 0;
  bool apply_ = false;
  bool barrier_ = false;
};

} // namespace

void place_scratch(ir::Kernel& k) {
  TJ_ICHECK(k.target, "place-scratch before the kernel has a target");
  ScratchPlacement(k).block(k.body, 0, true);
}

} // namespace tilejit
