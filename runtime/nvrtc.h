// NVRTC, CUDA's run-time C++ compiler, loaded with dlopen so the library and CLI start on
// machines without the CUDA toolkit and say what is missing only when asked to compile.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tilejit {

/// One NVRTC compilation.
struct NvrtcRequest {
  std::string source;
  std::string program_name = "kernel.cu"; ///< file name NVRTC uses in diagnostics ("gemm.cu")
  /// In-memory headers as (include name, text); `#include "name"` resolves to them.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string arch = "sm_80"; ///< real target ("sm_90a", "sm_80"); "compute_XX" gives PTX only
  std::vector<std::string> options; ///< extra NVRTC options ("-DBLOCK=128", "--use_fast_math")
  bool want_cubin = true;
  bool want_ptx = true;
  /// Adds ptxas -v so `log` carries the "Used N registers ... spill stores" report that
  /// parse_ptxas_report() reads (with a real target only: a compute_XX compile runs no ptxas).
  /// Also turns NVRTC 13's own compile cache off, which would otherwise drop the report.
  bool resource_report = true;
  /// C++ names of __global__ functions whose mangled names are wanted ("gemm<128, 64>").
  std::vector<std::string> name_expressions;
};

/// The result of Nvrtc::compile. A compile error is ok = false with NVRTC's log, never a throw.
struct NvrtcOutput {
  bool ok = false;
  std::string log;   ///< compiler diagnostics, then the ptxas report when asked for
  std::string ptx;   ///< when want_ptx
  std::string cubin; ///< ELF image for cuModuleLoadData, when want_cubin
  /// (name expression, mangled name) for each NvrtcRequest::name_expressions entry.
  std::vector<std::pair<std::string, std::string>> lowered_names;
};

/// Process-wide handle on libnvrtc. Loaded lazily and once; never aborts.
class Nvrtc {
public:
  /// True when a libnvrtc was found and exports what tilejit calls.
  static bool available();
  /// Why available() is false (the names tried); empty when available.
  static const std::string& unavailable_reason();
  /// The loaded NVRTC; throws tilejit::Error naming what is missing when there is none.
  static const Nvrtc& get();

  Nvrtc(const Nvrtc&) = delete;
  Nvrtc& operator=(const Nvrtc&) = delete;
  ~Nvrtc();

  /// "13.0": part of every compiled-module cache key.
  std::string version() const;
  /// Real targets this NVRTC can compile for: "sm_75", "sm_80", ..., "sm_120".
  std::vector<std::string> supported_archs() const;
  /// The library that was loaded ("libnvrtc.so.13" or a full path).
  const std::string& library_path() const { return library_path_; }

  /// Compiles `request`. Thread-safe: the tuner compiles candidates on a thread pool, and NVRTC
  /// allows concurrent compiles of distinct programs. Throws only for an NVRTC malfunction
  /// (out of memory, an internal error); source errors come back as ok = false.
  NvrtcOutput compile(const NvrtcRequest& request) const;

private:
  struct Api;
  friend struct NvrtcLoader;
  Nvrtc() = default;

  /// One nvrtcCompileProgram for `gpu_arch`; fills what `get_*` ask for. False on failure.
  bool compile_once(const NvrtcRequest& request, const std::string& gpu_arch, bool ptxas_report,
                    bool get_ptx, bool get_cubin, NvrtcOutput& out) const;

  std::unique_ptr<Api> api_;
  std::string library_path_;
  int major_ = 0, minor_ = 0;
};

} // namespace tilejit
