// place-scratch: where the block-wide operations that exchange values through shared memory
// (cross-warp reductions, scans, layout conversions, uniform atomics) put them, and the barriers
// that make that safe. The scratch area at offset 0 has two halves; each such operation
// synchronises inside itself between writing and reading its half, so two operations in a row
// may not share a half, and the one after those two may reuse the first. Where the previous
// user is not known (after an `if`, at a loop's top and after a loop) a barrier comes first.
// solve_tril takes both halves (scratch=whole), between barriers of its own; it leaves both free.
// Runs last: it sees every barrier insert-barriers placed (each frees both halves). The emitter
// prints the halves chosen here and checks, as it prints, that they alternate.
#pragma once

#include "compiler/ir.h"

namespace tilejit {

void place_scratch(ir::Kernel& k);

/// Whether the backend's code for `e` exchanges values through the scratch area (the same
/// rule plan-shared-memory sizes it by).
bool uses_scratch(const ir::Kernel& k, const ir::Expr& e);

} // namespace tilejit
