#include "compiler/assign_layouts.h"

#include "compiler/ir_printer.h"
#include "compiler/select_wgmma.h"
#include "compiler/target.h"
#include "dsl/diagnostics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace tilejit {

using ir::ExprKind;
using ir::ExprPtr;
using ir::Layout;
using ir::LayoutKind;
using ir::Space;

const ir::Layout* free_store_layout(ir::LayoutTable& table, const std::vector<int64_t>& shape,
                                    const ir::Param& to, int threads) {
  // Unaligned rows are stored element by element whatever the layout; 4-element vectors would
  // make each warp instruction touch every sector of its row four times (hbv's zeroing of three
  // [16384, 1461] f32 tensors ran at 1 TB/s on an H100 that way).
  const int esize = dtype_size(to.dtype);
  return table.default_blocked(shape, esize, threads, to.vector_aligned ? 16 : esize);
}

bool is_shared_operand(const ir::Expr& e) {
  if (e.kind == ExprKind::Trans) return is_shared_operand(*e.a);
  if (e.kind == ExprKind::VarRef) return e.var->type.space == Space::Shared;
  if (e.kind == ExprKind::SharedSlice) return true;
  return false;
}

Q4Operand q4_operand(const ir::Expr& a) {
  auto* self = const_cast<ir::Expr*>(&a);
  if (a.kind == ExprKind::Unpack) return {self, nullptr};
  if (a.kind != ExprKind::Binary || a.binary_op != dsl::BinaryOp::Mul || a.type.rank() != 2 ||
      a.a->kind != ExprKind::Unpack || a.b->kind != ExprKind::Expand ||
      a.b->axes != std::vector<int>{1})
    return {};
  const ir::Expr& s = *a.b->a;
  // The scale in the unpacked values' own dtype: (q - z) * s is then one rounding to it, what
  // the packed multiply does (an f32 scale would be rounded twice).
  if (s.type.rank() != 1 || s.type.shape[0] != a.type.shape[0] || s.type.dtype != a.a->type.dtype)
    return {};
  return {self->a.get(), self->b->a.get()};
}

namespace {

bool is_elementwise(ExprKind k) {
  return k == ExprKind::Unary || k == ExprKind::Binary || k == ExprKind::Select ||
         k == ExprKind::Math || k == ExprKind::Cast;
}

int priority(const Layout* l) {
  if (!l) return 0;
  switch (l->kind) {
  case LayoutKind::MmaAcc:
  case LayoutKind::MfmaAcc:
    return 3;
  case LayoutKind::Slice:
    return 2;
  case LayoutKind::Blocked:
    return 1;
  }
  return 0;
}

class LayoutAssignment {
public:
  explicit LayoutAssignment(ir::Kernel& k)
      : k_(k), table_(k.layouts), warps_(k.threads / k.target->warp_size()) {}

  void run() {
    plan_register_operands();
    // Variables take layouts from what is assigned to them, then variables nothing fixes
    // (loads, constants) take the layout their uses want. When neither settles a variable,
    // the highest-rank one left takes its default layout and the rest follow from it (row
    // vectors are mostly broadcast into tiles, so tiles choose first).
    do {
      do layouts_from_values();
      while (layouts_from_uses());
    } while (default_for_one_variable());
    for (auto& [v, l] : var_layout_) v->layout = l;
    rewrite_block(k_.body);
    sink_.check();
  }

private:
  // ---- variables' layouts ------------------------------------------------------------------
  /// Forward: a variable takes the layout of the values assigned to it, the strongest one
  /// winning; repeated until nothing changes (an accumulator's layout can depend on another
  /// variable's).
  void layouts_from_values() {
    // A reduction of a variable that has no layout yet waits for it instead of reducing the
    // operand's default (a loop-carried tile assigned below its use, attention's scores
    // issued a tile ahead: its row maxima took a blocked slice and were converted through
    // shared memory every iteration).
    defer_unknown_operands_ = true;
    for (int round = 0; round < 6; ++round) {
      bool changed = false;
      ir::for_each_stmt(k_.body, [&](ir::Stmt& s) {
        if ((s.kind == ir::StmtKind::Decl || s.kind == ir::StmtKind::Assign) &&
            s.var->type.space == Space::Frag) {
          const Layout* l = natural(*s.value);
          const Layout*& cur = var_layout_[s.var];
          if (l && l->shape == s.var->type.shape && priority(l) > priority(cur) &&
              !ir::equivalent(l, cur)) {
            cur = l;
            changed = true;
          }
        }
      });
      if (!changed) break;
    }
    defer_unknown_operands_ = false;
  }

