// The CUDA toolchain: NVRTC compiles the emitted CUDA C++ with the embedded prelude as
// in-memory headers; the driver API loads the cubin and launches it.
#include "runtime/cuda_driver.h"
#include "runtime/cuda_module.h"
#include "runtime/nvrtc.h"
#include "runtime/toolchain.h"
#include "runtime/toolchains.h"

#include "kernels_src/embedded_files.h"
#include "support/error.h"
#include "support/text.h"

#include <regex>

namespace tilejit {
namespace {

class CudaFunction final : public LoadedFunction {
public:
  CudaFunction(CudaModule module, cu::CUfunction f) : module_(std::move(module)), function_(f) {}
  void launch(const std::array<int64_t, 3>& grid, int threads, int64_t smem_bytes, void* stream,
              void** args, const std::string& name) const override {
    CudaDriver& driver = CudaDriver::get();
    cu::CUresult r = driver.cuLaunchKernel(
        function_, static_cast<unsigned>(grid[0]), static_cast<unsigned>(grid[1]),
        static_cast<unsigned>(grid[2]), static_cast<unsigned>(threads), 1, 1,
        static_cast<unsigned>(smem_bytes), static_cast<cu::CUstream>(stream), args, nullptr);
    if (r != 0) driver.check(r, str("cuLaunchKernel(", name, ")").c_str());
  }

private:
  CudaModule module_;
  cu::CUfunction function_;
};

class CudaToolchain final : public Toolchain {
public:
  const std::string& language() const override {
    static const std::string s = "cuda";
    return s;
  }
  const std::string& name() const override {
    static const std::string s = "NVRTC";
    return s;
  }
  bool available() const override { return Nvrtc::available(); }
  std::string unavailable_reason() const override { return Nvrtc::unavailable_reason(); }
  std::string version() const override { return Nvrtc::get().version(); }

  const std::vector<std::pair<std::string, std::string>>& headers() const override {
    return prelude_headers();
  }

  const std::vector<std::string>& options() const override {
    // -lineinfo: profilers and compute-sanitizer map SASS back to .tile lines via #line.
    static const std::vector<std::string> options = {"-std=c++17", "-lineinfo",
                                                     "--device-as-default-execution-space"};
    return options;
  }

  ToolchainOutput compile(const ToolchainRequest& request) const override {
    NvrtcRequest req;
    req.source = request.source;
    req.program_name = request.program_name + ".cu";
    req.headers = headers();
    req.arch = request.arch;
    req.options = options();
    req.want_cubin = true;
    req.want_ptx = request.want_assembly;
    req.resource_report = true;
    NvrtcOutput out = Nvrtc::get().compile(req);
    ToolchainOutput o;
    o.ok = out.ok;
    o.log = std::move(out.log);
    o.binary = std::move(out.cubin);
    o.assembly = std::move(out.ptx);
    if (o.ok) o.resources = parse_ptxas_report(o.log, request.entry);
    return o;
  }

  std::vector<dsl::Diagnostic> diagnostics(const std::string& log,
                                           const dsl::SourceFile* file) const override {
    std::vector<dsl::Diagnostic> diags;
    if (!file) return diags;
    // NVRTC reports "<file>(<line>): error: <message>" for code under a #line directive.
    static const std::regex line_re(R"(^(.*)\((\d+)\): (error|warning)( #\d+-D)?: (.*)$)");
    auto shared_file =
        std::shared_ptr<const dsl::SourceFile>(std::shared_ptr<const dsl::SourceFile>{}, file);
    for (const std::string& raw : split(log, '\n')) {
      std::smatch m;
      if (!std::regex_match(raw, m, line_re)) continue;
      if (m[1].str() != file->path) continue;
      dsl::Diagnostic d;
      d.severity = m[3].str() == "error" ? dsl::Severity::Error : dsl::Severity::Warning;
      d.loc = dsl::SourceLoc{shared_file, std::stoi(m[2].str()), 1};
      d.message = "CUDA compile: " + m[5].str();
      diags.push_back(std::move(d));
    }
    return diags;
  }

  std::optional<ResourceUsage> resources(const std::string& binary,
                                         const std::string& entry) const override {
    return read_cubin_resources(binary, entry);
  }

  std::unique_ptr<LoadedFunction> load(const std::string& binary, const std::string& entry,
                                       int64_t smem_bytes, int device) const override {
    CudaModule module = CudaModule::load(binary, device);
    cu::CUfunction f = module.function(entry);
    // Above 48 KB a kernel must opt in to its dynamic shared memory.
    if (smem_bytes > 48 * 1024) {
      CudaDriver& driver = CudaDriver::get();
      driver.check(driver.cuFuncSetAttribute(f, cu::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             static_cast<int>(smem_bytes)),
                   "cuFuncSetAttribute(max dynamic shared memory)");
    }
    return std::make_unique<CudaFunction>(std::move(module), f);
  }
};

} // namespace

const Toolchain& cuda_toolchain() {
  static const CudaToolchain cuda;
  return cuda;
}

const std::vector<std::pair<std::string, std::string>>& prelude_headers() {
  static const std::vector<std::pair<std::string, std::string>> headers = [] {
    std::vector<std::pair<std::string, std::string>> h;
    for (const auto& f : embedded_files())
      if (starts_with(f.path, "prelude/"))
        h.emplace_back(std::string(f.path.substr(8)), std::string(f.text));
    return h;
  }();
  return headers;
}

const Toolchain& toolchain_for(const std::string& language) {
  for (const Toolchain* t : {&cuda_toolchain(), &hip_toolchain()})
    if (language == t->language()) return *t;
  throw Error(str("no run-time compiler for generated '", language,
                  "' source (tilejit has: cuda via NVRTC, hip via HIPRTC)"));
}

} // namespace tilejit
