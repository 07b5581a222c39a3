// Files compiled into the library (kernels_src/: .tile kernels and the device prelude).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace tilejit {

struct EmbeddedFile {
  std::string_view path; ///< relative to kernels_src/, e.g. "prelude/tilejit_prelude.cuh"
  std::string_view text;
};

/// Every embedded file, in build order. Defined in a generated file
/// (cmake/embed_files_script.cmake).
const std::vector<EmbeddedFile>& embedded_files();

/// The embedded file at `path`, if any.
std::optional<std::string_view> find_embedded_file(std::string_view path);

} // namespace tilejit
