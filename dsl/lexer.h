// Lexer: .tile text to tokens. Never throws on bad input past the first error it reports.
#pragma once

#include "dsl/diagnostics.h"
#include "dsl/token.h"

#include <memory>
#include <vector>

namespace tilejit::dsl {

/// Splits `file` into tokens, ending with one End token. Bad characters and unterminated
/// comments are reported to `sink` (the lexer skips them and carries on).
std::vector<Token> lex(const std::shared_ptr<const SourceFile>& file, DiagnosticSink& sink);

} // namespace tilejit::dsl
