// Pass insert-barriers: puts a block-wide barrier between a write of a shared tile and a
// later read or write of it by other threads (and between a read and a later overwrite), so
// that every thread sees whole tiles. Loops are walked twice so a barrier also separates the
// end of one iteration from the start of the next. Ring buffers of pipelined copies are left
// to the pipeline's own wait-and-barrier at the top of each iteration; operations with their
// own scratch (reductions, conversions, scans) synchronise themselves.
#pragma once

#include "compiler/ir.h"

#include <set>
#include <string>

namespace tilejit {

void insert_barriers(ir::Kernel& k);

/// A statement that needs a barrier before it which the IR lacks, and why (the note
/// insert-barriers would give it); `stmt` is null when every hazard has its barrier.
struct BarrierHazard {
  const ir::Stmt* stmt = nullptr;
  std::string why;
};
/// The IR verifier's check after insert-barriers: the same analysis, inserting nothing.
BarrierHazard find_barrier_hazard(ir::Kernel& k);

/// Shared tiles an expression tree reads / writes (staged dot operands are written).
void shared_effects(ir::Expr& e, std::set<ir::Var*>& reads, std::set<ir::Var*>& writes);

} // namespace tilejit