  /// Gives the first variable of the highest rank still without a layout its default one.
  bool default_for_one_variable() {
    ir::Stmt* pick = nullptr;
    ir::for_each_stmt(k_.body, [&](ir::Stmt& s) {
      if (s.kind == ir::StmtKind::Decl && s.var->type.space == Space::Frag && !var_layout_[s.var] &&
          (!pick || s.var->type.rank() > pick->var->type.rank()))
        pick = &s;
    });
    if (!pick) return false;
    var_layout_[pick->var] = default_for(*pick->value, pick->var->type);
    return true;
  }

  /// Backward: a variable that no value fixes takes the layout of the first variable computed
  /// from it elementwise, or that layout's Slice where it is broadcast (x[:, None]). Without
  /// this a loaded row vector sits in a default layout and every broadcast of it converts
  /// through shared memory behind a barrier, which also keeps the compiler from issuing the
  /// loads of later loop iterations early. Returns whether any variable got a layout.
  bool layouts_from_uses() {
    bool changed = false;
    ir::for_each_stmt(k_.body, [&](ir::Stmt& s) {
      if ((s.kind == ir::StmtKind::Decl || s.kind == ir::StmtKind::Assign) &&
          s.var->type.space == Space::Frag) {
        auto it = var_layout_.find(s.var);
        if (it != var_layout_.end() && it->second) changed |= want_layout(*s.value, it->second);
      }
    });
    return changed;
  }

  bool want_layout(const ir::Expr& e, const Layout* l) {
    if (e.type.is_scalar()) return false;
    if (e.kind == ExprKind::VarRef) {
      if (e.var->type.space != Space::Frag || e.var->type.shape != l->shape) return false;
      const Layout*& cur = var_layout_[e.var];
      if (cur) return false;
      cur = l;
      return true;
    }
    if (e.kind == ExprKind::Expand && l->rank() == 2 && e.a->type.rank() == 1 && e.axes.size() == 1)
      return want_layout(*e.a, table_.slice(l, e.axes[0]));
    if (e.kind == ExprKind::Dot && q4_candidate(e) && l->kind == LayoutKind::MmaAcc && l->wn == 1 &&
        l->shape == e.type.shape) {
      // A dot_q4 in this accumulator layout reads its zero points and scales one per row the
      // thread owns: the row slice of its A operand's layout (no conversion through shared
      // memory).
      const Q4Operand q = q4_operand(*e.a);
      const Layout* la =
          table_.mma_acc(e.a->type.shape[0], e.a->type.shape[1], l->wm, 1, k_.threads);
      bool changed = false;
      if (q.unpack->b) changed |= want_layout(*q.unpack->b, la);
      if (q.scale) changed |= want_layout(*q.scale, table_.slice(la, 1));
      return changed;
    }
    if (!is_elementwise(e.kind)) return false;
    bool changed = false;
    for (const ir::Expr* op : {e.a.get(), e.b.get(), e.c.get()}) {
      if (!op || op->type.is_scalar()) continue;
      if (op->type.rank() == e.type.rank()) // equal shapes, or x[:, None] (an Expand)
        changed |= want_layout(*op, l);
      else if (l->rank() == 2 && op->type.rank() == 1) // implicit leading axis, as in place()
        changed |= want_layout(*op, table_.slice(l, 0));
    }
    return changed;
  }

  // ---- which dots take their A operand from registers -------------------------------------
  /// A dot whose A operand is computed in registers (attention's P @ V) can use it in place
  /// when its warps split only M; then the dots producing that operand (S = Q @ K^T) must use
  /// the same warp split. Otherwise the operand is staged through shared memory.
  void plan_register_operands() {
    std::vector<ir::Expr*> dots;
    ir::for_each_stmt(k_.body, [&](ir::Stmt& s) {
      ir::for_each_expr_root(s, [&](ExprPtr& root) {
        ir::for_each_node(*root, [&](ir::Expr& e) {
          if (e.kind == ExprKind::Dot) dots.push_back(&e);
        });
      });
    });
    std::set<ir::Var*> feeding;
    for (ir::Expr* d : dots) {
      // unpack4's values are laid out by their words (blocked), not as an f32 fragment tile:
      // staged through shared memory like a loaded operand.
      if (is_shared_operand(*d->a) || d->a->kind == ExprKind::Trans || q4_operand(*d->a).unpack)
        continue;
      int64_t m16 = (d->type.shape[0] + 15) / 16 * 16;
      if (m16 < 16 * warps_) continue;
      register_a_.insert(d);
      ir::for_each_node(*d->a, [&](ir::Expr& e) {
        if (e.kind == ExprKind::VarRef) feeding.insert(e.var);
      });
    }
    // Variables whose values flow into a register operand, transitively.
    for (bool grew = true; grew;) {
      grew = false;
      ir::for_each_stmt(k_.body, [&](ir::Stmt& s) {
        if ((s.kind == ir::StmtKind::Decl || s.kind == ir::StmtKind::Assign) &&
            feeding.count(s.var))
          ir::for_each_node(*s.value, [&](ir::Expr& e) {
            if (e.kind == ExprKind::VarRef && e.var->type.space == Space::Frag &&
                feeding.insert(e.var).second)
              grew = true;
          });
      });
    }
    for (const ir::Expr* d : register_a_)
      ir::for_each_node(*const_cast<ir::Expr*>(d)->a, [&](ir::Expr& e) {
        if (e.kind == ExprKind::Dot) warps_m_only_.insert(&e);
      });
    ir::for_each_stmt(k_.body, [&](ir::Stmt& s) {
      if ((s.kind == ir::StmtKind::Decl || s.kind == ir::StmtKind::Assign) && feeding.count(s.var))
        ir::for_each_node(*s.value, [&](ir::Expr& e) {
          if (e.kind == ExprKind::Dot) warps_m_only_.insert(&e);
        });
    });
    for (const ir::Expr* d : register_a_) warps_m_only_.insert(d);
    for (ir::Expr* d : dots)
      if (q4_candidate(*d)) warps_m_only_.insert(d);
  }

