// Source text and locations: every token, AST node and IR node carries a SourceLoc.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tilejit::dsl {

/// A .tile file's text, shared by everything that points into it.
struct SourceFile {
  std::string path; ///< as shown in diagnostics and #line directives
  std::string text;
  /// Line `line` (1-based) without its newline; empty when out of range. Constant time: the
  /// line starts are indexed once (a file with thousands of diagnostics must not re-scan).
  std::string_view line_text(int line) const;

private:
  friend std::shared_ptr<const SourceFile> make_source(std::string path, std::string text);
  std::vector<size_t> line_starts_; ///< offset of each line's first character
};

/// A position in a SourceFile (1-based line and column; 0 means unknown).
struct SourceLoc {
  std::shared_ptr<const SourceFile> file;
  int line = 0;
  int col = 0;
  bool known() const { return file != nullptr && line > 0; }
  std::string path() const { return file ? file->path : std::string("<unknown>"); }
};

std::shared_ptr<const SourceFile> make_source(std::string path, std::string text);

} // namespace tilejit::dsl
