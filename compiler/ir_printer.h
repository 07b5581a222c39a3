// Prints the Tile IR (`tilejit inspect --stage ir --after <pass>`), one statement per line with
// its types, layouts and shared-memory placement, and the .tile line it came from.
#pragma once

#include "compiler/ir.h"

#include <string>

namespace tilejit::ir {

/// An expression. Inside print_kernel (and print_stmt_line) its type and layout are printed, as
/// `(e : frag f32[64] #blocked<...>)`, where they differ from what implied_type/implied_layout
/// say, and a constant that is not a literal (it keeps its dtype instead of adopting its
/// partner's) is marked `typed`; alone (diagnostics, the generated code's comments) it is bare.
std::string print_expr(const Expr& e);

/// What the printer leaves unsaid: the type and layout an expression has unless its printed
/// form says otherwise, computed from its operands (a comparison is bool, a dot f32, an
/// elementwise operation has its operands' type and layout...). The IR reader applies the same
/// rule, so that print -> read -> print gives the same text.
Type implied_type(const Expr& e);
const Layout* implied_layout(const Expr& e);
/// A constant's implied type beside `partner`, the other operand of its elementwise operation
/// (null if none): the partner's dtype where the kinds agree (2.0 beside an f16 tile is f16).
Type implied_const_type(const Expr& c, const Expr* partner);
/// The implied layout of a declaration's or assignment's value: the variable's, where it fits.
const Layout* implied_value_layout(const Expr& value, const Var& var);

/// `text` in double quotes, with `"`, `\` and newlines escaped.
std::string quote(const std::string& text);

/// While alive, print_expr names parameters after `k`'s (instead of param0, param1...).
class PrintContext {
public:
  explicit PrintContext(const Kernel& k);
  ~PrintContext();

private:
  const Kernel* saved_;
};
std::string print_access(const Kernel& k, const Access& a);
std::string print_kernel(const Kernel& k);
/// One statement's own line (a loop or `if` without its body), as print_kernel shows it.
std::string print_stmt_line(const Kernel& k, const Stmt& s);

} // namespace tilejit::ir
