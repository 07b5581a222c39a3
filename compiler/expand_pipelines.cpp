#include "compiler/expand_pipelines.h"

#include "compiler/async_choices.h"
#include "compiler/producer_warps.h"
#include "compiler/specialise.h"
#include "support/error.h"
#include "support/text.h"

#include <cstdlib>

#include <map>
#include <set>

namespace tilejit {

using namespace ir;
using Role = Stmt::PipelineRole;

bool slot_release_enabled() {
  const char* v = std::getenv("TILEJIT_PIPELINE_RELEASE");
  if (!v || !*v || std::string(v) == "mbarrier") return true;
  if (std::string(v) == "barrier") return false;
  throw Error(str("TILEJIT_PIPELINE_RELEASE='", v,
                  "' is not a slot release: use 'mbarrier' (the default) or 'barrier'"));
}

bool early_inputs_enabled() {
  return env_switch("TILEJIT_PIPELINE_EARLY_INPUTS",
                    "whether copies' loaded addresses are read an iteration early");
}

namespace {

const Type kIndex{DType::I32, {}, Space::Scalar};
const Type kBool{DType::Bool, {}, Space::Scalar};

ExprPtr ref(Var* v, const SourceLoc& loc) {
  return make_var_ref(v, loc);
}

ExprPtr constant(int64_t v, const SourceLoc& loc) {
  ExprPtr e = make_int(v, DType::I32, loc);
  e->literal = true;
  return e;
}

/// A typed scalar binary expression.
ExprPtr binary(dsl::BinaryOp op, ExprPtr a, ExprPtr b, const SourceLoc& loc) {
  bool compare = op == dsl::BinaryOp::Lt || op == dsl::BinaryOp::Gt;
  ExprPtr e = make_binary(op, std::move(a), std::move(b), loc);
  e->type = compare ? kBool : kIndex;
  return e;
}

StmtPtr decl(Var* v, ExprPtr value, const SourceLoc& loc) {
  auto s = std::make_unique<Stmt>(StmtKind::Decl, loc);
  s->var = v;
  s->value = std::move(value);
  return s;
}

StmtPtr barrier(const std::string& note, const SourceLoc& loc) {
  auto s = std::make_unique<Stmt>(StmtKind::Barrier, loc);
  s->note = note;
  return s;
}

StmtPtr async_wait(int pending, const std::string& note, const SourceLoc& loc) {
  auto s = std::make_unique<Stmt>(StmtKind::AsyncWait, loc);
  s->pending = pending;
  s->note = note;
  return s;
}

StmtPtr async_commit(const SourceLoc& loc) {
  return std::make_unique<Stmt>(StmtKind::AsyncCommit, loc);
}

/// `a < b`, or `a > b` for a loop that counts down.
ExprPtr before_end(ExprPtr a, Var* hi, int64_t step, const SourceLoc& loc) {
  return binary(step > 0 ? dsl::BinaryOp::Lt : dsl::BinaryOp::Gt, std::move(a), ref(hi, loc), loc);
}

/// `v = v + 1`.
StmtPtr count_up(Var* v, const SourceLoc& loc) {
  auto s = std::make_unique<Stmt>(StmtKind::Assign, loc);
  s->var = v;
  s->value = binary(dsl::BinaryOp::Add, ref(v, loc), constant(1, loc), loc);
  return s;
}

/// `bits ^= 1 << slot`: a slot's parity bit, flipped at each use of the slot.
StmtPtr flip_bit(Var* bits, Var* slot, const SourceLoc& loc) {
  auto s = std::make_unique<Stmt>(StmtKind::Assign, loc);
  s->var = bits;
  s->value = binary(dsl::BinaryOp::BitXor, ref(bits, loc),
                    binary(dsl::BinaryOp::Shl, constant(1, loc), ref(slot, loc), loc), loc);
  return s;
}

/// `(bits >> slot) & 1`.
ExprPtr parity_bit(Var* bits, Var* slot, const SourceLoc& loc) {
  return binary(dsl::BinaryOp::BitAnd,
                binary(dsl::BinaryOp::Shr, ref(bits, loc), ref(slot, loc), loc), constant(1, loc),
                loc);
}

/// `slots` mbarriers at shared `offset`, each completing a phase after `arrivals` arrivals.
StmtPtr mbarrier_init(int64_t offset, int slots, int arrivals, const std::string& note,
                      const SourceLoc& loc) {
  auto s = std::make_unique<Stmt>(StmtKind::MbarrierInit, loc);
  s->barrier_offset = offset;
  s->barrier_slots = slots;
  s->barrier_arrivals = arrivals;
  s->note = note;
  return s;
}

/// The copying thread waits until slot `write`'s last use was released: the "empty" mbarrier
/// at `empties` completes the phase of parity bit ^ 1, `bits` counting the slot's uses.
StmtPtr wait_slot_free(int64_t empties, Var* bits, Var* write, const SourceLoc& loc) {
  auto s = std::make_unique<Stmt>(StmtKind::MbarrierWait, loc);
  s->barrier_offset = empties;
  s->producer_only = true;
  s->value = ref(write, loc);
  s->mask = binary(dsl::BinaryOp::BitXor, parity_bit(bits, write, loc), constant(1, loc), loc);
  s->note = "every thread is done reading the slot";
  return s;
}

/// This iteration's TMA copies landed: slot `read` of the "full" mbarriers at `full`
/// completes its (it / S)-th phase, or, for a loop inside another one (whose runs go on with
/// the phases), the phase the slot's bit in `phases` gives, the bit flipped after the wait.
void wait_slot_full(Block& body, int64_t full, Var* read, Var* phases, Var* it, int S,
                    const SourceLoc& loc) {
  auto wait = std::make_unique<Stmt>(StmtKind::MbarrierWait, loc);
  wait->barrier_offset = full;
  wait->value = ref(read, loc);
  wait->mask = phases ? parity_bit(phases, read, loc)
                      : binary(dsl::BinaryOp::Mod,
                               binary(dsl::BinaryOp::Div, ref(it, loc), constant(S, loc), loc),
                               constant(2, loc), loc);
  body.push_back(std::move(wait));
  if (phases) body.push_back(flip_bit(phases, read, loc));
}

/// The loop the threads that compute run: `loop`'s variable, step and unroll over [lo, hi)
/// (its step moved out of it), its body still to add.
StmtPtr main_loop(Stmt& loop, Var* lo, Var* hi, const std::string& note) {
  auto main = std::make_unique<Stmt>(StmtKind::For, loop.loc);
  main->var = loop.var;
  main->lo = ref(lo, loop.loc);
  main->hi = ref(hi, loop.loc);
  main->step = std::move(loop.step);
  main->unroll = loop.unroll;
  main->note = note;
  return main;
}

class PipelineExpander {
public:
  explicit PipelineExpander(Kernel& k) : k_(k) {
    for (const auto& v : k.vars) names_.insert(v->name);
    // The tensors the kernel writes (stores, atomics), before any loop is taken apart.
    for_each_stmt(k.body, [&](Stmt& s) {
      if (s.kind == StmtKind::Store && s.access) written_.insert(s.access->param);
      for_each_expr_root(s, [&](ExprPtr& root) {
        for_each_node(*root, [&](Expr& n) {
          if (n.kind == ExprKind::AtomicAdd && n.access) written_.insert(n.access->param);
        });
      });
    });
  }

