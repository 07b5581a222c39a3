// Compiles one specialised kernel variant to a GPU binary: the compiler pipeline, the kernel's
// target's emitter, then the target's toolchain (runtime/toolchain.h: NVRTC for CUDA), through
// the module cache. The toolchain's diagnostics come back as DSL diagnostics
// (`file.tile:L:C: error: ...`) via #line directives.
#pragma once

#include "compiler/ir.h"
#include "compiler/pipeline.h"
#include "compiler/target.h"
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
  std::string entry;    ///< __global__ function name
  std::string language; ///< of `source`: which toolchain compiled it ("cuda")
  std::string source;   ///< what the target's emitter generated
  std::string assembly; ///< PTX, when asked for
  std::string binary;   ///< what the toolchain loads (a cubin)
  std::string compile_log;
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
  std::vector<BoundsSite> bounds_sites;
  /// Tensor maps the launch passes after the parameters (GeneratedKernel::tma_maps).
  std::vector<TmaMapSpec> tma_maps;
  std::vector<dsl::Diagnostic> warnings; ///< from the passes (a loop that runs serially...)
};

struct JitRequest {
  const dsl::Kernel* kernel = nullptr;
  std::string source_hash;
  Bindings bindings;            ///< complete
  CompileOptions options;       ///< arch, smem limit, aligned tensors
  bool want_assembly = false;   ///< PTX for CUDA
  ModuleCache* cache = nullptr; ///< optional
  /// Optional: asked after the module cache misses (its hits are put into the module cache).
  BinarySource binary_source;
};

/// Runs the pipeline and the toolchain. Throws dsl::CompileError for errors in the .tile program
/// (including compile errors mapped back to DSL lines), ConstraintError for configurations that
/// cannot exist (where clauses, shared memory), and tilejit::Error when the toolchain is missing.
CompiledVariant jit_compile(const JitRequest& request);

} // namespace tilejit
