// The IR verifier: the invariants each pass establishes, checked after every pass in builds
// with TILEJIT_VERIFY_IR (compiler/pipeline.cpp). A violation is a tilejit bug, never the
// user's: it throws InternalError naming the pass just run, the broken invariant and the
// statement.
//
// What is checked depends on how far the pipeline got (each check from its pass on):
//   always              structure: the operands and fields each statement and expression kind
//                       needs, variables owned by the kernel, accesses matching their tensor
//   infer-types         types: every operand's shape agrees with its result's (broadcasting
//                       explicit), conditions and masks are bool, declarations match values
//   assign-layouts      layouts: every register tile has one, of its shape and thread count
//   plan-shared-memory  the shared-memory plan: every shared tile placed inside the block's
//                       bytes and the limit, and no two tiles live at once share bytes
//   expand-pipelines    no pipelined loop left; every ring buffer has its read slot
//   insert-barriers     no shared-memory hazard without a barrier between (the pass's own
//                       analysis, run again inserting nothing)
#pragma once

#include "compiler/ir.h"

#include <string>

namespace tilejit {

/// Checks what the passes up to and including `after_pass` established.
void verify_ir(ir::Kernel& k, const std::string& after_pass);

} // namespace tilejit
