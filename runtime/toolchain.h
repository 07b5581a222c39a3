// The run-time half of a target: the compiler that turns a backend's generated source into a
// binary for the GPU (NVRTC for CUDA C++; HIPRTC for HIP C++ later), how its log maps back to
// the .tile program, where the binary's resources are read, and how a binary is loaded and its
// kernel launched. The compile path (jit_compiler.cpp) and the launch path (runtime.cpp) go
// through this interface only, so a second backend is a new Toolchain, not a fork of either.
#pragma once

#include "dsl/diagnostics.h"
#include "runtime/resource_usage.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tilejit {

struct ToolchainRequest {
  std::string source;
  std::string program_name;   ///< the kernel's name; the toolchain adds its extension (".cu")
  std::string arch;           ///< the target's arch ("sm_90a")
  std::string entry;          ///< the kernel whose resources the output reports
  bool want_assembly = false; ///< PTX for CUDA (AMDGCN assembly for HIP later)
};

/// The result of Toolchain::compile. A compile error is ok = false with the log, never a throw.
struct ToolchainOutput {
  bool ok = false;
  std::string log;
  std::string binary;                     ///< what Toolchain::load takes (a cubin)
  std::string assembly;                   ///< when asked for
  std::optional<ResourceUsage> resources; ///< when the compiler reported them
};

/// A kernel loaded on a device, ready to launch. Owns its module.
class LoadedFunction {
public:
  virtual ~LoadedFunction() = default;
  /// Launches on `stream` with the kernel's argument pointers; throws tilejit::Error naming
  /// `name` when the driver refuses.
  virtual void launch(const std::array<int64_t, 3>& grid, int threads, int64_t smem_bytes,
                      void* stream, void** args, const std::string& name) const = 0;
};

class Toolchain {
public:
  virtual ~Toolchain() = default;
  /// The source language it takes (GeneratedKernel::language): "cuda".
  virtual const std::string& language() const = 0;
  /// "NVRTC": how messages name it.
  virtual const std::string& name() const = 0;
  /// Whether the compiler library loaded; why not otherwise.
  virtual bool available() const = 0;
  virtual std::string unavailable_reason() const = 0;
  /// The compiler's version ("13.0"): part of every compiled-module cache key.
  virtual std::string version() const = 0;
  /// The prelude as in-memory headers (include name, text), and the options every kernel
  /// compiles with: both part of the cache key.
  virtual const std::vector<std::pair<std::string, std::string>>& headers() const = 0;
  virtual const std::vector<std::string>& options() const = 0;
  /// Compiles one kernel's source; throws tilejit::Error when the compiler is missing.
  virtual ToolchainOutput compile(const ToolchainRequest& request) const = 0;
  /// The diagnostics in `log` that point into the .tile `file` (through #line directives).
  virtual std::vector<dsl::Diagnostic> diagnostics(const std::string& log,
                                                   const dsl::SourceFile* file) const = 0;
  /// Reads `entry`'s resources from a binary (a cached one has no compile log).
  virtual std::optional<ResourceUsage> resources(const std::string& binary,
                                                 const std::string& entry) const = 0;
  /// Loads `binary` on `device` and finds `entry`, allowing it `smem_bytes` of dynamic shared
  /// memory. Throws NoGpuError without a GPU, tilejit::Error when the binary does not load.
  virtual std::unique_ptr<LoadedFunction> load(const std::string& binary, const std::string& entry,
                                               int64_t smem_bytes, int device) const = 0;
};

/// The toolchain for a generated kernel's language ("cuda"). Throws tilejit::Error for others.
const Toolchain& toolchain_for(const std::string& language);

} // namespace tilejit
