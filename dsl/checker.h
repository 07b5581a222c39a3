// Semantic checks that need no types: names resolve, clauses are well formed, calls match
// their built-in's arity and keywords. Types and shapes are checked by compiler/infer_types.
#pragma once

#include "dsl/ast.h"
#include "dsl/diagnostics.h"

namespace tilejit::dsl {

/// Checks every kernel in `m`; throws CompileError listing every problem found (warnings
/// included). Without errors, returns the warnings for the caller to show.
std::vector<Diagnostic> check_module(const Module& m);

} // namespace tilejit::dsl