  void run(Block& block) {
    for (size_t i = 0; i < block.size(); ++i) {
      Stmt& s = *block[i];
      if (s.kind == StmtKind::For && s.loop_kind == LoopKind::Pipelined) {
        Block expanded = expand(s);
        const size_t n = expanded.size();
        block.erase(block.begin() + static_cast<long>(i));
        block.insert(block.begin() + static_cast<long>(i),
                     std::make_move_iterator(expanded.begin()),
                     std::make_move_iterator(expanded.end()));
        i += n - 1;
        continue;
      }
      mark_copies(s, /*in_pipeline_body=*/false);
      const bool loop = s.kind == StmtKind::For;
      loop_depth_ += loop;
      run(s.body);
      run(s.else_body);
      loop_depth_ -= loop;
    }
  }

private:
  /// A fresh scalar named after `base` ("k0_lo"), unique in the kernel.
  Var* fresh(const std::string& base, const Type& type, const SourceLoc& loc) {
    std::string name = base;
    for (int n = 2; names_.count(name); ++n) name = str(base, "_", n);
    names_.insert(name);
    return k_.new_var(name, type, loc);
  }

  /// Copies run asynchronously, except those a pipelined loop's body does for itself.
  void mark_copies(Stmt& s, bool in_pipeline_body) {
    for_each_expr_root(s, [&](ExprPtr& root) {
      for_each_node(*root, [&](Expr& n) {
        if (n.kind == ExprKind::Copy)
          n.async_copy = !in_pipeline_body || s.pipeline_role == Role::Producer;
      });
    });
  }

  /// The statements that run ahead (producers, their inputs and the ifs around them), cloned
  /// for one iteration: the loop variable read as `iteration`, each declared variable fresh,
  /// ring buffers filled at `slot`.
  Block producers(const Block& body, Var* loop_var, Var* iteration, Var* slot,
                  std::map<const Var*, Var*>& renamed,
                  const std::map<const Var*, Var*>* carried = nullptr) {
    Block out;
    for (const StmtPtr& sp : body) {
      const Stmt& s = *sp;
      if (s.pipeline_role == Role::None) continue;
      auto c = std::make_unique<Stmt>(s.kind, s.loc);
      c->pipeline_role = s.pipeline_role;
      if (s.kind == StmtKind::If) {
        c->value = rename(*s.value, loop_var, iteration, renamed);
        c->body = producers(s.body, loop_var, iteration, slot, renamed, carried);
        c->else_body = producers(s.else_body, loop_var, iteration, slot, renamed, carried);
        out.push_back(std::move(c));
        continue;
      }
      // An input read an iteration early is its carried value; the rest are computed here.
      Var* early = nullptr;
      if (carried)
        if (auto it = carried->find(s.var); it != carried->end()) early = it->second;
      c->value = early ? ref(early, s.loc) : rename(*s.value, loop_var, iteration, renamed);
      if (s.pipeline_role == Role::Producer) {
        c->var = s.var; // the ring buffer itself: only its slot differs
        c->slot = ref(slot, s.loc);
        for_each_node(*c->value, [](Expr& n) {
          if (n.kind == ExprKind::Copy) n.async_copy = true;
        });
      } else {
        Var* v = fresh(s.var->name + "_ahead", s.var->type, s.var->loc);
        v->layout = s.var->layout;
        v->declared_type = s.var->declared_type;
        renamed[s.var] = v;
        c->var = v;
      }
      out.push_back(std::move(c));
    }
    return out;
  }

  /// The producers' inputs read an iteration before the copies they address: every statement
  /// with a pipeline role at the body's top level, the inputs scalars, at least one of them a
  /// load (a block-sparse loop's index list). Empty when the loop is otherwise.
  static std::vector<const Stmt*> early_inputs(const Block& body) {
    std::vector<const Stmt*> inputs;
    bool loads = false;
    for (const StmtPtr& sp : body) {
      const Stmt& s = *sp;
      if (s.pipeline_role == Role::None || s.pipeline_role == Role::Producer) continue;
      if (s.kind != StmtKind::Decl || !s.var || s.var->type.space != Space::Scalar) return {};
      for_each_node(const_cast<Expr&>(*s.value),
                    [&](Expr& n) { loads = loads || n.kind == ExprKind::Load; });
      inputs.push_back(&s);
    }
    if (!loads) return {};
    return inputs;
  }

  static ExprPtr rename(const Expr& e, Var* loop_var, Var* iteration,
                        const std::map<const Var*, Var*>& renamed) {
    ExprPtr c = e.clone();
    for_each_node(*c, [&](Expr& n) {
      if ((n.kind != ExprKind::VarRef && n.kind != ExprKind::Convert) || !n.var) return;
      if (n.var == loop_var)
        n.var = iteration;
      else if (auto it = renamed.find(n.var); it != renamed.end())
        n.var = it->second;
    });
    return c;
  }

