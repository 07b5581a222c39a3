#include "dsl/diagnostics.h"

namespace tilejit::dsl {
namespace {

std::string render_all(const std::vector<Diagnostic>& ds) {
  std::string out;
  for (size_t i = 0; i < ds.size(); ++i) {
    if (i) out += "\n";
    out += ds[i].render();
  }
  return out;
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
      out += "\n  ";
      out += line;
      out += "\n  ";
      // Keep tabs so the caret lines up under the same column in a terminal.
      for (int i = 1; i < loc.col && i <= static_cast<int>(line.size()); ++i)
        out += line[i - 1] == '\t' ? '\t' : ' ';
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
