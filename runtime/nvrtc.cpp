// Loads libnvrtc with dlopen and runs compilations (see nvrtc.h).
#include "runtime/nvrtc.h"

#include "support/error.h"
#include "support/shared_library.h"
#include "support/text.h"

#include <cstdlib>

namespace tilejit {

namespace {

// The slice of nvrtc.h tilejit uses (ABI, so no header is needed to build).
using nvrtcResult = int;
struct NvrtcProgramSt;
using nvrtcProgram = NvrtcProgramSt*;
constexpr nvrtcResult NVRTC_SUCCESS = 0;
constexpr nvrtcResult NVRTC_ERROR_COMPILATION = 6;

} // namespace

struct Nvrtc::Api {
  const char* (*nvrtcGetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*nvrtcVersion)(int*, int*) = nullptr;
  nvrtcResult (*nvrtcGetNumSupportedArchs)(int*) = nullptr;
  nvrtcResult (*nvrtcGetSupportedArchs)(int*) = nullptr;
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int,
                                    const char* const*, const char* const*) = nullptr;
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*nvrtcAddNameExpression)(nvrtcProgram, const char*) = nullptr;
  nvrtcResult (*nvrtcGetLoweredName)(nvrtcProgram, const char*, const char**) = nullptr;

  std::string name(nvrtcResult r) const {
    const char* s = nvrtcGetErrorString ? nvrtcGetErrorString(r) : nullptr;
    return s ? s : str("NVRTC error ", r);
  }
};

/// Friend of Nvrtc that performs the one-time load.
struct NvrtcLoader {
  struct Result {
    std::unique_ptr<Nvrtc> nvrtc;
    std::string reason;
  };

  /// Library names in search order: the loader's path first (what ldconfig and LD_LIBRARY_PATH
  /// say), then the toolkit's usual homes, for machines where CUDA is not on the loader path.
  static std::vector<std::string> candidates() {
    const std::vector<std::string> names = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    std::vector<std::string> out = names;
    std::vector<std::string> dirs;
    if (const char* home = std::getenv("CUDA_HOME"); home && *home) dirs.push_back(home);
    dirs.push_back("/usr/local/cuda");
    for (const std::string& dir : dirs)
      for (const std::string& name : names) out.push_back(dir + "/lib64/" + name);
    return out;
  }

