#include "compiler/kernel_library.h"

#include "compiler/autodiff/reverse_mode.h"

#include "dsl/checker.h"
#include "dsl/lexer.h"
#include "dsl/parser.h"
#include "kernels_src/embedded_files.h"
#include "support/error.h"
#include "support/sha256.h"
#include "support/text.h"

#include <algorithm>
#include <filesystem>

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
  // Checked before reading: a directory, a device (/dev/zero never ends) or a huge file is a
  // mistake, and reading it would take minutes and gigabytes before the lexer could say so.
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st))
    throw Error(str("cannot read '", path, "': ", ec ? ec.message() : "no such file"));
  if (fs::is_directory(st)) throw Error(str("'", path, "' is a directory, not a .tile file"));
  if (!fs::is_regular_file(st))
    throw Error(
        str("'", path, "' is not a regular file (a device, pipe or socket); give a .tile file"));
  const auto size = fs::file_size(path, ec);
  if (!ec && size > dsl::kMaxTileFileBytes)
    throw Error(str("'", path, "' is ", size, " bytes; a .tile file may have at most ",
                    dsl::kMaxTileFileBytes, " bytes (1 MiB)"));
  return load_tile_text(path, read_file(path));
}

LoadedModule load_embedded_tile(const std::string& relative_path) {
  auto text = find_embedded_file(relative_path);
  if (!text) throw Error(str("no embedded kernel source '", relative_path, "'"));
  return load_tile_text("kernels_src/" + relative_path, std::string(*text));
}

LoadedModule load_gradient_module(const std::string& source, const std::string& name,
                                  const std::vector<std::string>& wrt) {
  LoadedModule forward = starts_with(source, "embedded:") ? load_embedded_tile(source.substr(9))
                                                          : load_tile_file(source);
  // The derived kernel's own name ("<name>_grad", or the segment form's "<name>_grad_fwd",
  // "_grad_lin", "_grad_seg" and "_grad_ck") finds its forward kernel too.
  std::string forward_name = name;
  autodiff::GradientOptions o;
  const bool in_file = std::any_of(forward.module->kernels.begin(), forward.module->kernels.end(),
                                   [&](const auto& k) { return k->name == name; });
  const std::pair<const char*, autodiff::GradientForm> suffixes[] = {
      {"_grad", autodiff::GradientForm::whole},
      {"_grad_fwd", autodiff::GradientForm::segments_forward},
      {"_grad_lin", autodiff::GradientForm::segments_linearize},
      {"_grad_seg", autodiff::GradientForm::segments_finish},
      {"_grad_ck", autodiff::GradientForm::segments_checkpointed}};
  for (const auto& [suffix, form] : suffixes)
    if (!in_file && ends_with(name, suffix)) {
      forward_name = name.substr(0, name.size() - std::string(suffix).size());
      o.form = form;
    }
  const dsl::Kernel& k = forward.kernel(forward_name);
  o.wrt = wrt;
  autodiff::GradientKernel g = autodiff::derive_gradient(k, o);
  return load_tile_text(str("grad:", k.loc.path(), "#", k.name), g.source);
}

std::optional<std::string> gradient_source(const std::string& source) {
  if (!starts_with(source, "grad:")) return std::nullopt;
  return source.substr(5);
}

std::vector<std::string> embedded_tile_paths() {
  std::vector<std::string> out;
  for (const auto& f : embedded_files())
    if (ends_with(f.path, ".tile")) out.emplace_back(f.path);
  return out;
}

} // namespace tilejit
