// The HIP toolchain: HIPRTC compiles the emitted HIP C++ with the embedded prelude as in-memory
// headers into a code object; the HIP runtime's module API loads and launches it (on a machine
// with an AMD GPU; elsewhere load() says "no AMD GPU").
#include "runtime/amdgpu_code_object.h"
#include "runtime/hip_runtime.h"
#include "runtime/hiprtc.h"
#include "runtime/toolchain.h"
#include "runtime/toolchains.h"

#include "kernels_src/embedded_files.h"
#include "support/text.h"

#include <regex>

namespace tilejit {
namespace {

class HipFunction final : public LoadedFunction {
public:
  explicit HipFunction(HipRuntime::Function f) : f_(f) {}
  ~HipFunction() override { HipRuntime::get().unload(f_); }
  void launch(const std::array<int64_t, 3>& grid, int threads, int64_t smem_bytes, void* stream,
              void** args, const std::string& name) const override {
    HipRuntime::get().launch(f_, grid, threads, smem_bytes, stream, args, name);
  }

private:
  HipRuntime::Function f_;
};

class HipToolchain final : public Toolchain {
public:
  const std::string& language() const override {
    static const std::string s = "hip";
    return s;
  }
  const std::string& name() const override {
    static const std::string s = "HIPRTC";
    return s;
  }
  bool available() const override { return Hiprtc::available(); }
  std::string unavailable_reason() const override { return Hiprtc::unavailable_reason(); }
  std::string version() const override { return Hiprtc::get().version(); }

  const std::vector<std::pair<std::string, std::string>>& headers() const override {
    return prelude_headers();
  }
  const std::vector<std::string>& options() const override {
    static const std::vector<std::string> options = {"-std=c++17"};
    return options;
  }

  ToolchainOutput compile(const ToolchainRequest& request) const override {
    HiprtcRequest req;
    req.source = request.source;
    req.program_name = request.program_name + ".hip";
    req.headers = headers();
    req.arch = request.arch;
    req.options = options();
    HiprtcOutput out = Hiprtc::get().compile(req);
    ToolchainOutput o;
    o.ok = out.ok;
    o.log = std::move(out.log);
    o.binary = std::move(out.code_object);
    if (o.ok) o.resources = resources(o.binary, request.entry);
    return o;
  }

  std::vector<dsl::Diagnostic> diagnostics(const std::string& log,
                                           const dsl::SourceFile* file) const override {
    std::vector<dsl::Diagnostic> diags;
    if (!file) return diags;
    // Clang's "<file>:<line>:<col>: error: <message>" for code under a #line directive.
    static const std::regex line_re(R"(^(.*):(\d+):(\d+): (error|warning): (.*)$)");
    auto shared_file =
        std::shared_ptr<const dsl::SourceFile>(std::shared_ptr<const dsl::SourceFile>{}, file);
    for (const std::string& raw : split(log, '\n')) {
      std::smatch m;
      if (!std::regex_match(raw, m, line_re) || m[1].str() != file->path) continue;
      dsl::Diagnostic d;
      d.severity = m[4].str() == "error" ? dsl::Severity::Error : dsl::Severity::Warning;
      d.loc = dsl::SourceLoc{shared_file, std::stoi(m[2].str()), 1};
      d.message = "HIP compile: " + m[5].str();
      diags.push_back(std::move(d));
    }
    return diags;
  }

  std::optional<ResourceUsage> resources(const std::string& binary,
                                         const std::string& entry) const override {
    std::optional<AmdgpuKernelInfo> info = read_amdgpu_kernel(binary, entry);
    if (!info) return std::nullopt;
    return info->usage;
  }

  std::unique_ptr<LoadedFunction> load(const std::string& binary, const std::string& entry,
                                       int64_t /*smem_bytes: no opt-in on AMD*/,
                                       int device) const override {
    return std::make_unique<HipFunction>(HipRuntime::get().load(binary, entry, device));
  }
};

} // namespace

const Toolchain& hip_toolchain() {
  static const HipToolchain hip;
  return hip;
}

} // namespace tilejit
