#include "runtime/jit_compiler.h"

#include "compiler/cuda/cuda_emitter.h"
#include "dsl/diagnostics.h"
#include "kernels_src/embedded_files.h"
#include "runtime/nvrtc.h"
#include "support/text.h"

#include <chrono>
#include <regex>

namespace tilejit {

std::vector<std::string> nvrtc_options() {
  // -lineinfo: profilers and compute-sanitizer map SASS back to .tile lines via #line.
  return {"-std=c++17", "-lineinfo", "--device-as-default-execution-space"};
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

std::string map_nvrtc_log(const std::string& log, const dsl::SourceFile* file) {
  if (!file) return {};
  // NVRTC reports "<file>(<line>): error: <message>" for code under a #line directive.
  static const std::regex line_re(R"(^(.*)\((\d+)\): (error|warning)( #\d+-D)?: (.*)$)");
  std::vector<dsl::Diagnostic> diags;
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
  std::string out;
  for (const auto& d : diags) out += d.render() + "\n";
  return out;
}

CompiledVariant jit_compile(const JitRequest& r) {
  TJ_ICHECK(r.kernel, "jit_compile without a kernel");
  auto start = std::chrono::steady_clock::now();
  CompiledVariant v;
  v.kernel_name = r.kernel->name;
  v.bindings = r.bindings;
  v.arch = r.options.arch;
  auto ir = lower_to_ir(*r.kernel, r.bindings, r.options, "", nullptr, &v.warnings);
  cuda::GeneratedKernel g = cuda::generate_cuda(*ir);
  v.entry = g.entry;
  v.cuda_source = g.source;
  v.threads = g.threads;
  v.smem_bytes = g.smem_bytes;
  v.params = ir->params;
  v.index32 = ir->index32;
  v.debug_bounds = g.debug_bounds;
  v.bounds_sites = std::move(g.bounds_sites);

  const Nvrtc& nvrtc = Nvrtc::get();
  std::vector<std::string> options = nvrtc_options();
  v.cache_key =
      ModuleCache::make_key(v.cuda_source, prelude_headers(), options, v.arch, nvrtc.version());
  if (r.cache && !r.want_ptx) {
    if (auto cubin = r.cache->get(v.cache_key)) {
      v.cubin = std::move(*cubin);
      v.from_cache = true;
      v.cache_source = "module cache";
    }
  }
  if (!v.from_cache && r.binary_source && !r.want_ptx) {
    if (auto cubin = r.binary_source(v.cache_key)) {
      v.cubin = std::move(*cubin);
      v.from_cache = true;
      v.cache_source = "binary source";
      if (r.cache) r.cache->put(v.cache_key, v.cubin);
    }
  }
  if (!v.from_cache) {
    NvrtcRequest req;
    req.source = v.cuda_source;
    req.program_name = v.kernel_name + ".cu";
    req.headers = prelude_headers();
    req.arch = v.arch;
    req.options = options;
    req.want_cubin = true;
    req.want_ptx = r.want_ptx;
    req.resource_report = true;
    NvrtcOutput out = nvrtc.compile(req);
    v.nvrtc_log = out.log;
    if (!out.ok) {
      std::string mapped = map_nvrtc_log(out.log, r.kernel->loc.file.get());
      if (!mapped.empty())
        throw dsl::CompileError(
            {dsl::Diagnostic{dsl::Severity::Error, r.kernel->loc,
                             "the generated CUDA did not compile:\n" + mapped}});
      throw InternalError(str("internal error: generated CUDA for kernel '", v.kernel_name,
                              "' did not compile (a tilejit bug). NVRTC said:\n", out.log));
    }
    v.cubin = std::move(out.cubin);
    v.ptx = std::move(out.ptx);
    if (r.cache) r.cache->put(v.cache_key, v.cubin);
    if (auto res = parse_ptxas_report(out.log, v.entry)) v.resources = *res;
  }
  if (v.resources.registers < 0)
    if (auto res = read_cubin_resources(v.cubin, v.entry)) v.resources = *res;
  v.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return v;
}

} // namespace tilejit