  /// The consumers' own scalar loads read an iteration ahead: the leading scalar declarations
  /// of a pipelined loop's body (after its copies went to the producers) that load, computed
  /// from the loop variable, values the loop does not change and each other (a block-sparse
  /// loop's block index, which its masks test), become
  ///
  ///   x_c = 0; if lo < hi { x_c = value(lo) }      before the loop (in `before`)
  ///   for v ...:
  ///     x = x_c                                    the body's declaration
  ///     x_c = value(v + step)                      the next iteration's, its load's latency
  ///                                                hidden under this iteration's work
  ///
  /// so the body does not start by waiting for a load (ncu on attn_fwd_sparse: 2.5% of the
  /// samples at 10% kept, when the kernels carried the index by hand). The value read past the
  /// loop's end is never used (its loads are speculative: in-range or zero). Only tensors the
  /// kernel never writes are read ahead; divisors and shift counts must be loop-invariant and
  /// load-free (a value past the end must not divide by zero). TILEJIT_PIPELINE_EARLY_INPUTS=0
  /// turns this off with the producers' early inputs.
  void read_scalar_loads_ahead(Block& body, Var* v, Var* lo, Var* hi, int64_t step, Block& before,
                               const SourceLoc& loc) {
    if (!early_inputs_enabled()) return;
    // What the loop changes: every variable it declares or assigns.
    std::set<const Var*> changed{v};
    for_each_stmt(body, [&](Stmt& s) {
      if (s.var &&
          (s.kind == StmtKind::Decl || s.kind == StmtKind::Assign || s.kind == StmtKind::For))
        changed.insert(s.var);
    });
    std::set<const Var*> chain; // the leading declarations taken so far
    auto invariant_free = [&](Expr& e) {
      bool ok = true;
      for_each_node(e, [&](Expr& n) {
        if (n.kind == ExprKind::Load || (n.kind == ExprKind::VarRef && changed.count(n.var)))
          ok = false;
      });
      return ok;
    };
    auto readable_ahead = [&](Expr& e, bool& loads) {
      bool ok = true;
      for_each_node(e, [&](Expr& n) {
        if (!n.type.is_scalar() || n.type.space != Space::Scalar) ok = false;
        switch (n.kind) {
        case ExprKind::Const:
        case ExprKind::ParamRef:
        case ExprKind::DimRef:
        case ExprKind::ProgramId:
        case ExprKind::NumPrograms:
        case ExprKind::Unary:
        case ExprKind::Select:
        case ExprKind::Math:
        case ExprKind::Cast:
          break;
        case ExprKind::VarRef:
          if (changed.count(n.var) && n.var != v && !chain.count(n.var)) ok = false;
          break;
        case ExprKind::Binary:
          if (n.binary_op == dsl::BinaryOp::Div || n.binary_op == dsl::BinaryOp::Mod ||
              n.binary_op == dsl::BinaryOp::Shl || n.binary_op == dsl::BinaryOp::Shr)
            ok = ok && invariant_free(*n.b);
          break;
        case ExprKind::Load:
          loads = true;
          if (!n.access || !n.access->is_scalar() || written_.count(n.access->param)) ok = false;
          break;
        default:
          ok = false;
        }
      });
      return ok;
    };
    std::vector<Stmt*> taken;
    bool loads = false;
    for (StmtPtr& sp : body) {
      Stmt& s = *sp;
      if (s.kind != StmtKind::Decl || !s.var || s.var->type.space != Space::Scalar ||
          !s.var->type.is_scalar() || s.var->type.dtype != DType::I32 ||
          !readable_ahead(*s.value, loads))
        break;
      chain.insert(s.var);
      taken.push_back(&s);
    }
    if (!loads) return;
    // What the rest of the body reads: a declaration nothing there reads (one only the copies
    // used, or only a carried declaration, whose value is written out) is not carried.
    std::set<Var*> used;
    std::function<void(Stmt&)> reads = [&](Stmt& s) {
      for_each_expr_root(s, [&](ExprPtr& root) { vars_read(*root, used); });
      for (Block* b : {&s.body, &s.else_body})
        for (StmtPtr& c : *b) reads(*c);
    };
    for (size_t i = taken.size(); i < body.size(); ++i) reads(*body[i]);
    const std::map<const Var*, ExprPtr> inlined =
        inline_chain(std::vector<const Stmt*>(taken.begin(), taken.end()));
    auto value_at = [&](const Var* x, Var* at) { return speculative_at(*inlined.at(x), v, at); };
    auto has_load = [](Expr& e) {
      bool found = false;
      for_each_node(e, [&](Expr& n) { found = found || n.kind == ExprKind::Load; });
      return found;
    };
    // The declarations with loads are carried; the others stay as they are.
    std::vector<std::pair<Stmt*, Var*>> carried;
    auto guard = std::make_unique<Stmt>(StmtKind::If, loc);
    guard->value = before_end(ref(lo, loc), hi, step, loc);
    Block next;
    Var* at = nullptr; // v + step, declared where a value is read for it
    for (Stmt* st : taken) {
      if (!has_load(*inlined.at(st->var)) || !used.count(st->var)) continue;
      Var* c = fresh(st->var->name + "_c", st->var->type, st->var->loc);
      c->assigned_in_loop = true;
      before.push_back(decl(c, make_int(0, st->var->type.dtype, st->loc), st->loc));
      auto first = std::make_unique<Stmt>(StmtKind::Assign, st->loc);
      first->var = c;
      first->value = value_at(st->var, lo);
      guard->body.push_back(std::move(first));
      auto then = std::make_unique<Stmt>(StmtKind::Assign, st->loc);
      then->var = c;
      if (!at) {
        at = fresh(v->name + "_next", kIndex, loc);
        next.push_back(
            decl(at, binary(dsl::BinaryOp::Add, ref(v, loc), constant(step, loc), loc), loc));
      }
      then->value = value_at(st->var, at);
      next.push_back(std::move(then));
      st->value = ref(c, st->loc);
    }
    before.push_back(std::move(guard));
    body.insert(body.begin() + static_cast<long>(taken.size()),
                std::make_move_iterator(next.begin()), std::make_move_iterator(next.end()));
  }

  /// Each declaration's value written out in terms of what precedes the first (the earlier
  /// ones substituted), so that a value read ahead depends on no other value read ahead: the
  /// interpreter reports a speculative load out of range where its variable is read, and one
  /// read past the loop's end is never read.
  static std::map<const Var*, ExprPtr> inline_chain(const std::vector<const Stmt*>& decls) {
    std::map<const Var*, ExprPtr> inlined;
    std::function<void(ExprPtr&)> substitute = [&](ExprPtr& e) {
      if (e->kind == ExprKind::VarRef)
        if (auto it = inlined.find(e->var); it != inlined.end()) {
          e = it->second->clone();
          return;
        }
      for (ExprPtr* child : {&e->a, &e->b, &e->c})
        if (*child) substitute(*child);
      if (e->access)
        for (AccessIndex& ix : e->access->indices)
          if (ix.index) substitute(ix.index);
    };
    for (const Stmt* st : decls) {
      ExprPtr c = st->value->clone();
      substitute(c);
      inlined[st->var] = std::move(c);
    }
    return inlined;
  }

  /// `e` at iteration `at` (the loop variable read as `at`), its loads speculative: read ahead,
  /// possibly past the loop's end, where the value is never used.
  static ExprPtr speculative_at(const Expr& e, Var* loop_var, Var* at) {
    ExprPtr c = rename(e, loop_var, at, {});
    for_each_node(*c, [](Expr& n) {
      if (n.kind == ExprKind::Load && n.access) n.access->speculative = true;
    });
    return c;
  }

