#include "kernels_src/embedded_files.h"

namespace tilejit {

std::optional<std::string_view> find_embedded_file(std::string_view path) {
  for (const EmbeddedFile& f : embedded_files())
    if (f.path == path) return f.text;
  return std::nullopt;
}

} // namespace tilejit
