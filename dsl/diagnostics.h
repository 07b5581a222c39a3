// User-facing diagnostics: `file.tile:LINE:COL: error: message`, the source line, a caret.
#pragma once

#include "dsl/source.h"
#include "support/error.h"

#include <string>
#include <vector>

namespace tilejit::dsl {

enum class Severity { Error, Warning, Note };

/// A CompileError shows its first diagnostics and counts the rest ("N more ... not shown").
constexpr size_t kMaxDiagnosticsShown = 50;
/// A source line longer than this is shown as a window of this many characters around the column.
constexpr size_t kMaxSourceLineShown = 1000;

struct Diagnostic {
  Severity severity = Severity::Error;
  SourceLoc loc;
  std::string message;
  /// Renders the diagnostic with its source line and a caret under the column.
  std::string render() const;
};

/// Thrown when a stage finds errors in the user's program. what() is every diagnostic rendered.
class CompileError : public Error {
public:
  explicit CompileError(std::vector<Diagnostic> diagnostics);
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

private:
  std::vector<Diagnostic> diagnostics_;
};

/// Collects diagnostics of a stage; `check()` throws CompileError if any error was reported.
class DiagnosticSink {
public:
  void error(const SourceLoc& loc, std::string message);
  void warning(const SourceLoc& loc, std::string message);
  void note(const SourceLoc& loc, std::string message);
  bool has_errors() const { return errors_ > 0; }
  const std::vector<Diagnostic>& all() const { return diagnostics_; }
  /// Throws CompileError when errors were reported.
  void check() const;

private:
  std::vector<Diagnostic> diagnostics_;
  int errors_ = 0;
};

/// Throws a CompileError holding one error at `loc`.
[[noreturn]] void fail_at(const SourceLoc& loc, const std::string& message);

} // namespace tilejit::dsl
