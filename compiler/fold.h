// Constant folding of scalar expressions whose operands are all constants.
#pragma once

#include "compiler/ir.h"

namespace tilejit {

/// Folds `e` if its operands are constants (arithmetic, comparisons, logic, select, min/max,
/// math functions, casts); returns it unchanged otherwise. Integer division truncates (C).
ir::ExprPtr fold(ir::ExprPtr e);

} // namespace tilejit
