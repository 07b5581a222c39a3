#include "kernel_runner.h"

namespace tilejit::test {

KernelRunner interpreter_runner() {
  return [](const std::string& source, const Bindings& config, const std::vector<TestArg>& args) {
    LoadedModule module = load_source(source);
    std::vector<ref::HostArg> host;
    for (const TestArg& a : args) {
      if (a.buffer)
        host.push_back(a.buffer->arg());
      else
        host.push_back(ref::HostArg::of_scalar(
            dtype_is_float(a.scalar_dtype) ? HostValue::of_float(a.scalar)
                                           : HostValue::of_int(static_cast<int64_t>(a.scalar))));
    }
    ref::run_tile(module.kernel(), config, host);
  };
}

LoadedModule load_source(const std::string& source) {
  if (source.rfind("embedded:", 0) == 0) return load_embedded_tile(source.substr(9));
  return load_tile_file(source);
}

std::string config_text(const Bindings& b) {
  std::string s;
  for (const auto& [k, v] : b) s += k + "=" + v + " ";
  return s;
}

} // namespace tilejit::test