  /// The body without its producers (the ifs around them keep what else they hold).
  Block consumers(Block& body) {
    Block out;
    for (StmtPtr& sp : body) {
      if (sp->pipeline_role == Role::Producer) continue;
      Stmt& s = *sp;
      s.body = consumers(s.body);
      s.else_body = consumers(s.else_body);
      s.pipeline_role = Role::None;
      if (s.kind != StmtKind::For) {
        mark_copies(s, /*in_pipeline_body=*/true);
      } else {
        // A nested loop's copies are its own; its pipelined loops expand on their own.
        run(s.body);
      }
      out.push_back(std::move(sp));
    }
    return out;
  }

public:
  /// Takes the loop with `producer = 1` that can have producer warps (notes on the others)
  /// and reserves its mbarriers; run before any loop is expanded.
  void plan_producer_warps() {
    auto why_not = [&](Stmt& loop) -> std::string {
      if (!slot_release_enabled()) return "TILEJIT_PIPELINE_RELEASE=barrier";
      std::vector<Var*> rings;
      for_each_stmt(loop.body, [&](Stmt& s) {
        if (s.pipeline_role == Role::Producer) rings.push_back(s.var);
      });
      int tma = 0;
      for (const StmtPtr& sp : loop.body) tma += tma_copy(k_, *sp);
      if (rings.empty() || tma != static_cast<int>(rings.size()))
        return "its copies are not all TMA copies (a target without TMA, or a tile or tensor "
               "that does not fit one)";
      if (in_flight_dot(loop.body, rings, loop.stages))
        return "a dot is left running across its iterations";
      // Full and empty per slot, and a pair for tiles staged for the reducing warp.
      if (mbarriers_at() + 16 * loop.stages + 16 > k_.smem_limit)
        return "no room for its mbarriers";
      return "";
    };
    auto fresh_var = [&](const std::string& base, const Type& t, const SourceLoc& loc) {
      return fresh(base, t, loc);
    };
    producer_ = tilejit::plan_producer_warps(k_, why_not, fresh_var);
    if (!producer_.loop) return;
    producer_barriers_ = mbarriers_at();
    k_.smem_bytes =
        producer_barriers_ + 16 * producer_.loop->stages + (producer_.reductions.empty() ? 0 : 16);
    if (producer_.outer_copies.empty()) return;
    const int64_t outer = k_.smem_bytes;
    k_.smem_bytes += 16 * static_cast<int64_t>(producer_.outer_copies.size());
    if (k_.smem_bytes > k_.smem_limit)
      throw ConstraintError(str("kernel '", k_.name, "' needs ", k_.smem_bytes,
                                " bytes of shared memory with the mbarriers of its producer "
                                "warps' copies, over the ",
                                k_.smem_limit, " bytes a block may use"));
    hand_outer_copies(outer);
  }

  /// Where mbarriers go: after the planned shared memory, 8-byte aligned.
  int64_t mbarriers_at() const { return (k_.smem_bytes + 7) / 8 * 8; }

