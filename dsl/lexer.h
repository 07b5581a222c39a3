// Lexer: .tile text to tokens. Never throws on bad input past the first error it reports.
#pragma once

#include "dsl/diagnostics.h"
#include "dsl/token.h"

#include <memory>
#include <vector>

namespace tilejit::dsl {

/// Limits on a .tile program (dsl/README.md, "Limits").
constexpr size_t kMaxTileFileBytes = 1 << 20; ///< checked before a file is read
constexpr size_t kMaxIdentifierLength = 255;  ///< NVRTC crashes on very long names
constexpr int kMaxBadCharacters = 20;         ///< then the input is taken for binary data

/// Splits `file` into tokens, ending with one End token. Bad characters and unterminated
/// comments are reported to `sink` (the lexer skips them and carries on); a NUL byte or more
/// than kMaxBadCharacters bad characters end lexing with one error (binary data, not a program).
std::vector<Token> lex(const std::shared_ptr<const SourceFile>& file, DiagnosticSink& sink);

} // namespace tilejit::dsl