  /// dot(unpack4<T>(words, zero), b) with the words and b in shared memory: each warp unpacks
  /// its rows' words straight into tensor-core A fragments (tj::dot_q4), with no staging of the
  /// values through shared memory, when its warps split only the rows (M).
  static bool q4_candidate(const ir::Expr& d) {
    const Q4Operand q = q4_operand(*d.a);
    if (!q.unpack) return false;
    const ir::Expr& a = *q.unpack;
    if (a.kind != ExprKind::Unpack || a.type.rank() != 2 || a.type.shape[1] % 32 != 0) return false;
    if (a.type.dtype != DType::F16 && a.type.dtype != DType::BF16) return false;
    if (a.a->kind == ExprKind::Trans || !is_shared_operand(*a.a) || !is_shared_operand(*d.b))
      return false;
    return !a.b || a.b->type.is_scalar() ||
           (a.b->kind == ExprKind::Expand && a.b->a->type.rank() == 1);
  }

  /// The accumulator layout of a dot: the target's matrix instruction (m16n8 on NVIDIA GPUs)
  /// tiled over the warps.
  const Layout* mma_layout(const ir::Expr& dot) {
    const Target& t = *k_.target;
    const MatrixShape ms = t.matrix_shape(dot.a->type.dtype);
    const int64_t im = ms.m > 0 ? ms.m : 16, in = ms.n > 0 ? ms.n : 8;
    int64_t m = dot.type.shape[0], n = dot.type.shape[1];
    int m_tiles = static_cast<int>((m + im - 1) / im);
    // Warps along M only: any number of them (3 warps of 32 rows tile 96, so that a grid of
    // 96-row programs can fill 132 multiprocessors where 128-row ones leave a quarter idle).
    if (warps_m_only_.count(&dot) && m_tiles >= warps_)
      return t.accumulator_layout(table_, m, n, warps_, 1, k_.threads);
    // On Hopper, a 16-bit dot with fewer rows than 16 per warp: 16 rows a warp, the warpgroups
    // splitting N, so that it runs on the warpgroup tensor cores (select-wgmma) where the
    // balanced split below would keep it on mma.sync.
    if (const int wm = wgmma_rows_warps(k_, dot, warps_))
      return t.accumulator_layout(table_, m, n, wm, warps_ / wm, k_.threads);
    // Otherwise the warps tile the accumulator as WM x WN, both powers of two (the prelude's
    // dot splits its fragments so): a user error, with the dot's line, for any other count.
    if (warps_ & (warps_ - 1))
      dsl::fail_at(dot.loc, str("dot needs a power-of-two number of warps to tile its ",
                                dot.type.shape[0], "x", dot.type.shape[1],
                                " result; this block has ", warps_, " (", k_.threads, " threads)"));
    // Balance operand traffic: per K step a warp loads MT A fragments and NTL/2 B pairs.
    int best_wm = 1;
    double best_cost = 1e30;
    for (int wm = 1; wm <= warps_; wm *= 2) {
      int wn = warps_ / wm;
      int64_t pm = (m + im * wm - 1) / (im * wm) * (im * wm);
      int64_t pn = (n + in * wn - 1) / (in * wn) * (in * wn);
      double mt = double(pm) / (im * wm), ntl = double(pn) / (in * wn);
      double waste = double(pm * pn) / double(m * n); // padded work
      double cost = (mt + std::ceil(ntl / 2)) * waste;
      if (cost < best_cost - 1e-9) best_cost = cost, best_wm = wm;
    }
    return t.accumulator_layout(table_, m, n, best_wm, warps_ / best_wm, k_.threads);
  }

