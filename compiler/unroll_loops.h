// Pass unroll-loops: a serial loop with `unroll = N` whose body only declares and assigns
// values (no store, atomic, fence, shared tile, branch or nested loop) becomes a loop over N
// iterations at a time. The loads of all N iterations (declarations whose value is a load that
// depends only on the loop variable and on values the body does not change) are written first,
// then the N bodies, each after the first under `if i + k * step < hi`. Unrolling alone does not
// do this: ptxas kept each iteration's loads behind the previous iteration's arithmetic, so a
// loop over partial results waited one memory round trip per iteration. With no stores in the
// body, reading earlier cannot change what is read; iterations past `hi` read but use nothing.
// Runs before infer-types, so the interpreter (which starts there) runs the rewritten loop too.
#pragma once

#include "compiler/ir.h"

namespace tilejit {

void unroll_loops(ir::Kernel& k);

} // namespace tilejit
