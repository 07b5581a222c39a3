// HIPRTC, ROCm's run-time C++ compiler for AMD GPUs, loaded with dlopen as NVRTC is (see
// nvrtc.h): HIP C++ to a code object (an AMDGPU ELF) for one gfx target. It needs no AMD GPU:
// gfx90a (wave64, MFMA) and gfx1030 (wave32) code objects are built on any machine with the
// library (Debian 12: libamdhip64-5, ROCm 5.2, where HIPRTC lives in libamdhip64).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tilejit {

/// One HIPRTC compilation.
struct HiprtcRequest {
  std::string source;
  std::string program_name = "kernel.hip"; ///< the file name HIPRTC's diagnostics use
  /// In-memory headers as (include name, text); `#include "name"` resolves to them.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string arch = "gfx90a";      ///< the gfx target ("gfx90a", "gfx1030")
  std::vector<std::string> options; ///< extra options ("-DBLOCK=128")
};

/// The result of Hiprtc::compile. A compile error is ok = false with HIPRTC's log, never a throw.
struct HiprtcOutput {
  bool ok = false;
  std::string log;
  std::string code_object; ///< the AMDGPU ELF hipModuleLoadData takes
};

/// Process-wide handle on HIPRTC. Loaded lazily and once; never aborts.
class Hiprtc {
public:
  static bool available();
  /// Why available() is false (the names tried); empty when available.
  static const std::string& unavailable_reason();
  /// The loaded HIPRTC; throws tilejit::Error naming what is missing when there is none.
  static const Hiprtc& get();

  Hiprtc(const Hiprtc&) = delete;
  Hiprtc& operator=(const Hiprtc&) = delete;
  ~Hiprtc();

  /// "5.2": part of every compiled-module cache key.
  std::string version() const;
  const std::string& library_path() const { return library_path_; }

  /// Compiles `request` (with -O3 and --offload-arch=<arch>) on HIPRTC's own thread (one for
  /// the process: see hiprtc.cpp), the caller waiting. Throws only for a HIPRTC malfunction;
  /// source errors come back as ok = false.
  HiprtcOutput compile(const HiprtcRequest& request) const;

private:
  struct Api;
  friend struct HiprtcLoader;
  Hiprtc() = default;
  HiprtcOutput compile_here(const HiprtcRequest& request) const;

  std::unique_ptr<Api> api_;
  std::string library_path_;
  int major_ = 0, minor_ = 0;
};

} // namespace tilejit
