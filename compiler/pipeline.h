// The compiler pipeline: one specialised kernel from AST to Tile IR to CUDA C++.
// Each pass lives in its own file; the pass table in pipeline.cpp is the only place that orders
// them, and says why each runs where it does (`tilejit inspect --list-passes` prints it).
#pragma once

#include "compiler/ir.h"
#include "compiler/specialise.h"
#include "compiler/target.h"
#include "dsl/ast.h"
#include "dsl/diagnostics.h"

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
  /// Tensors the launcher can describe to the tensor memory accelerator (sm_90: a pipelined
  /// copy into a 128-byte-swizzled tile may fetch them with TMA).
  std::set<std::string> tma_params;
  /// Every element offset of every tensor fits in 31 bits (proven at launch): index math in
  /// 32-bit integers, which halves the address arithmetic of gathers.
  bool index32 = false;
  /// Debug mode (TILEJIT_DEBUG=1, RuntimeOptions::debug_bounds): every point and gather
  /// subscript is checked at run time and the first one out of range is reported by the
  /// launch as a tilejit::Error naming the tensor and the DSL line. Part of the variant's key.
  bool debug_bounds = false;
};

/// What the passes work on: the AST and options (read by specialise), the IR (made by
/// specialise, rewritten by every later pass) and the warnings passes report.
struct PassState {
  const dsl::Kernel* ast = nullptr;
  const Bindings* bindings = nullptr;
  const CompileOptions* options = nullptr;
  std::unique_ptr<ir::Kernel> kernel;
  std::vector<dsl::Diagnostic> warnings;
};

/// One compiler pass, registered once in the pass table.
struct Pass {
  const char* name;              ///< as `inspect --after` and the IR verifier name it
  void (*run)(PassState& state); ///< the entry function (one per pass file)
  const char* why;               ///< why it runs where it does
};

/// Every pass, in the order lower_to_ir runs them.
const std::vector<Pass>& passes();

/// Pass names in order, for `inspect --after <pass>`.
const std::vector<std::string>& pass_names();

/// The index of `name` in passes(); throws tilejit::Error listing the passes for an unknown one.
size_t pass_index(const std::string& name);

/// Called after each pass with its name and the IR it produced (inspect --after, --verbose).
using PassObserver = std::function<void(const std::string& pass, const ir::Kernel& kernel)>;

/// Runs the passes up to and including `stop_after` (every pass when empty). Warnings the
/// passes report (a pipelined loop that runs serially...) are appended to `warnings` when it is
/// given. In builds with TILEJIT_VERIFY_IR (or with the environment variable set to 1) the IR is
/// verified after every pass (compiler/verify_ir.h).
std::unique_ptr<ir::Kernel> lower_to_ir(const dsl::Kernel& k, const Bindings& bindings,
                                        const CompileOptions& options,
                                        const std::string& stop_after = "",
                                        const PassObserver& observer = nullptr,
                                        std::vector<dsl::Diagnostic>* warnings = nullptr);

/// Runs the passes from `first` to `last` (inclusive) on IR made earlier (read back by
/// compiler/ir_reader.h, say): `first` cannot be specialise, which starts from the AST.
std::unique_ptr<ir::Kernel> run_passes(std::unique_ptr<ir::Kernel> kernel, const std::string& first,
                                       const std::string& last,
                                       const PassObserver& observer = nullptr,
                                       std::vector<dsl::Diagnostic>* warnings = nullptr);

/// Whether lower_to_ir verifies the IR after each pass: TILEJIT_VERIFY_IR=0/1 in the
/// environment, else whether the build defines TILEJIT_VERIFY_IR.
bool verify_ir_enabled();

} // namespace tilejit