  /// The producer program with its loop in place (empty if no loop has producer warps).
  ProducerProgram& producer() { return producer_; }

private:
  Block expand(Stmt& loop) {
    if (&loop == producer_.loop) return expand_with_producer(loop);
    const SourceLoc& loc = loop.loc;
    const int S = loop.stages;
    const int64_t step = loop.step->int_value;
    Var* v = loop.var;
    std::vector<Var*> rings;
    for_each_stmt(loop.body, [&](Stmt& s) {
      if (s.pipeline_role == Role::Producer) rings.push_back(s.var);
    });
    // D: how many iterations ahead the producers run (one less with a dot left running).
    Stmt* running = in_flight_dot(loop.body, rings, S);
    const int D = running ? S - 2 : S - 1;
    if (running) running->value->wgmma = 2;
    // TMA copies: their mbarriers, one per ring slot, go after the planned shared memory
    // where they fit, set up once per program. A loop that runs once per program waits on
    // slot s's (it / S)-th phase; a loop inside another one (attention's backward, once per
    // query head of a group) runs again on mbarriers whose phases went on, so it carries each
    // slot's parity in a bit of a counter declared at the kernel's start, flipped at each wait
    // (every copy into a slot is waited for once, so the bits follow the phases).
    int tma_copies = 0;
    int64_t barriers = -1;
    for (const StmtPtr& sp : loop.body) tma_copies += tma_copy(k_, *sp);
    const int64_t at = mbarriers_at();
    if (tma_copies > 0 && at + 8 * S <= k_.smem_limit) {
      barriers = at;
      k_.smem_bytes = at + 8 * S;
      for (StmtPtr& sp : loop.body)
        if (tma_copy(k_, *sp)) sp->value->tma_barrier = barriers;
    }
    // Per-slot release (every ring filled by TMA, no wgmma left running past an iteration):
    // each thread arrives on its slot's "empty" mbarrier at the iteration's end, and the warp
    // of the thread issuing the copies waits on it before refilling the slot, instead of a block
    // barrier at the top of every iteration. The barrier held the warpgroups in step, so both
    // ran their tensor-core products at once and their exponentials at once; released, they
    // drift apart by up to an iteration and overlap (ncu on attn_bwd: a third of the stalls
    // were that barrier).
    int64_t empties = -1;
    if (barriers >= 0 && !running && tma_copies == static_cast<int>(rings.size()) &&
        slot_release_enabled() && barriers + 16 * S <= k_.smem_limit) {
      empties = barriers + 8 * S;
      k_.smem_bytes = empties + 8 * S;
    }
    const bool nested = loop_depth_ > 0;
    Var* phases = nullptr;
    Var* released = nullptr; // bit s: the parity of slot s's releases so far
    Block out;
    Var* lo = fresh(v->name + "_lo", kIndex, loc);
    Var* hi = fresh(v->name + "_hi", kIndex, loc);
    out.push_back(decl(lo, std::move(loop.lo), loc));
    out.push_back(decl(hi, std::move(loop.hi), loc));
    if (barriers >= 0) {
      StmtPtr init = mbarrier_init(barriers, S, tma_copies, "", loc);
      StmtPtr empty_init;
      if (empties >= 0) {
        empty_init = mbarrier_init(empties, S, k_.threads, "released by every thread", loc);
        released = fresh(v->name + "_released", kIndex, loc);
        released->assigned_in_loop = true;
      }
      StmtPtr published = barrier("the mbarriers are set up before any copy signals them", loc);
      Block& setup = nested ? kernel_start_ : out;
      setup.push_back(std::move(init));
      if (empty_init) setup.push_back(std::move(empty_init));
      setup.push_back(std::move(published));
      if (nested) {
        phases = fresh(v->name + "_phases", kIndex, loc);
        phases->assigned_in_loop = true;
        kernel_start_.push_back(decl(phases, constant(0, loc), loc));
      }
      if (released) setup.push_back(decl(released, constant(0, loc), loc));
    }

    // Prologue: iterations 0 .. D-1 issue their copies into slots 0 .. D-1.
    auto prologue = std::make_unique<Stmt>(StmtKind::For, loc);
    prologue->var = fresh(v->name + "_stage", kIndex, loc);
    prologue->var->is_loop_var = true;
    prologue->lo = constant(0, loc);
    prologue->hi = constant(D, loc);
    prologue->step = constant(1, loc);
    {
      Var* ahead = fresh(v->name + "_ahead", kIndex, loc);
      prologue->body.push_back(
          decl(ahead,
               binary(dsl::BinaryOp::Add, ref(lo, loc),
                      binary(dsl::BinaryOp::Mul, ref(prologue->var, loc), constant(step, loc), loc),
                      loc),
               loc));
      auto guard = std::make_unique<Stmt>(StmtKind::If, loc);
      guard->value = before_end(ref(ahead, loc), hi, step, loc);
      std::map<const Var*, Var*> renamed;
      guard->body = producers(loop.body, v, ahead, prologue->var, renamed);
      prologue->body.push_back(std::move(guard));
      prologue->body.push_back(async_commit(loc));
    }
    out.push_back(std::move(prologue));

    // Inputs the copies' addresses load (a block-sparse loop's next block index): read one
    // iteration before the copies they address and carried in a register, so that the thread
    // issuing the copies does so as soon as their slot is free rather than a load's latency
    // later (ncu on attn_fwd_sparse: its warps waited twice as long as the dense kernel's for
    // copies to land). A value read past the loop's end is never used: the copies' guard.
    const std::vector<const Stmt*> early =
        D > 0 && early_inputs_enabled() ? early_inputs(loop.body) : std::vector<const Stmt*>{};
    std::map<const Var*, Var*> carried;         // input -> its value for the next `ahead`
    std::map<const Var*, ExprPtr> early_values; // each input's value, the others written out
    if (!early.empty()) {
      Var* first = fresh(v->name + "_ahead", kIndex, loc);
      out.push_back(
          decl(first, binary(dsl::BinaryOp::Add, ref(lo, loc), constant(D * step, loc), loc), loc));
      early_values = inline_chain(early);
      for (const Stmt* in : early) {
        Var* c = fresh(in->var->name + "_early", in->var->type, in->var->loc);
        c->assigned_in_loop = true;
        out.push_back(decl(c, speculative_at(*early_values.at(in->var), v, first), in->loc));
        carried[in->var] = c;
      }
    }

    // The loop: wait for this iteration's copies, then issue D iterations ahead.
    // (Its note: why producer = 1 was not taken, if it was asked.)
    StmtPtr main = main_loop(loop, lo, hi, loop.note);
    main->body.push_back(
        async_wait(D - 1, "this iteration's copies landed (the later ones may not)", loc));
    if (empties < 0)
      main->body.push_back(
          barrier("this iteration's copies landed; last iteration's reads are done", loc));
    // The iteration count: a counter carried by the loop (one add per iteration).
    Var* it = fresh(v->name + "_it", kIndex, loc);
    it->assigned_in_loop = true;
    StmtPtr it_decl = decl(it, constant(0, loc), loc);
    Var* read = fresh(v->name + "_read", kIndex, loc);
    Var* write = fresh(v->name + "_write", kIndex, loc);
    main->body.push_back(
        decl(read, binary(dsl::BinaryOp::Mod, ref(it, loc), constant(S, loc), loc), loc));
    main->body.push_back(decl(
        write,
        binary(dsl::BinaryOp::Mod, binary(dsl::BinaryOp::Add, ref(it, loc), constant(D, loc), loc),
               constant(S, loc), loc),
        loc));
    for (Var* r : rings) r->read_slot = read;
    if (barriers >= 0) wait_slot_full(main->body, barriers, read, phases, it, S, loc);
    {
      Var* ahead = fresh(v->name + "_ahead", kIndex, loc);
      main->body.push_back(
          decl(ahead, binary(dsl::BinaryOp::Add, ref(v, loc), constant(D * step, loc), loc), loc));
      auto guard = std::make_unique<Stmt>(StmtKind::If, loc);
      guard->value = before_end(ref(ahead, loc), hi, step, loc);
      std::map<const Var*, Var*> renamed;
      guard->body =
          producers(loop.body, v, ahead, write, renamed, carried.empty() ? nullptr : &carried);
      if (empties >= 0) {
        // Slot `write` was last read S - D iterations ago (or never, or in an earlier run of
        // the loop, before its closing barrier): wait for that release, whose phase has the
        // parity bit ^ 1 (the bit counts this thread's releases of the slot, all threads alike).
        // Slot `write` was last read S - D iterations ago (or never, or in an earlier run of
        // the loop, before its closing barrier): wait for that release (the bit counts this
        // thread's releases of the slot, all threads alike).
        StmtPtr free = wait_slot_free(empties, released, write, loc);
        guard->body.insert(guard->body.begin(), std::move(free));
      }
      main->body.push_back(std::move(guard));
      main->body.push_back(async_commit(loc));
      if (!carried.empty()) {
        // The next iteration's inputs, read now (each written out: see inline_chain).
        Var* next = fresh(v->name + "_ahead", kIndex, loc);
        main->body.push_back(
            decl(next, binary(dsl::BinaryOp::Add, ref(ahead, loc), constant(step, loc), loc), loc));
        for (const Stmt* in : early) {
          auto assign = std::make_unique<Stmt>(StmtKind::Assign, in->loc);
          assign->var = carried.at(in->var);
          assign->value = speculative_at(*early_values.at(in->var), v, next);
          main->body.push_back(std::move(assign));
        }
      }
    }
    ++loop_depth_; // a pipelined loop in the body runs once per iteration of this one
    Block body = consumers(loop.body);
    --loop_depth_;
    Block ahead_init; // the consumers' loads read ahead: their first values
    read_scalar_loads_ahead(body, v, lo, hi, step, ahead_init, loc);
    for (StmtPtr& s : body) main->body.push_back(std::move(s));
    if (empties >= 0) {
      // This thread is done with slot `read`: its release, and the slot's parity bit flipped.
      auto arrive = std::make_unique<Stmt>(StmtKind::MbarrierArrive, loc);
      arrive->barrier_offset = empties;
      arrive->value = ref(read, loc);
      main->body.push_back(std::move(arrive));
      main->body.push_back(flip_bit(released, read, loc));
    }
    main->body.push_back(count_up(it, loc));
    if (running) {
      // The last wgmmas end before acc is read. Only a loop that ran has any: ptxas serializes
      // every wgmma when a path around the loop reaches the wait with acc set otherwise.
      auto ran = std::make_unique<Stmt>(StmtKind::If, loc);
      ran->value = before_end(ref(lo, loc), hi, step, loc);
      ran->body.push_back(std::move(it_decl));
      for (StmtPtr& s : ahead_init) ran->body.push_back(std::move(s));
      ran->body.push_back(std::move(main));
      auto wait = std::make_unique<Stmt>(StmtKind::WgmmaWait, loc);
      wait->var = running->var;
      wait->note = "the loop's last wgmmas are done: acc is readable";
      ran->body.push_back(std::move(wait));
      out.push_back(std::move(ran));
    } else {
      out.push_back(std::move(it_decl));
      for (StmtPtr& s : ahead_init) out.push_back(std::move(s));
      out.push_back(std::move(main));
    }
    out.push_back(async_wait(0, "", loc));
    out.push_back(barrier("the ring buffers may be reused after the loop", loc));
    return out;
  }

