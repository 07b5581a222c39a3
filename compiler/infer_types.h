// Pass infer-types: gives every expression and variable its type (dtype, static shape,
// space), applies broadcasting and dtype promotion (inserting explicit casts so every binary
// operation sees one dtype), turns tile-valued tensor subscripts into gathers, and reports
// every type or shape error with its DSL line and column.
#pragma once

#include "compiler/ir.h"

namespace tilejit {

/// Throws dsl::CompileError listing every problem found.
void infer_types(ir::Kernel& k);

} // namespace tilejit
