// Finds .tile sources: a file path, or a kernel embedded in the library (kernels_src/).
#pragma once

#include "dsl/ast.h"
#include "dsl/diagnostics.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tilejit {

/// A parsed and checked .tile module with its text (for hashing).
struct LoadedModule {
  std::unique_ptr<dsl::Module> module;
  std::string source_hash;               ///< sha256 of the text
  std::vector<dsl::Diagnostic> warnings; ///< from the checker (errors throw instead)
  const dsl::Kernel& kernel(const std::string& name = "") const;
};

/// Parses and checks a .tile file from disk. Errors are DSL diagnostics.
LoadedModule load_tile_file(const std::string& path);
/// Parses and checks .tile text; `path` is what diagnostics and #line directives show.
LoadedModule load_tile_text(const std::string& path, const std::string& text);
/// An embedded kernel source by its path under kernels_src/ ("examples/gemm.tile").
LoadedModule load_embedded_tile(const std::string& relative_path);
/// The gradient kernel reverse mode derives (compiler/autodiff/reverse_mode.h) from kernel
/// `name` of `source` (a .tile path, or "embedded:<path>"), parsed and checked like any module;
/// diagnostics name it "grad:<forward path>#<name>". `wrt`: the inputs to differentiate (empty:
/// every floating-point tensor the kernel only reads).
LoadedModule load_gradient_module(const std::string& source, const std::string& name,
                                  const std::vector<std::string>& wrt = {});
/// "grad:<source>" names the gradient of a kernel of <source> wherever a kernel source is taken
/// (Runtime::load, tilejit inspect/run/tune/bench); this strips the prefix, or returns nullopt.
std::optional<std::string> gradient_source(const std::string& source);

/// Every embedded .tile path.
std::vector<std::string> embedded_tile_paths();

} // namespace tilejit
