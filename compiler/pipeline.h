// The compiler pipeline: one specialised kernel from AST to Tile IR to CUDA C++.
// Each pass lives in its own file; this is the only place that orders them.
#pragma once

#include "compiler/ir.h"
#include "compiler/specialise.h"
#include "compiler/target.h"
#include "dsl/ast.h"

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tilejit {

struct CompileOptions {
  std::string arch = default_arch();    ///< target GPU architecture (compiler/target.h)
  int smem_limit = 227 * 1024;          ///< shared memory a block may use on the target (SMEM)
  std::set<std::string> vector_aligned; ///< tensors proven 16-byte friendly at launch
  /// Every element offset of every tensor fits in 31 bits (proven at launch): index math in
  /// 32-bit integers, which halves the address arithmetic of gathers.
  bool index32 = false;
  /// Debug mode (TILEJIT_DEBUG=1, RuntimeOptions::debug_bounds): every point and gather
  /// subscript is checked at run time and the first one out of range is reported by the
  /// launch as a tilejit::Error naming the tensor and the DSL line. Part of the variant's key.
  bool debug_bounds = false;
};

/// Called after each pass with its name and the IR it produced (inspect --after, --verbose).
using PassObserver = std::function<void(const std::string& pass, const ir::Kernel& kernel)>;

/// Pass names in order, for `inspect --after <pass>`.
const std::vector<std::string>& pass_names();

/// Runs the passes up to and including `stop_after` (every pass when empty).
std::unique_ptr<ir::Kernel> lower_to_ir(const dsl::Kernel& k, const Bindings& bindings,
                                        const CompileOptions& options,
                                        const std::string& stop_after = "",
                                        const PassObserver& observer = nullptr);

} // namespace tilejit