  // ---- natural layouts ------------------------------------------------------------------
  /// The layout an expression has by itself, or nullptr when it can take any (free).
  const Layout* natural(const ir::Expr& e) {
    if (e.type.is_scalar()) return nullptr;
    switch (e.kind) {
    case ExprKind::VarRef:
      if (e.var->type.space == Space::Frag) {
        auto it = var_layout_.find(e.var);
        return it == var_layout_.end() ? nullptr : it->second;
      }
      return nullptr;
    case ExprKind::Dot:
      return mma_layout(e);
    case ExprKind::Reduce: {
      if (e.axis < 0 || e.a->type.rank() != 2) return nullptr;
      const Layout* a = natural(*e.a);
      if (!a && defer_unknown_operands_ && e.a->kind == ExprKind::VarRef) return nullptr;
      return table_.slice(a ? a : default_for(*e.a, e.a->type), e.axis);
    }
    case ExprKind::Scan:
    case ExprKind::SolveTril:  // through shared memory, back in the operand's own layout
    case ExprKind::ClusterSum: // element by element, in the operand's own layout
      return natural_or_default(*e.a);
    case ExprKind::Unpack:
      return unpack_layout(e);
    case ExprKind::Convert:
      return e.type.space == Space::Frag ? e.layout : nullptr;
    case ExprKind::Expand: {
      const Layout* x = natural(*e.a);
      // x[:, None] of a row slice has the parent's layout only where the parent's shape is the
      // expand's: a [BB, 1] value in its [BB, NM] parent's layout would be read NM times by a
      // reduction, a store or an atomic over it (hbv_forward_nmul's derived backward added
      // each forcing's gradient NM times so, on the GPU only: the interpreter has no layouts).
      if (x && x->kind == LayoutKind::Slice && e.axes.size() == 1 && e.type.rank() == 2 &&
          x->slice_axis == e.axes[0] && x->parent->shape == e.type.shape)
        return x->parent;
      return nullptr;
    }
    default:
      break;
    }
    if (is_elementwise(e.kind)) {
      const Layout* best = nullptr;
      for (const ir::Expr* op : {e.a.get(), e.b.get(), e.c.get()}) {
        if (!op || op->type.is_scalar()) continue;
        const Layout* l = natural(*op);
        if (l && l->shape == e.type.shape && priority(l) > priority(best)) best = l;
      }
      return best;
    }
    return nullptr; // Load, Iota, shared reads, SharedSlice: free
  }

  /// unpack4's words: the default layout of an i32 tile (16-byte vectors along the rows).
  const Layout* unpack_words_layout(const ir::Expr& e) {
    return table_.default_blocked(e.a->type.shape, 4, k_.threads);
  }
  /// unpack4's values: held by the threads that hold their word, the 8 values of each word
  /// consecutive (vectors 8 times longer), so unpacking moves no data between threads.
  const Layout* unpack_layout(const ir::Expr& e) {
    const Layout* w = unpack_words_layout(e);
    return table_.blocked(e.type.shape, w->vec * static_cast<int>(32 / e.extent), w->tc,
                          k_.threads);
  }

  const Layout* natural_or_default(const ir::Expr& e) {
    const Layout* l = natural(e);
    return l ? l : default_for(e, e.type);
  }

  /// Blocked, with vectors sized for the narrowest tensor the expression loads, so global
  /// accesses are 16 bytes wide.
  const Layout* default_for(const ir::Expr& e, const ir::Type& t) {
    if (t.shape.empty()) {
      // A scalar where a tile's layout is asked for: a combination the type checks let through
      // (CI's sanitized lowering fuzz reached this once, input not kept). Said at the value,
      // and a one-element layout to go on with, never an empty shape's undefined back().
      error(e.loc, str("'", ir::print_expr(e), "' is a scalar where a tile is expected"));
      return table_.default_blocked({1}, dtype_size(t.dtype), k_.threads);
    }
    int bytes = dtype_size(t.dtype);
    ir::for_each_node(const_cast<ir::Expr&>(e), [&](ir::Expr& n) {
      if (n.kind == ExprKind::Load && n.type.rank() == t.rank())
        bytes = std::min(bytes, dtype_size(n.type.dtype));
    });
    return table_.default_blocked(t.shape, bytes, k_.threads, 16, /*fill_warp=*/true);
  }

  // ---- placing expressions in layouts ------------------------------------------------------
  ExprPtr convert(ExprPtr e, const Layout* to) {
    auto c = std::make_unique<ir::Expr>(ExprKind::Convert, e->loc);
    c->type = e->type;
    c->type.space = Space::Frag;
    c->layout = to;
    c->a = std::move(e);
    return c;
  }

