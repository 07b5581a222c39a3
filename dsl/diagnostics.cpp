#include "dsl/diagnostics.h"

#include <algorithm>

namespace tilejit::dsl {
namespace {

std::string render_all(const std::vector<Diagnostic>& ds) {
  std::string out;
  const size_t shown = std::min(ds.size(), kMaxDiagnosticsShown);
  for (size_t i = 0; i < shown; ++i) {
    if (i) out += "\n";
    out += ds[i].render();
  }
  if (ds.size() > shown) {
    size_t errors = 0;
    for (size_t i = shown; i < ds.size(); ++i) errors += ds[i].severity == Severity::Error;
    out += str("\n", ds.size() - shown, " more diagnostic(s) not shown (", errors, " error(s))");
  }
  return out;
}

/// One character of a source line as shown: control characters (a NUL, an escape) would cut
/// or garble the terminal's output, so they are shown as '?'; tabs are kept.
char shown_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return (u < 0x20 && c != '\t') || u == 0x7f ? '?' : c;
}

const char* severity_name(Severity s) {
  switch (s) {
  case Severity::Error:
    return "error";
  case Severity::Warning:
    return "warning";
  case Severity::Note:
    return "note";
  }
  return "error";
}

} // namespace

std::string Diagnostic::render() const {
  std::string out;
  if (loc.known())
    out = str(loc.path(), ":", loc.line, ":", loc.col, ": ");
  else if (loc.file)
    out = loc.path() + ": ";
  out += str(severity_name(severity), ": ", message);
  if (loc.known()) {
    std::string_view line = loc.file->line_text(loc.line);
    if (!line.empty()) {
      // A long line is shown as a window around the column, so that thousands of
      // diagnostics on one long line stay small.
      const size_t col = loc.col > 0 ? static_cast<size_t>(loc.col) - 1 : 0;
      size_t from = 0, to = line.size();
      if (line.size() > kMaxSourceLineShown) {
        from = col > kMaxSourceLineShown / 2 ? col - kMaxSourceLineShown / 2 : 0;
        to = std::min(line.size(), from + kMaxSourceLineShown);
      }
      const std::string before = from > 0 ? "..." : "";
      out += "\n  " + before;
      for (size_t i = from; i < to; ++i) out += shown_char(line[i]);
      if (to < line.size()) out += "...";
      out += "\n  " + std::string(before.size(), ' ');
      // Keep tabs so the caret lines up under the same column in a terminal.
      for (size_t i = from; i < col && i < to; ++i) out += line[i] == '\t' ? '\t' : ' ';
      out += '^';
    }
  }
  return out;
}

CompileError::CompileError(std::vector<Diagnostic> diagnostics)
    : Error(render_all(diagnostics)), diagnostics_(std::move(diagnostics)) {}

void DiagnosticSink::error(const SourceLoc& loc, std::string message) {
  diagnostics_.push_back({Severity::Error, loc, std::move(message)});
  ++errors_;
}

void DiagnosticSink::warning(const SourceLoc& loc, std::string message) {
  diagnostics_.push_back({Severity::Warning, loc, std::move(message)});
}

void DiagnosticSink::note(const SourceLoc& loc, std::string message) {
  diagnostics_.push_back({Severity::Note, loc, std::move(message)});
}

void DiagnosticSink::check() const {
  if (errors_ > 0) throw CompileError(diagnostics_);
}

void fail_at(const SourceLoc& loc, const std::string& message) {
  throw CompileError({Diagnostic{Severity::Error, loc, message}});
}

} // namespace tilejit::dsl
