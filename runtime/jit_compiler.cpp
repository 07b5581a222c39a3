#include "runtime/jit_compiler.h"

#include "dsl/diagnostics.h"
#include "runtime/toolchain.h"
#include "support/text.h"

#include <chrono>

namespace tilejit {

CompiledVariant jit_compile(const JitRequest& r) {
  TJ_ICHECK(r.kernel, "jit_compile without a kernel");
  auto start = std::chrono::steady_clock::now();
  CompiledVariant v;
  v.kernel_name = r.kernel->name;
  v.bindings = r.bindings;
  v.arch = r.options.arch;
  auto ir = lower_to_ir(*r.kernel, r.bindings, r.options, "", nullptr, &v.warnings);
  GeneratedKernel g = ir->target->emit(*ir);
  v.entry = g.entry;
  v.language = g.language;
  v.source = g.source;
  v.threads = g.threads;
  v.smem_bytes = g.smem_bytes;
  v.params = ir->params;
  v.index32 = ir->index32;
  v.debug_bounds = g.debug_bounds;
  v.bounds_sites = std::move(g.bounds_sites);
  v.tma_maps = std::move(g.tma_maps);

  const Toolchain& toolchain = toolchain_for(v.language);
  v.cache_key = ModuleCache::make_key(v.source, toolchain.headers(), toolchain.options(), v.arch,
                                      toolchain.version());
  if (r.cache && !r.want_assembly) {
    if (auto binary = r.cache->get(v.cache_key)) {
      v.binary = std::move(*binary);
      v.from_cache = true;
      v.cache_source = "module cache";
    }
  }
  if (!v.from_cache && r.binary_source && !r.want_assembly) {
    if (auto binary = r.binary_source(v.cache_key)) {
      v.binary = std::move(*binary);
      v.from_cache = true;
      v.cache_source = "binary source";
      if (r.cache) r.cache->put(v.cache_key, v.binary);
    }
  }
  if (!v.from_cache) {
    ToolchainRequest req;
    req.source = v.source;
    req.program_name = v.kernel_name;
    req.arch = v.arch;
    req.entry = v.entry;
    req.want_assembly = r.want_assembly;
    ToolchainOutput out = toolchain.compile(req);
    v.compile_log = out.log;
    if (!out.ok) {
      std::string mapped;
      for (const auto& d : toolchain.diagnostics(out.log, r.kernel->loc.file.get()))
        mapped += d.render() + "\n";
      if (!mapped.empty())
        throw dsl::CompileError(
            {dsl::Diagnostic{dsl::Severity::Error, r.kernel->loc,
                             "the generated " + v.language + " did not compile:\n" + mapped}});
      throw InternalError(str("internal error: generated ", v.language, " for kernel '",
                              v.kernel_name, "' did not compile (a tilejit bug). ",
                              toolchain.name(), " said:\n", out.log));
    }
    v.binary = std::move(out.binary);
    v.assembly = std::move(out.assembly);
    if (r.cache) r.cache->put(v.cache_key, v.binary);
    if (out.resources) v.resources = *out.resources;
  }
  if (v.resources.registers < 0)
    if (auto res = toolchain.resources(v.binary, v.entry)) v.resources = *res;
  v.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return v;
}

} // namespace tilejit