  /// Whether a tile atomic_add with `bulk = 1` can be added by the bulk copy engine: the target
  /// has it, an f32 tensor and value, no mask, and the tile [R, C] is a range of rows and one
  /// of the tensor's last dimension after point subscripts (each row a contiguous run when the
  /// tensor's last stride is 1, which the emitted code checks per row with the alignment).
  bool bulk_fits(const ir::Expr& e) const {
    if (!k_.target || !k_.target->bulk_reduce() || e.b || e.type.rank() != 2) return false;
    if (e.a->type.is_scalar() || e.a->type.shape != e.type.shape) return false;
    const ir::Access& a = *e.access;
    const ir::Param& p = k_.params[a.param];
    if (p.dtype != DType::F32 || e.a->type.dtype != DType::F32) return false;
    const size_t r = a.indices.size();
    if (r < 2) return false;
    for (size_t i = 0; i < r; ++i) {
      const auto& ix = a.indices[i];
      const auto want = i + 2 < r ? ir::AccessIndex::Kind::Point : ir::AccessIndex::Kind::Range;
      if (ix.kind != want || ix.zip >= 0) return false;
    }
    const std::vector<int> axes = a.tile_axes();
    return axes[r - 2] == 0 && axes[r - 1] == 1;
  }

  /// A bulk atomic_add the TMA can do as tensor reductions: Hopper, 32-bit indices, a tensor the
  /// TMA may address (rank 2 to 5, of the access's rank), 32-column blocks, at most 256 rows.
  bool tma_reduce_fits(const ir::Expr& e) const {
    if (!k_.target->warpgroup_mma() || !k_.index32) return false;
    const ir::Param& p = k_.params[e.access->param];
    const size_t r = e.access->indices.size();
    const int64_t rows = e.type.shape[0], cols = e.type.shape[1];
    return p.tma && p.rank() == static_cast<int>(r) && r >= 2 && r <= 5 && cols % 32 == 0 &&
           rows >= 1 && rows <= 256;
  }

  /// Stages a frag value in a shared tile (a dot operand that cannot come from registers, or
  /// a tile broadcast along a unit axis: `prefix` names the tile for the generated code).
  ExprPtr stage_in_shared(ExprPtr e, const char* prefix = "staged_") {
    place(e, natural_or_default(*e));
    auto c = std::make_unique<ir::Expr>(ExprKind::Convert, e->loc);
    c->type = e->type;
    c->type.space = Space::Shared;
    c->var = k_.new_var(str(prefix, k_.vars.size()), c->type, e->loc);
    c->a = std::move(e);
    return c;
  }

  /// Gives `e` the layout `l` of the loop it is evaluated in. `e` may be broadcast into it:
  /// lower rank (leading axes added) or unit axes from x[:, None].
  void place(ExprPtr& e, const Layout* l) {
    if (e->type.is_scalar()) {
      place_scalar(*e);
      return;
    }
    // Broadcast into a 2-D loop: a rank-1 value along one axis lives in the Slice layout.
    if (l->rank() == 2 && e->type.rank() == 1) {
      place(e, table_.slice(l, 0)); // implicit leading axis: values run along columns
      return;
    }
    if (e->kind == ExprKind::Expand && l->rank() == 2 && e->a->type.rank() == 1) {
      int new_axis = e->axes.size() == 1 ? e->axes[0] : 0;
      e->layout = l;
      place(e->a, table_.slice(l, new_axis));
      return;
    }
    if (e->kind == ExprKind::Expand) {
      e->layout = l;
      place(e->a, l);
      return;
    }
    const bool broadcast = e->type.shape != l->shape;
    if (is_elementwise(e->kind)) {
      e->layout = l;
      for (ExprPtr* op : {&e->a, &e->b, &e->c})
        if (*op) place(*op, l);
      return;
    }
    switch (e->kind) {
    case ExprKind::Load:
      e->layout = l;
      place_access(*e->access, l);
      if (e->b) place(e->b, l);
      if (e->c) place_scalar(*e->c);
      return;
    case ExprKind::Iota:
      e->layout = l;
      return;
    case ExprKind::Trans:
      // Dot operands are handled by fix_operands; anywhere else the backend has no transposed
      // read yet (an internal error used to be all the user saw).
      error(e->loc, "trans() is supported only on an operand of dot() for now: the CUDA "
                    "backend has no transposed read of a register tile");
      return;
    case ExprKind::SharedSlice:
      e->layout = l;
      place_scalar(*e->b);
      return;
    case ExprKind::VarRef:
      if (e->var->type.space == Space::Shared) {
        e->layout = l;
        return;
      }
      break;
    default:
      break;
    }
    if (broadcast) {
      // A computed tile with unit axes read in a larger loop (a dot's f32[8, 1], a loaded
      // [8, 1] variable, a [1, 1] tile; infer_types keeps other [N, 1] variables rank 1):
      // staged in shared memory, where it is read at the loop's coordinates (0 on its unit
      // axes). Costs a barrier; x[:, None] on a rank-1 tile costs nothing.
      e = stage_in_shared(std::move(e), "broadcast_");
      return;
    }
    // Fixed layouts: place the operands by their own rules, then convert if needed.
    fix_operands(*e);
    const Layout* have = natural(*e);
    if (!have) have = natural_or_default(*e);
    e->layout = have;
    if (!ir::equivalent(have, l)) e = convert(std::move(e), l);
  }