  /// A loop with producer warps: the copying thread of the producer program fills each slot
  /// as soon as every thread released it (up to S iterations ahead):
  ///
  ///   for v' in [lo, hi) step:                      (the producer program, one thread)
  ///     write = fill % S
  ///     mbarrier_wait empty[write]                  its last use released
  ///     producers -> slot write                     TMA, completing full[write]
  ///   for v in [lo, hi) step:                       (the kernel's own threads)
  ///     read = it % S
  ///     mbarrier_wait full[read]                    this iteration's copies landed
  ///     the body
  ///     mbarrier_arrive empty[read]                 done with the slot
  ///
  /// Both count each slot's uses in a bit per slot across runs of an enclosing loop, as the
  /// ordinary pipeline does.
  Block expand_with_producer(Stmt& loop) {
    const SourceLoc& loc = loop.loc;
    const int S = loop.stages;
    const int64_t step = loop.step->int_value;
    Var* v = loop.var;
    std::vector<Var*> rings;
    for (const StmtPtr& sp : loop.body)
      if (sp->pipeline_role == Role::Producer) rings.push_back(sp->var);
    const int64_t full = producer_barriers_, empty = producer_barriers_ + 8 * S;
    for (StmtPtr& sp : loop.body)
      if (sp->pipeline_role == Role::Producer) sp->value->tma_barrier = full;
    // Set up before the block splits into its roles (the producer starts copying at once).
    kernel_start_.push_back(mbarrier_init(full, S, static_cast<int>(rings.size()), "", loc));
    kernel_start_.push_back(mbarrier_init(empty, S, k_.threads,
                                          "released by every thread but the producer warps'", loc));
    const int64_t staged = empty + 8 * S, drained = staged + 8;
    if (!producer_.reductions.empty()) {
      kernel_start_.push_back(
          mbarrier_init(staged, 1, k_.threads,
                        "the tile to add staged by every thread but the producer warps'", loc));
      kernel_start_.push_back(mbarrier_init(
          drained, 1, 32, "the staged tile read by the reducing warp's additions", loc));
    }
    kernel_start_.push_back(barrier("the mbarriers are set up before any copy signals them", loc));
    Var* filled = fresh(v->name + "_filled", kIndex, loc); // bit s: slot s's fills' parity
    filled->assigned_in_loop = true;
    kernel_start_.push_back(decl(filled, constant(0, loc), loc));
    const bool nested = loop_depth_ > 0;
    Var* phases = nullptr;
    if (nested) {
      phases = fresh(v->name + "_phases", kIndex, loc);
      phases->assigned_in_loop = true;
      kernel_start_.push_back(decl(phases, constant(0, loc), loc));
    }

    // The producer's loop, in the producer program.
    {
      std::map<const Var*, Var*> renamed = producer_.copies.renamed;
      Var* pv = fresh(v->name + "_p", kIndex, loc);
      pv->is_loop_var = true;
      Var* fill = fresh(v->name + "_fill", kIndex, loc);
      fill->assigned_in_loop = true;
      Block at;
      at.push_back(decl(fill, constant(0, loc), loc));
      auto ploop = std::make_unique<Stmt>(StmtKind::For, loc);
      ploop->var = pv;
      ploop->lo = clone_renamed(*loop.lo, renamed);
      ploop->hi = clone_renamed(*loop.hi, renamed);
      ploop->step = loop.step->clone();
      Var* write = fresh(v->name + "_write", kIndex, loc);
      Block copies = producers(loop.body, v, pv, write, renamed);
      // The copies' scalar inputs (a block-sparse loop's block indices, loads) computed before
      // the wait for the slot, so that their latency passes while the slot is still read, not
      // after it is released (TILEJIT_PIPELINE_EARLY_INPUTS=0: after the wait).
      if (early_inputs_enabled())
        for (StmtPtr& c : copies)
          if (c && c->kind == StmtKind::Decl && c->pipeline_role == Role::ProducerInput &&
              c->var->type.space == Space::Scalar)
            ploop->body.push_back(std::move(c));
      ploop->body.push_back(
          decl(write, binary(dsl::BinaryOp::Mod, ref(fill, loc), constant(S, loc), loc), loc));
      ploop->body.push_back(wait_slot_free(empty, filled, write, loc));
      ploop->body.push_back(flip_bit(filled, write, loc));
      for (StmtPtr& c : copies)
        if (c) ploop->body.push_back(std::move(c));
      ploop->body.push_back(count_up(fill, loc));
      at.push_back(std::move(ploop));
      insert_role_loop(producer_.copies, std::move(at));
    }
    if (!producer_.reductions.empty()) hand_over_reductions(loop, staged, drained);

    // The consumers' loop, in place.
    Block out;
    Var* lo = fresh(v->name + "_lo", kIndex, loc);
    Var* hi = fresh(v->name + "_hi", kIndex, loc);
    out.push_back(decl(lo, std::move(loop.lo), loc));
    out.push_back(decl(hi, std::move(loop.hi), loc));
    Var* it = fresh(v->name + "_it", kIndex, loc);
    it->assigned_in_loop = true;
    out.push_back(decl(it, constant(0, loc), loc));
    StmtPtr main = main_loop(loop, lo, hi,
                             producer_.reductions.empty()
                                 ? "its copies issued by the producer warps"
                                 : "its copies and bulk atomic_adds issued by the producer warps");
    if (!loop.note.empty()) main->note += "; " + loop.note;
    Var* read = fresh(v->name + "_read", kIndex, loc);
    main->body.push_back(
        decl(read, binary(dsl::BinaryOp::Mod, ref(it, loc), constant(S, loc), loc), loc));
    for (Var* r : rings) r->read_slot = read;
    wait_slot_full(main->body, full, read, phases, it, S, loc);
    ++loop_depth_;
    Block body = consumers(loop.body);
    --loop_depth_;
    Block ahead_init; // the consumers' loads read ahead: their first values, before the count
    read_scalar_loads_ahead(body, v, lo, hi, step, ahead_init, loc);
    out.insert(out.end() - 1, std::make_move_iterator(ahead_init.begin()),
               std::make_move_iterator(ahead_init.end()));
    for (StmtPtr& s : body) main->body.push_back(std::move(s));
    auto arrive = std::make_unique<Stmt>(StmtKind::MbarrierArrive, loc);
    arrive->barrier_offset = empty;
    arrive->value = ref(read, loc);
    main->body.push_back(std::move(arrive));
    main->body.push_back(count_up(it, loc));
    out.push_back(std::move(main));
    out.push_back(async_wait(0, "", loc));
    out.push_back(barrier("the ring buffers may be reused after the loop", loc));
    return out;
  }

