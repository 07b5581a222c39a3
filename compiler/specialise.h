// Pass specialise: lowers one AST kernel to Tile IR under concrete values for its generics
// and tunables. Names resolve to IR nodes, generics and tunables become constants, constant
// expressions fold, `if` on a constant keeps only the branch taken, slices get static extents.
#pragma once

#include "compiler/ir.h"
#include "compiler/target.h"
#include "dsl/ast.h"
#include "support/error.h"

#include <map>
#include <memory>
#include <set>
#include <string>

namespace tilejit {

/// Values of generics and tunables by name; integers as decimal text, dtypes by name.
using Bindings = std::map<std::string, std::string>;

/// A `where` constraint is false for these bindings (the tuner prunes such configurations).
class ConstraintError : public Error {
public:
  explicit ConstraintError(const std::string& m) : Error(m) {}
};

struct SpecialiseOptions {
  std::string arch = default_arch();    ///< the target (compiler/target.h)
  int smem_limit = 48 * 1024;           ///< value of SMEM in `where` (bytes per block)
  std::set<std::string> vector_aligned; ///< tensors the launcher proved 16-byte friendly
  std::set<std::string> tma_params;     ///< tensors the launcher can give TMA (CompileOptions)
  bool index32 = false;                 ///< the launcher proved 32-bit element offsets suffice
  bool debug_bounds = false;            ///< CompileOptions::debug_bounds
};

/// Fills in every tunable missing from `given` with its default (the `= v` value, else the
/// first choice) and checks that every value is one of its choices. Generics must be given.
Bindings complete_bindings(const dsl::Kernel& k, const Bindings& given);

/// Lowers `k` under complete `bindings`. Throws ConstraintError when a `where` fails and
/// dsl::CompileError for errors in the program.
std::unique_ptr<ir::Kernel> specialise(const dsl::Kernel& k, const Bindings& bindings,
                                       const SpecialiseOptions& options);

} // namespace tilejit
