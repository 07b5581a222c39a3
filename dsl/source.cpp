#include "dsl/source.h"

namespace tilejit::dsl {

std::string_view SourceFile::line_text(int line) const {
  if (line < 1) return {};
  size_t start = 0;
  if (!line_starts_.empty()) {
    if (static_cast<size_t>(line) > line_starts_.size()) return {};
    start = line_starts_[static_cast<size_t>(line) - 1];
  } else { // a SourceFile made by hand: scan
    for (int l = 1; l < line; ++l) {
      size_t nl = text.find('\n', start);
      if (nl == std::string::npos) return {};
      start = nl + 1;
    }
  }
  size_t end = text.find('\n', start);
  if (end == std::string::npos) end = text.size();
  return std::string_view(text).substr(start, end - start);
}

std::shared_ptr<const SourceFile> make_source(std::string path, std::string text) {
  auto f = std::make_shared<SourceFile>();
  f->path = std::move(path);
  f->text = std::move(text);
  f->line_starts_.push_back(0);
  for (size_t i = 0; i < f->text.size(); ++i)
    if (f->text[i] == '\n') f->line_starts_.push_back(i + 1);
  return f;
}

} // namespace tilejit::dsl