  /// The copies before the loop that the copying thread issues (ProducerProgram::outer_copies),
  /// each with a full and an empty mbarrier from shared `at` on, each side flipping a parity
  /// bit at each use of the tile:
  ///
  ///   the copying thread                        the threads
  ///     wait empty (the phase before), flip       wait full, flip          (the declaration)
  ///     tile <- TMA, completing full              ... reads of the tile ...
  ///                                               arrive empty             (after the last read)
  ///
  /// so the enclosing loop's next run refills the tile as soon as this run's last read of it is
  /// done, while the threads go on with what follows. (One buffer: a second one for q's tile,
  /// so that the next tile's could land during this tile's loop, made the persistent
  /// block-sparse forward 4-9% slower on the H200, 2026-12-01.)
  void hand_outer_copies(int64_t at) {
    for (auto [declared, clone] : producer_.outer_copies) {
      const SourceLoc& loc = declared->loc;
      Var* tile = declared->var;
      const int64_t full = at, empty = at + 8;
      at += 16;
      tile->by_mbarrier = true;
      kernel_start_.push_back(mbarrier_init(full, 1, 1, "", loc));
      kernel_start_.push_back(mbarrier_init(
          empty, 1, k_.threads,
          str("'", tile->name, "' released by every thread but the producer warps'"), loc));
      Var* filled = fresh(tile->name + "_filled", kIndex, loc); // the copying thread's parity
      Var* landed = fresh(tile->name + "_landed", kIndex, loc); // the threads'
      for (Var* b : {filled, landed}) {
        b->assigned_in_loop = true;
        kernel_start_.push_back(decl(b, constant(0, loc), loc));
      }

      // The copying thread's.
      Block free;
      wait_phase(free, empty, filled, true, str("every thread is done reading '", tile->name, "'"),
                 loc);
      clone->value->tma_barrier = full;
      clone->value->async_copy = true;
      size_t at_index = 0;
      Block* in = holding(producer_.copies.program, clone, at_index);
      TJ_ICHECK(in, "the copying thread's copy of '", tile->name, "' not found");
      // (Where the role's loop goes moves down with what is inserted before it.)
      RoleProgram& role = producer_.copies;
      if (in == (role.loop_block ? role.loop_block : &role.program) && at_index <= role.loop_index)
        role.loop_index += free.size();
      in->insert(in->begin() + static_cast<long>(at_index), std::make_move_iterator(free.begin()),
                 std::make_move_iterator(free.end()));

      // The threads'.
      size_t index = 0;
      Block* level = holding(k_.body, declared, index);
      TJ_ICHECK(level, "the declaration of '", tile->name, "' not found");
      size_t last = index;
      for (size_t i = index + 1; i < level->size(); ++i)
        if (mentions(*(*level)[i], tile)) last = i;
      level->insert(
          level->begin() + static_cast<long>(last) + 1,
          arrive(empty, false, str("this thread is done reading '", tile->name, "'"), loc));
      Block landed_wait;
      wait_phase(landed_wait, full, landed, false, str("'", tile->name, "' landed"), loc);
      level->erase(level->begin() + static_cast<long>(index)); // the copying thread's now
      level->insert(level->begin() + static_cast<long>(index),
                    std::make_move_iterator(landed_wait.begin()),
                    std::make_move_iterator(landed_wait.end()));
    }
  }

  /// The block holding `target` (its index in `index`), null if none.
  static Block* holding(Block& b, const Stmt* target, size_t& index) {
    for (size_t i = 0; i < b.size(); ++i) {
      if (b[i].get() == target) {
        index = i;
        return &b;
      }
      if (Block* in = holding(b[i]->body, target, index)) return in;
      if (Block* in = holding(b[i]->else_body, target, index)) return in;
    }
    return nullptr;
  }

  /// `loop` (a role's own, with what it declares first) into the role's program, where the
  /// pipelined loop sat.
  static void insert_role_loop(RoleProgram& role, Block at) {
    Block& into = role.loop_block ? *role.loop_block : role.program;
    into.insert(into.begin() + static_cast<long>(role.loop_index),
                std::make_move_iterator(at.begin()), std::make_move_iterator(at.end()));
  }

  /// Waits for the one-slot mbarrier at `offset` to complete the phase whose parity is bit 0 of
  /// `bits` (`free`: the phase before it, which a fresh mbarrier counts as complete), then
  /// flips the bit. Every thread of the role waits.
  static void wait_phase(Block& body, int64_t offset, Var* bits, bool free, const std::string& note,
                         const SourceLoc& loc) {
    auto wait = std::make_unique<Stmt>(StmtKind::MbarrierWait, loc);
    wait->barrier_offset = offset;
    wait->value = constant(0, loc);
    wait->mask = binary(dsl::BinaryOp::BitAnd, ref(bits, loc), constant(1, loc), loc);
    if (free)
      wait->mask = binary(dsl::BinaryOp::BitXor, std::move(wait->mask), constant(1, loc), loc);
    wait->note = note;
    body.push_back(std::move(wait));
    auto flip = std::make_unique<Stmt>(StmtKind::Assign, loc);
    flip->var = bits;
    flip->value = binary(dsl::BinaryOp::BitXor, ref(bits, loc), constant(1, loc), loc);
    body.push_back(std::move(flip));
  }

