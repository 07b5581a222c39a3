// Pass pipeline-loops: in each `for ... in pipelined(lo, hi, step, stages = S)` loop, finds the
// copies into shared memory that can be issued S-1 iterations ahead (their addresses depend
// only on the loop variable and values fixed in the loop, possibly through index loads
// computed in the body; they may sit under `if`s whose conditions can run ahead too) and marks
// them as producers, and the statements and `if`s they need as producer inputs. Their shared
// tiles become rings of S buffers; expand-pipelines writes the loop out. A loop with nothing to
// pipeline runs serially, with a warning naming what stopped it.
#pragma once

#include "compiler/ir.h"
#include "dsl/diagnostics.h"

#include <vector>

namespace tilejit {

/// Returns warnings (a pipelined loop that had to run serially, and why).
std::vector<dsl::Diagnostic> pipeline_loops(ir::Kernel& k);

} // namespace tilejit
