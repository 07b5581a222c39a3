#include "kernel_runner.h"

#include <filesystem>
#include <optional>

namespace tilejit::test {

const KernelRunner& cpu() {
  static const KernelRunner runner = interpreter_runner();
  return runner;
}

KernelRunner interpreter_runner(const std::string& after, bool as_launched) {
  return [after, as_launched](const std::string& source, const Bindings& config,
                              const std::vector<TestArg>& args) {
    auto [path, name] = split_source(source);
    // grad:<path>#<kernel>: the kernel reverse mode derives from <kernel> (its only kernel).
    std::optional<std::string> forward = gradient_source(path);
    LoadedModule module = forward ? load_gradient_module(*forward, name) : load_source(path);
    if (forward) name = "";
    std::vector<ref::HostArg> host;
    for (const TestArg& a : args) {
      if (a.buffer)
        host.push_back(a.buffer->arg());
      else
        host.push_back(ref::HostArg::of_scalar(
            dtype_is_float(a.scalar_dtype) ? HostValue::of_float(a.scalar)
                                           : HostValue::of_int(static_cast<int64_t>(a.scalar))));
    }
    CompileOptions options;
    const dsl::Kernel& kernel = module.kernel(name);
    if (as_launched) {
      options.index32 = true;
      for (const auto& p : kernel.params) {
        options.vector_aligned.insert(p.name);
        if (!p.is_scratch) options.tma_params.insert(p.name);
      }
    }
    ref::run_tile(kernel, config, host, options, after);
  };
}

std::pair<std::string, std::string> split_source(const std::string& source) {
  size_t hash = source.rfind('#');
  if (hash == std::string::npos) return {source, ""};
  return {source.substr(0, hash), source.substr(hash + 1)};
}

LoadedModule load_source(const std::string& source) {
  if (source.rfind("embedded:", 0) == 0) return load_embedded_tile(source.substr(9));
  return load_tile_file(source);
}

std::string test_data_path(const std::string& relative) {
  std::string built = std::string(TILEJIT_SOURCE_DIR) + "/" + relative;
  return std::filesystem::exists(built) ? built : relative;
}

std::string config_text(const Bindings& b) {
  std::string s;
  for (const auto& [k, v] : b) s += k + "=" + v + " ";
  return s;
}

} // namespace tilejit::test