  static StmtPtr arrive(int64_t offset, bool fence_async, const std::string& note,
                        const SourceLoc& loc) {
    auto s = std::make_unique<Stmt>(StmtKind::MbarrierArrive, loc);
    s->barrier_offset = offset;
    s->value = constant(0, loc);
    s->fence_async = fence_async;
    s->note = note;
    return s;
  }

  /// The loop's bulk atomic_adds of staged tiles, handed to the reducing warp (FlashAttention-3's
  /// dq writer): in the loop body each becomes "wait until the warp's additions have read the
  /// tile's last contents, write the tile, fence it for the async proxy, arrive on `staged`";
  /// the warp's loop runs the same iterations: wait on `staged`, issue the additions from the
  /// tile, wait until they have read it, arrive on `drained`. The threads go on computing while
  /// the copy engine adds.
  void hand_over_reductions(Stmt& loop, int64_t staged, int64_t drained) {
    const SourceLoc& loc = loop.loc;
    Var* tile_bits = fresh(loop.var->name + "_staged", kIndex, loc);   // the warp's waits
    Var* drain_bits = fresh(loop.var->name + "_drained", kIndex, loc); // the threads'
    for (Var* b : {tile_bits, drain_bits}) {
      b->assigned_in_loop = true;
      kernel_start_.push_back(decl(b, constant(0, loc), loc));
    }
    std::map<const Var*, Var*> renamed = producer_.reduces.renamed;
    Var* rv = fresh(loop.var->name + "_r", kIndex, loc);
    rv->is_loop_var = true;
    renamed[loop.var] = rv;
    auto rloop = std::make_unique<Stmt>(StmtKind::For, loc);
    rloop->var = rv;
    rloop->lo = clone_renamed(*loop.lo, producer_.reduces.renamed);
    rloop->hi = clone_renamed(*loop.hi, producer_.reduces.renamed);
    rloop->step = loop.step->clone();
    // The copies' inputs the loop body computes (a block-sparse loop's row index): the warp's
    // own, for the additions' addresses.
    for (const StmtPtr& sp : loop.body) {
      if (sp->pipeline_role != Role::ProducerInput || sp->kind != StmtKind::Decl) continue;
      Var* c = fresh(sp->var->name + "_r", sp->var->type, sp->var->loc);
      rloop->body.push_back(decl(c, clone_renamed(*sp->value, renamed), sp->loc));
      renamed[sp->var] = c;
    }
    std::set<const Stmt*> taken(producer_.reductions.begin(), producer_.reductions.end());
    Block body;
    for (StmtPtr& sp : loop.body) {
      if (!taken.count(sp.get())) {
        body.push_back(std::move(sp));
        continue;
      }
      Expr& add = *sp->value;
      Var* tile = add.a->var;
      // The warp's addition reads the staged tile itself.
      ExprPtr staged_add = clone_renamed(add, renamed);
      staged_add->a = make_var_ref(tile, add.loc);
      wait_phase(rloop->body, staged, tile_bits, false, "the threads staged the tile", sp->loc);
      auto eval = std::make_unique<Stmt>(StmtKind::Eval, sp->loc);
      eval->value = std::move(staged_add);
      rloop->body.push_back(std::move(eval));
      rloop->body.push_back(arrive(drained, false, "the additions have read the tile", sp->loc));
      // The threads stage it.
      wait_phase(body, drained, drain_bits, true,
                 "the reducing warp has read the tile's last contents", sp->loc);
      body.push_back(decl(tile, std::move(add.a->a), sp->loc));
      body.push_back(arrive(staged, true, "the tile is staged", sp->loc));
    }
    loop.body = std::move(body);
    Block at;
    at.push_back(std::move(rloop));
    insert_role_loop(producer_.reduces, std::move(at));
  }

public:
  /// What nested loops' TMA copies need once per program, before anything else runs: their
  /// mbarriers' setup (and the barrier publishing it) and their parity counters.
  Block kernel_start_;

private:
  Kernel& k_;
  std::set<int> written_; ///< parameters the kernel stores to or adds into
  std::set<std::string> names_;
  int loop_depth_ = 0; ///< loops around the statement being expanded
  ProducerProgram producer_;
  int64_t producer_barriers_ = -1; ///< its full mbarriers, then its empty ones
};

/// Registers per thread for producer warps and the rest (setmaxnreg), 0 0 where moving them
/// gains nothing: the block's pool is what ptxas gives each thread at entry (the launch
/// bound's share of 64K, a multiple of 8) times its threads; the producer warps keep 24
/// (FlashAttention-3's figure: a loop of address arithmetic and TMA issues), the rest share the
/// remainder. setmaxnreg acts on whole warpgroups: the kernel's threads must fill theirs.
std::pair<int, int> register_split(int threads, int producer_threads, int blocks_per_sm) {
  const int total = threads + producer_threads;
  const int entry = std::min(255, 65536 / (std::max(1, blocks_per_sm) * total) / 8 * 8);
  if (threads % 128 != 0) return {0, 0};
  const int producer = 24;
  const int rest = std::min(240, (entry * total - producer * producer_threads) / threads / 8 * 8);
  if (rest <= entry) return {0, 0};
  return {producer, rest};
}

} // namespace

void expand_pipelines(Kernel& k) {
  PipelineExpander expander(k);
  expander.plan_producer_warps();
  expander.run(k.body);
  ProducerProgram& producer = expander.producer();
  if (producer.loop) {
    // The block splits in two after the setup both share: the producer warps (one thread
    // running the copies' program, a warp the additions', if any) and the kernel's threads.
    auto role = [&](WarpRole r, Block program) {
      auto s = std::make_unique<Stmt>(StmtKind::If, producer.loc);
      s->warp_role = r;
      s->value = make_bool(true);
      s->body = std::move(program);
      return s;
    };
    auto roles = role(WarpRole::Split, {});
    roles->body.push_back(role(WarpRole::CopyThread, std::move(producer.copies.program)));
    if (!producer.reductions.empty())
      roles->body.push_back(role(WarpRole::ReduceWarp, std::move(producer.reduces.program)));
    roles->else_body = std::move(k.body);
    k.body.clear();
    k.body.push_back(std::move(roles));
    k.producer_threads = 128;
    std::tie(k.producer_regs, k.consumer_regs) =
        register_split(k.threads, k.producer_threads, k.blocks_per_sm);
  }
  k.body.insert(k.body.begin(), std::make_move_iterator(expander.kernel_start_.begin()),
                std::make_move_iterator(expander.kernel_start_.end()));
}

} // namespace tilejit
