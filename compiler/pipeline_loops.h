// Pass 5, pipeline_loops: in each `for ... in pipelined(lo, hi, step, stages = S)` loop, finds
// the copies into shared memory that can be issued S-1 iterations ahead (their addresses
// depend only on the loop variable and values fixed in the loop, possibly through index
// loads computed in the body) and marks them, and the statements they need, as producers.
// Their shared tiles become rings of S buffers. A loop with nothing to pipeline runs serially
// (with a warning naming what stopped it).
#pragma once

#include "compiler/ir.h"
#include "dsl/diagnostics.h"

#include <vector>

namespace tilejit {

/// Returns warnings (a pipelined loop that had to run serially, and why).
std::vector<dsl::Diagnostic> pipeline_loops(ir::Kernel& k);

} // namespace tilejit
