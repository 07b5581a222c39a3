// Prints the AST (`tilejit inspect --stage ast`) and single expressions (for diagnostics).
#pragma once

#include "dsl/ast.h"

#include <string>

namespace tilejit::dsl {

/// An expression as DSL text, binary operations parenthesised: "(m0 + BM)".
std::string expr_to_string(const Expr& e);
std::string type_to_string(const TypeExpr& t);
/// The whole module as an indented tree, one node per line with its line:col.
std::string print_ast(const Module& m);

} // namespace tilejit::dsl
