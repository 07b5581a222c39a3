// Prints the Tile IR (`tilejit inspect --stage ir --after <pass>`), one statement per line with
// its types, layouts and shared-memory placement, and the .tile line it came from.
#pragma once

#include "compiler/ir.h"

#include <string>

namespace tilejit::ir {

std::string print_expr(const Expr& e);

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

} // namespace tilejit::ir