  /// Operands of layout-fixed nodes.
  void fix_operands(ir::Expr& e) {
    switch (e.kind) {
    case ExprKind::Dot: {
      const Layout* lc = mma_layout(e);
      e.layout = lc;
      check_dot(e);
      const bool units = k_.target->matrix_units(); // else both operands go to shared memory
      if (units && q4_candidate(e) && lc->wn == 1) {
        // A in registers, unpacked from shared words by each warp (tj::dot_q4): the values'
        // layout is the A operand's (an MmaAcc over [M, K] with the dot's warps), the zero
        // point and the scale one per row the thread owns.
        const Q4Operand q = q4_operand(*e.a);
        ir::Expr& a = *q.unpack;
        a.layout = table_.mma_acc(a.type.shape[0], a.type.shape[1], lc->wm, 1, k_.threads);
        if (q.scale) {
          e.a->layout = a.layout;    // unpack4(...) * s[:, None]
          e.a->b->layout = a.layout; // s[:, None]
          place(e.a->b->a, table_.slice(a.layout, 1));
        }
        if (a.b && a.b->type.is_scalar()) {
          place_scalar(*a.b);
        } else if (a.b) {
          a.b->layout = a.layout;
          place(a.b->a, table_.slice(a.layout, 1));
        }
        if (e.c) place(e.c, lc);
        return;
      }
      if (e.a->kind == ExprKind::Trans && !is_shared_operand(*e.a->a)) {
        // trans(frag) as A (attention backward's trans(p) @ do): stage the frag, keep the
        // transposed view over the staged tile (the MMA reads it transposed from shared).
        e.a->a = stage_in_shared(std::move(e.a->a));
      } else if (!is_shared_operand(*e.a)) {
        // (f32 operands are read from shared memory for now: TF32 fragments take each value
        // from another lane than the accumulator layout holds it in.)
        if (units && register_a_.count(&e) && lc->wn == 1 && e.a->type.dtype != DType::F32) {
          // A in registers: evaluate it as an f32 MmaAcc tile; dot_rs rounds it to the
          // operand dtype, so a cast to that dtype is dropped here.
          ExprPtr& a = e.a;
          if (a->kind == ExprKind::Cast &&
              (a->type.dtype == DType::F16 || a->type.dtype == DType::BF16) &&
              a->a->type.dtype == DType::F32)
            a = std::move(a->a);
          place(a, table_.mma_acc(a->type.shape[0], a->type.shape[1], lc->wm, 1, k_.threads));
        } else {
          e.a = stage_in_shared(std::move(e.a));
        }
      }
      if (!is_shared_operand(*e.b)) {
        if (e.b->kind == ExprKind::Trans) {
          // trans(frag): stage the frag, keep the transposed view over the staged tile.
          e.b->a = stage_in_shared(std::move(e.b->a));
        } else {
          e.b = stage_in_shared(std::move(e.b));
        }
      }
      if (e.c) place(e.c, lc);
      return;
    }
    case ExprKind::Reduce:
    case ExprKind::Scan:
    case ExprKind::SolveTril:
    case ExprKind::ClusterSum:
      place(e.a, natural_or_default(*e.a));
      return;
    case ExprKind::Unpack: {
      e.layout = unpack_layout(e);
      const Layout* wl = unpack_words_layout(e);
      place(e.a, wl);
      if (e.b) place(e.b, wl); // a zero point per row: the words' row slice
      return;
    }
    case ExprKind::Convert:
      if (e.a->layout == nullptr && !e.a->type.is_scalar()) place(e.a, natural_or_default(*e.a));
      return;
    case ExprKind::VarRef:
      return;
    default:
      return;
    }
  }

