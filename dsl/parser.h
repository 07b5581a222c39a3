// Parser: tokens to AST (grammar in dsl/README.md). Reports every error it can find and
// recovers at statement boundaries; never crashes on any input.
#pragma once

#include "dsl/ast.h"
#include "dsl/diagnostics.h"

#include <memory>
#include <string>

namespace tilejit::dsl {

/// Parses a whole .tile file. Throws CompileError with every diagnostic if there were errors.
std::unique_ptr<Module> parse_module(const std::shared_ptr<const SourceFile>& file);

/// Convenience: parse text as if it came from `path`.
std::unique_ptr<Module> parse_text(const std::string& path, const std::string& text);

} // namespace tilejit::dsl
