// Producer warps for a pipelined loop (`pipelined(..., producer = 1)`), FlashAttention-3's
// warp specialisation: the block is launched with a warpgroup more, one of whose threads issues
// the loop's TMA copies into the ring slots as they are released, while the kernel's own threads
// only wait for their slots, compute and release them. Nothing then holds the computing warps
// back to issue copies, and setmaxnreg gives them the producer warps' registers.
//
// The loop's bulk atomic_adds of tiles it stages (dq's sums in attention's backward) go to the
// producer warps too, FlashAttention-3's dq writer: the threads write the tile to shared memory
// and go on, one warp of the producer warpgroup issues the bulk copy engine's additions from it
// and hands the tile back once they have read it.
//
// A loop inside another loop (a persistent kernel walking its tiles in turn) has copies of its
// own before it in that loop's body (the tile's queries): the copying thread issues those too,
// each into its tile when the threads have released it, so that the next tile's copies land
// while the threads finish this one.
//
// This file decides which loop may have them and writes the programs the copying thread and
// the reducing warp run before and around the loop: the loops and ifs that enclose it, the
// scalars its bounds, its copies' and its additions' addresses are computed from (a backward
// slice, cloned with fresh names) and the early returns they must follow. expand-pipelines
// then puts each role's loop into its program.
#pragma once

#include "compiler/ir.h"

#include <functional>
#include <map>
#include <set>
#include <string>

namespace tilejit {

/// What one role of the producer warps runs: the loops and ifs around the pipelined loop and
/// the scalars it needs, its own loop still to insert.
struct RoleProgram {
  ir::Block program; ///< the loop not yet in it
  /// Where the role's loop goes: this block (null: `program` itself, a loop at the kernel's
  /// top level; not a pointer to it, which moving the struct would leave dangling)...
  ir::Block* loop_block = nullptr;
  size_t loop_index = 0; ///< ...at this index
  /// The kernel's scalars the loop's bounds and addresses read -> the role's own copies.
  std::map<const ir::Var*, ir::Var*> renamed;
};

struct ProducerProgram {
  /// The pipelined loop taken (null: none); expand-pipelines replaces (frees) it.
  ir::Stmt* loop = nullptr;
  ir::SourceLoc loc;  ///< the loop's
  RoleProgram copies; ///< the copying thread's
  /// The loop body's bulk atomic_adds of staged tiles (`Eval`s at its top level) that the
  /// reducing warp issues, and its program (empty when there are none).
  std::vector<ir::Stmt*> reductions;
  RoleProgram reduces;
  /// Copies declared before the loop in the body of a loop around it (a persistent kernel's
  /// next tile of queries), issued by the copying thread too: the kernel's declaration and
  /// the copying thread's clone of it (expand-pipelines gives them a full and an empty
  /// mbarrier each).
  std::vector<std::pair<ir::Stmt*, ir::Stmt*>> outer_copies;
};

/// Picks the pipelined loop with `producer = 1` that gets producer warps (at most one per
/// kernel) and writes its roles' programs. `why_not(loop)` gives the pipeline's own reason a
/// loop cannot have them ("" when it can); a loop not taken gets the reason in its note, and
/// runs as an ordinary pipeline. `fresh(base, type, loc)` makes a uniquely named variable.
ProducerProgram plan_producer_warps(
    ir::Kernel& k, const std::function<std::string(ir::Stmt&)>& why_not,
    const std::function<ir::Var*(const std::string&, const ir::Type&, const ir::SourceLoc&)>&
        fresh);

/// The tiles producer warps may fill before their loop (ProducerProgram::outer_copies) if the
/// loop gets them: plan-shared-memory keeps their storage apart, since the copying thread
/// writes them whenever it gets there (none with TILEJIT_PRODUCER_OUTER_COPIES=0).
std::set<const ir::Var*> producer_outer_tiles(ir::Kernel& k);

/// `e` cloned with its variables renamed by `renamed` (others kept).
ir::ExprPtr clone_renamed(const ir::Expr& e, const std::map<const ir::Var*, ir::Var*>& renamed);

} // namespace tilejit