  void check_dot(const ir::Expr& e) {
    DType t = e.a->type.dtype;
    const MatrixShape ms = k_.target->matrix_shape(t);
    if (ms.k == 0) {
      error(e.loc, str(k_.target->arch(), " runs dot on ",
                       k_.target->matrix_shape(DType::F32).k ? "f16, bf16 or f32" : "f16 or bf16",
                       " tiles; these are ", dtype_name(t),
                       " (cast the operands, or use f16/bf16 inputs)"));
      return;
    }
    int64_t kdim = e.a->type.shape[1];
    if (kdim % ms.k != 0 && k_.target->matrix_units())
      error(e.loc, str("dot's shared dimension is ", kdim, "; the tensor cores need a multiple of ",
                       ms.k));
  }

  /// Scalar expressions can hold whole-tile reductions: lay out their operands.
  void place_scalar(ir::Expr& e) {
    if (e.kind == ExprKind::Reduce && !e.a->type.is_scalar()) {
      place(e.a, natural_or_default(*e.a));
      return;
    }
    for (ExprPtr* op : {&e.a, &e.b, &e.c})
      if (*op) {
        if ((*op)->type.is_scalar())
          place_scalar(**op);
        else
          place(*op, natural_or_default(**op));
      }
    if (e.access) place_access(*e.access, nullptr);
  }

  /// Gather indices are read per element of the access's layout `l`: an index tile along tile
  /// axis t needs l's Slice along the other axis (rows for t = 0, columns for the second factor
  /// of an outer product), or l itself for rank-1 accesses.
  void place_access(ir::Access& a, const Layout* l) {
    const std::vector<int> axes = a.tile_axes();
    for (size_t d = 0; d < a.indices.size(); ++d) {
      auto& ix = a.indices[d];
      if (ix.kind != ir::AccessIndex::Kind::Gather) {
        place_scalar(*ix.index);
        continue;
      }
      if (is_shared_operand(*ix.index)) {
        ix.index->layout = nullptr; // read straight from shared memory per row
        continue;
      }
      TJ_ICHECK(l, "gather index without an access layout");
      place(ix.index, l->rank() == 2 ? table_.slice(l, 1 - axes[d]) : l);
    }
  }

  // ---- statements ----------------------------------------------------------------------
  void rewrite_block(ir::Block& b) {
    for (auto& s : b) rewrite_stmt(*s);
  }

  void rewrite_stmt(ir::Stmt& s) {
    switch (s.kind) {
    case ir::StmtKind::Decl:
    case ir::StmtKind::Assign: {
      ir::Var* v = s.var;
      if (v->type.space == Space::Frag) {
        place(s.value, v->layout);
      } else if (v->type.space == Space::Shared) {
        if (s.value->kind == ExprKind::Copy) {
          place_copy(*s.value);
        } else if (!s.value->type.is_scalar() && s.value->type.space != Space::Shared) {
          place(s.value, natural_or_default(*s.value));
        } else if (s.value->type.space == Space::Shared && s.value->kind != ExprKind::Copy) {
          // shared = shared: copied through registers.
          place(s.value,
                table_.default_blocked(v->type.shape, dtype_size(v->type.dtype), k_.threads));
        } else {
          place_scalar(*s.value);
        }
      } else {
        place_scalar(*s.value);
      }
      return;
    }
    case ir::StmtKind::Store: {
      const Layout* l = nullptr;
      // Free values are stored in the tensor's dtype (free_store_layout).
      const ir::Param& to = k_.params[s.access->param];
      if (!s.value->type.is_scalar()) {
        l = natural(*s.value);
        if (!l) l = free_store_layout(table_, s.value->type.shape, to, k_.threads);
        place(s.value, l);
      } else {
        place_scalar(*s.value);
      }
      // A scalar stored over a tile is written in the layout the backend gives such stores
      // (cuda emit_store): its mask and gather indices are read in that layout.
      if (!l && !s.access->is_scalar())
        l = free_store_layout(table_, s.access->shape(), to, k_.threads);
      if (s.mask) {
        if (l && !s.mask->type.is_scalar())
          place(s.mask, l);
        else
          place_scalar(*s.mask);
      }
      place_access(*s.access, l);
      return;
    }
    case ir::StmtKind::Eval: {
      ir::Expr& e = *s.value;
      if (e.kind == ExprKind::Prefetch) {
        // "Vectors" of one 128-byte line: each element of the layout is a line's first element.
        const Layout* l =
            e.type.is_scalar()
                ? nullptr
                : table_.default_blocked(e.type.shape, dtype_size(e.type.dtype), k_.threads, 128);
        e.layout = l;
        place_access(*e.access, l);
      } else if (e.kind == ExprKind::AtomicAdd && !e.type.is_scalar()) {
        if (e.bulk) e.bulk = bulk_fits(e);
        if (e.bulk) {
          // The bulk copy engine reads the rows from shared memory: a value in registers is
          // staged there first (its own tile; the emitter adds the rows one run each).
          const bool in_shared =
              e.a->kind == ExprKind::VarRef && e.a->var->type.space == Space::Shared;
          if (!in_shared) {
            e.a = stage_in_shared(std::move(e.a), "bulk_");
            // The TMA adds it in 32-column boxes from a 128-byte swizzled tile: one operation
            // per box instead of one per row, and the threads' stores spread over the banks.
            if (tma_reduce_fits(e)) e.a->var->smem_swizzle = 128;
          }
          e.layout = table_.default_blocked(e.type.shape, 4, k_.threads);
          place_access(*e.access, e.layout);
          return;
        }
        // A scalar value is added to every element of the tile (broadcast, as a store's).
        const Layout* l = e.a->type.is_scalar() ? nullptr : natural_or_default(*e.a);
        if (!l || e.a->type.shape != e.type.shape)
          l = table_.default_blocked(e.type.shape, 4, k_.threads);
        e.layout = l;
        place(e.a, l);
        if (e.b) place(e.b, l);
        place_access(*e.access, l);
      } else {
        place_scalar(e);
      }
      return;
    }
    case ir::StmtKind::For:
      place_scalar(*s.lo);
      place_scalar(*s.hi);
      rewrite_block(s.body);
      return;
    case ir::StmtKind::If:
      place_scalar(*s.value);
      rewrite_block(s.body);
      rewrite_block(s.else_body);
      return;
    case ir::StmtKind::Return:
    case ir::StmtKind::Barrier:
    case ir::StmtKind::AsyncCommit:
    case ir::StmtKind::AsyncWait:
    case ir::StmtKind::WgmmaWait:
    case ir::StmtKind::MbarrierInit:
    case ir::StmtKind::MbarrierWait:
    case ir::StmtKind::MbarrierArrive:
      return;
    }
  }

