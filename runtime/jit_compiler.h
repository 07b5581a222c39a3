// Compiles one specialised kernel variant to a cubin: the compiler pipeline to CUDA C++, then
// NVRTC with the embedded prelude as in-memory headers, through the module cache. NVRTC's
// diagnostics come back as DSL diagnostics (`file.tile:L:C: error: ...`) via #line directives.
#pragma once

#include "compiler/cuda/cuda_emitter.h"
#include "compiler/ir.h"
#include "compiler/pipeline.h"
#include "runtime/module_cache.h"
#include "runtime/resource_usage.h"

#include <tilejit/tilejit.h>

#include <memory>
#include <string>
#include <vector>

namespace tilejit {

/// Everything one compiled variant carries: its source at each level and its resources.
struct CompiledVariant {
  std::string kernel_name;
  Bindings bindings;
  std::string arch;
  std::string entry; ///< __global__ function name
  std::string cuda_source;
  std::string ptx; ///< when asked for
  std::string cubin;
  std::string nvrtc_log;
  std::string cache_key;
  bool from_cache = false;  ///< the cubin came from a cache (nothing compiled)
  std::string cache_source; ///< "module cache" or "binary source" when from_cache
  double compile_ms = 0;
  int threads = 128;
  int64_t smem_bytes = 0; ///< dynamic shared memory
  ResourceUsage resources;
  std::vector<ir::Param> params; ///< the launch signature, scratch tensors included
  bool index32 = false;          ///< tensors are passed as tj::Tensor32 (32-bit sizes, strides)
  /// Debug mode (CompileOptions::debug_bounds): the kernel takes a zeroed tj::BoundsRecord*
  /// after its parameters; a nonzero site there after the launch names bounds_sites[site-1].
  bool debug_bounds = false;
  std::vector<cuda::BoundsSite> bounds_sites;
  std::vector<dsl::Diagnostic> warnings; ///< from the passes (a loop that runs serially...)
};

struct JitRequest {
  const dsl::Kernel* kernel = nullptr;
  std::string source_hash;
  Bindings bindings;      ///< complete
  CompileOptions options; ///< arch, smem limit, aligned tensors
  bool want_ptx = false;
  ModuleCache* cache = nullptr; ///< optional
  /// Optional: asked after the module cache misses (its hits are put into the module cache).
  BinarySource binary_source;
};

/// The NVRTC options every variant compiles with (part of the cache key).
std::vector<std::string> nvrtc_options();
/// The prelude as NVRTC headers (include name, text).
const std::vector<std::pair<std::string, std::string>>& prelude_headers();

/// Runs the pipeline and NVRTC. Throws dsl::CompileError for errors in the .tile program
/// (including NVRTC errors mapped back to DSL lines), ConstraintError for configurations that
/// cannot exist (where clauses, shared memory), and tilejit::Error when NVRTC is missing.
CompiledVariant jit_compile(const JitRequest& request);

/// Rewrites NVRTC's log: lines pointing into .tile files become DSL diagnostics with the
/// source line and a caret; returns the rendered text (empty if nothing maps to the .tile).
std::string map_nvrtc_log(const std::string& log, const dsl::SourceFile* file);

} // namespace tilejit
