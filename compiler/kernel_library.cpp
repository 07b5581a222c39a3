#include "compiler/kernel_library.h"

#include "dsl/checker.h"
#include "dsl/parser.h"
#include "kernels_src/embedded_files.h"
#include "support/error.h"
#include "support/sha256.h"
#include "support/text.h"

namespace tilejit {

const dsl::Kernel& LoadedModule::kernel(const std::string& name) const {
  if (name.empty()) {
    if (module->kernels.size() != 1) {
      std::vector<std::string> names;
      for (const auto& k : module->kernels) names.push_back(k->name);
      throw Error(str(module->file->path, " holds ", names.size(), " kernels (", join(names, ", "),
                      "); name one with --kernel"));
    }
    return *module->kernels.front();
  }
  for (const auto& k : module->kernels)
    if (k->name == name) return *k;
  std::vector<std::string> names;
  for (const auto& k : module->kernels) names.push_back(k->name);
  throw Error(
      str(module->file->path, " has no kernel '", name, "' (it has: ", join(names, ", "), ")"));
}

LoadedModule load_tile_text(const std::string& path, const std::string& text) {
  LoadedModule m;
  m.module = dsl::parse_text(path, text);
  m.warnings = dsl::check_module(*m.module);
  m.source_hash = sha256_hex(text);
  return m;
}

LoadedModule load_tile_file(const std::string& path) {
  return load_tile_text(path, read_file(path));
}

LoadedModule load_embedded_tile(const std::string& relative_path) {
  auto text = find_embedded_file(relative_path);
  if (!text) throw Error(str("no embedded kernel source '", relative_path, "'"));
  return load_tile_text("kernels_src/" + relative_path, std::string(*text));
}

std::vector<std::string> embedded_tile_paths() {
  std::vector<std::string> out;
  for (const auto& f : embedded_files())
    if (ends_with(f.path, ".tile")) out.emplace_back(f.path);
  return out;
}

} // namespace tilejit