  /// A copy into shared memory is spread over the block with 16-byte chunks along rows.
  void place_copy(ir::Expr& e) {
    const Layout* l = table_.default_blocked(e.type.shape, dtype_size(e.type.dtype), k_.threads);
    if (e.type.rank() == 1 && l->vec * dtype_size(e.type.dtype) < 16) {
      // A rank-1 copy in 16-byte pieces by fewer threads, not element by element by all of
      // them: 16-byte pieces go through cp.async, 2-byte ones (a row of f16 scales) would be
      // plain loads that stall every thread for the memory latency.
      int vec = 16 / dtype_size(e.type.dtype);
      const int64_t cols = e.type.shape[0];
      while (vec > 1 && cols % vec != 0) vec /= 2;
      int tc = 1;
      while (tc * 2 <= k_.threads && tc * 2 * vec <= cols) tc *= 2;
      if (vec > l->vec) l = table_.blocked(e.type.shape, vec, tc, k_.threads);
    }
    if (e.type.rank() == 2 && gathers(*e.access)) l = gather_layout(e.type.shape, l);
    e.layout = l;
    place_access(*e.access, l);
    if (e.b) place(e.b, l);
    if (e.c) place_scalar(*e.c);
  }

  static bool gathers(const ir::Access& a) {
    for (const auto& ix : a.indices)
      if (ix.kind == ir::AccessIndex::Kind::Gather) return true;
    return false;
  }

  /// A gathered row costs a thread its index reads, bounds checks and address arithmetic
  /// (about a dozen instructions) however many of the row's vectors it then copies, so each
  /// thread takes several vectors of fewer rows: 8 threads (128 bytes of 16-byte vectors) per
  /// row, or more where the tile has too few rows to keep every thread busy.
  const Layout* gather_layout(const std::vector<int64_t>& shape, const Layout* l) {
    if (l->kind != ir::LayoutKind::Blocked) return l;
    int64_t chunks = std::max<int64_t>(1, shape[1] / l->vec);
    int tc = 8;
    while (tc < l->tc && tc < k_.threads && k_.threads / tc > shape[0]) tc *= 2;
    if (tc >= l->tc || tc > chunks) return l;
    return table_.blocked(shape, l->vec, tc, k_.threads);
  }

  void error(const dsl::SourceLoc& loc, const std::string& msg) { sink_.error(loc, msg); }

  ir::Kernel& k_;
  /// In layouts_from_values: a reduction of a variable with no layout yet has none either.
  bool defer_unknown_operands_ = false;
  ir::LayoutTable& table_;
  int warps_;
  std::map<ir::Var*, const Layout*> var_layout_;
  std::set<const ir::Expr*> register_a_;
  std::set<const ir::Expr*> warps_m_only_;
  dsl::DiagnosticSink sink_;
};

} // namespace

void assign_layouts(ir::Kernel& k) {
  LayoutAssignment(k).run();
}

} // namespace tilejit