  static Result load() {
    Result out;
    std::string path;
    const std::vector<std::string> tried = candidates();
    void* lib = open_first_library(tried, path);
    if (!lib) {
      out.reason = str("libnvrtc not found (tried ", join(tried, ", "),
                       "): install the CUDA toolkit's NVRTC or set CUDA_HOME");
      return out;
    }
    auto api = std::make_unique<Nvrtc::Api>();
    std::string missing;
    bind_symbol(lib, api->nvrtcGetErrorString, "nvrtcGetErrorString", missing);
    bind_symbol(lib, api->nvrtcVersion, "nvrtcVersion", missing);
    bind_symbol(lib, api->nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs", missing);
    bind_symbol(lib, api->nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs", missing);
    bind_symbol(lib, api->nvrtcCreateProgram, "nvrtcCreateProgram", missing);
    bind_symbol(lib, api->nvrtcDestroyProgram, "nvrtcDestroyProgram", missing);
    bind_symbol(lib, api->nvrtcCompileProgram, "nvrtcCompileProgram", missing);
    bind_symbol(lib, api->nvrtcGetPTXSize, "nvrtcGetPTXSize", missing);
    bind_symbol(lib, api->nvrtcGetPTX, "nvrtcGetPTX", missing);
    bind_symbol(lib, api->nvrtcGetCUBINSize, "nvrtcGetCUBINSize", missing);
    bind_symbol(lib, api->nvrtcGetCUBIN, "nvrtcGetCUBIN", missing);
    bind_symbol(lib, api->nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", missing);
    bind_symbol(lib, api->nvrtcGetProgramLog, "nvrtcGetProgramLog", missing);
    bind_symbol(lib, api->nvrtcAddNameExpression, "nvrtcAddNameExpression", missing);
    bind_symbol(lib, api->nvrtcGetLoweredName, "nvrtcGetLoweredName", missing);
    if (!missing.empty()) {
      out.reason = str(path, " has no ", missing, " (NVRTC too old for tilejit; need CUDA 12+)");
      return out;
    }
    std::unique_ptr<Nvrtc> n(new Nvrtc());
    if (nvrtcResult r = api->nvrtcVersion(&n->major_, &n->minor_); r != NVRTC_SUCCESS) {
      out.reason = str("nvrtcVersion failed in ", path, ": ", api->name(r));
      return out;
    }
    n->api_ = std::move(api);
    n->library_path_ = path;
    out.nvrtc = std::move(n);
    return out;
  }

  static const Result& loaded() {
    static const Result result = load(); // thread-safe one-time initialisation
    return result;
  }
};

Nvrtc::~Nvrtc() = default;

bool Nvrtc::available() {
  return NvrtcLoader::loaded().nvrtc != nullptr;
}

const std::string& Nvrtc::unavailable_reason() {
  return NvrtcLoader::loaded().reason;
}

const Nvrtc& Nvrtc::get() {
  const NvrtcLoader::Result& r = NvrtcLoader::loaded();
  if (!r.nvrtc) throw Error(str("NVRTC unavailable: ", r.reason));
  return *r.nvrtc;
}

std::string Nvrtc::version() const {
  return str(major_, ".", minor_);
}

std::vector<std::string> Nvrtc::supported_archs() const {
  int count = 0;
  nvrtcResult r = api_->nvrtcGetNumSupportedArchs(&count);
  if (r != NVRTC_SUCCESS) throw Error(str("nvrtcGetNumSupportedArchs failed: ", api_->name(r)));
  std::vector<int> archs(static_cast<size_t>(count));
  r = api_->nvrtcGetSupportedArchs(archs.data());
  if (r != NVRTC_SUCCESS) throw Error(str("nvrtcGetSupportedArchs failed: ", api_->name(r)));
  std::vector<std::string> out;
  for (int a : archs) out.push_back(str("sm_", a));
  return out;
}

namespace {

/// Destroys an NVRTC program on every exit path.
struct ProgramGuard {
  nvrtcResult (*destroy)(nvrtcProgram*);
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program) destroy(&program);
  }
};

} // namespace

bool Nvrtc::compile_once(const NvrtcRequest& req, const std::string& gpu_arch, bool ptxas_report,
                         bool get_ptx, bool get_cubin, NvrtcOutput& out) const {
  const Api& a = *api_;
  std::vector<const char*> header_texts, header_names;
  for (const auto& [name, text] : req.headers) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }
  ProgramGuard guard{a.nvrtcDestroyProgram};
  nvrtcResult r = a.nvrtcCreateProgram(&guard.program, req.source.c_str(), req.program_name.c_str(),
                                       static_cast<int>(header_texts.size()), header_texts.data(),
                                       header_names.data());
  if (r != NVRTC_SUCCESS) {
    guard.program = nullptr;
    out.log += str("nvrtcCreateProgram failed: ", a.name(r), "\n");
    return false;
  }
  for (const std::string& expr : req.name_expressions) {
    r = a.nvrtcAddNameExpression(guard.program, expr.c_str());
    if (r != NVRTC_SUCCESS) {
      out.log += str("nvrtcAddNameExpression(\"", expr, "\") failed: ", a.name(r), "\n");
      return false;
    }
  }

  std::vector<std::string> options = req.options;
  options.push_back("--gpu-architecture=" + gpu_arch);
  if (ptxas_report) {
    // NVRTC 13 accepts both --ptxas-options=-v and -Xptxas -v; the single-token form cannot be
    // split apart by option lists that get reordered or deduplicated.
    options.push_back("--ptxas-options=-v");
    // Where a driver is installed, NVRTC 13 answers a repeated compile from the CUDA compute
    // cache without running ptxas, and the report is then silently missing. tilejit's own
    // ModuleCache already skips repeated compiles, so bypassing NVRTC's costs little.
    if (major_ >= 13) options.push_back("--no-cache");
  }
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  nvrtcResult compiled =
      a.nvrtcCompileProgram(guard.program, static_cast<int>(argv.size()), argv.data());

  size_t log_size = 0;
  if (a.nvrtcGetProgramLogSize(guard.program, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    std::string log(log_size, '\0');
    if (a.nvrtcGetProgramLog(guard.program, log.data()) == NVRTC_SUCCESS) {
      log.resize(log_size - 1); // the size counts the terminating NUL
      out.log += log;
    }
  }
  if (compiled != NVRTC_SUCCESS) {
    // NVRTC_ERROR_COMPILATION already explains itself in the log; an invalid option or an
    // internal failure may leave the log empty, so name the result.
    if (compiled != NVRTC_ERROR_COMPILATION || out.log.empty()) {
      if (!out.log.empty() && out.log.back() != '\n') out.log += '\n';
      out.log += str("nvrtcCompileProgram failed: ", a.name(compiled),
                     " (options: ", join(options, " "), ")\n");
    }
    return false;
  }

  auto fetch = [&](auto size_fn, auto get_fn, const char* what, std::string& dst) {
    size_t size = 0;
    nvrtcResult rr = size_fn(guard.program, &size);
    if (rr != NVRTC_SUCCESS) throw Error(str("nvrtcGet", what, "Size failed: ", a.name(rr)));
    dst.assign(size, '\0');
    if (size > 0) {
      rr = get_fn(guard.program, dst.data());
      if (rr != NVRTC_SUCCESS) throw Error(str("nvrtcGet", what, " failed: ", a.name(rr)));
    }
  };
  if (get_ptx) {
    fetch(a.nvrtcGetPTXSize, a.nvrtcGetPTX, "PTX", out.ptx);
    if (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back(); // PTX is a C string
  }
  if (get_cubin) fetch(a.nvrtcGetCUBINSize, a.nvrtcGetCUBIN, "CUBIN", out.cubin);
  out.lowered_names.clear();
  for (const std::string& expr : req.name_expressions) {
    const char* lowered = nullptr;
    r = a.nvrtcGetLoweredName(guard.program, expr.c_str(), &lowered);
    if (r != NVRTC_SUCCESS || !lowered) {
      out.log += str("nvrtcGetLoweredName(\"", expr, "\") failed: ", a.name(r), "\n");
      return false;
    }
    out.lowered_names.emplace_back(expr, lowered);
  }
  return true;
}

NvrtcOutput Nvrtc::compile(const NvrtcRequest& req) const {
  NvrtcOutput out;
  const bool virtual_arch = starts_with(req.arch, "compute_");
  if (virtual_arch && req.want_cubin) {
    out.log = str("cannot build a cubin for virtual architecture '", req.arch,
                  "': ask for a real one (sm_", req.arch.substr(8), ")\n");
    return out;
  }
  if (req.want_cubin) {
    // NVRTC 13 keeps the PTX of a compile for a real sm_XX target, so one compile yields both.
    // Older NVRTC may not: then a second, PTX-only compile fills it in.
    out.ok = compile_once(req, req.arch, req.resource_report, req.want_ptx, true, out);
    if (out.ok && req.want_ptx && out.ptx.empty()) {
      NvrtcOutput ptx_only;
      std::string virt = starts_with(req.arch, "sm_") ? "compute_" + req.arch.substr(3) : req.arch;
      out.ok = compile_once(req, virt, false, true, false, ptx_only);
      out.ptx = std::move(ptx_only.ptx);
      if (!out.ok) out.log += ptx_only.log;
    }
    return out;
  }
  // PTX only (or just a syntax check): a virtual target skips ptxas, which is most of the time.
  std::string virt = starts_with(req.arch, "sm_") ? "compute_" + req.arch.substr(3) : req.arch;
  out.ok = compile_once(req, virt, false, req.want_ptx, false, out);
  return out;
}

} // namespace tilejit
