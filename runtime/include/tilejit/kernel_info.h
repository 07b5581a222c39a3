// What a loaded kernel declares, and what compiling one of its variants produced: plain values
// for applications and tools (the compiler's own structures stay inside the library).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tilejit {

/// One parameter as declared: `q: T[B, HQ, D]`, `scale: f32`, `scratch o_part: f32[...]`.
struct ParamInfo {
  std::string name;
  std::string type;              ///< as written: "T[B, HQ, D]", "f32"
  bool is_tensor = false;        ///< false for a scalar
  bool is_scratch = false;       ///< allocated by the runtime, not passed by the caller
  std::string dtype;             ///< "T", "f16", "i32"...: a generic's name or a dtype
  std::vector<std::string> dims; ///< each dimension as written ("B", "1|H", "cdiv(MAXK, CHUNK)")
};

/// A generic or a tunable: its candidates ("f16", "bf16"; "16", "32") and default ("" if none).
struct ChoiceInfo {
  std::string name;
  std::vector<std::string> choices;
  std::string default_value;
};

/// A kernel's declaration: what a caller passes, and what compiles a variant of its own.
struct KernelInfo {
  std::string name;
  std::string source_hash; ///< sha256 of the .tile text (tuning keys carry it)
  std::vector<ParamInfo> params;
  std::vector<ChoiceInfo> generics; ///< `<T: f16|bf16, D: 64|128>`: one variant per value
  std::vector<ChoiceInfo> tunables; ///< `tune BN: 16|32|64 = 32`: chosen per shape
};

/// What compiling one variant produced (Runtime::compile).
struct CompileReport {
  std::string kernel;
  std::map<std::string, std::string> config; ///< every generic and tunable
  std::string arch;                          ///< "sm_90a"
  std::string entry;                         ///< the __global__ function's name
  std::string language;                      ///< of `source`: "cuda"
  std::string source;                        ///< the generated CUDA C++, #line back to the .tile
  size_t binary_bytes = 0;                   ///< the cubin's size
  bool from_cache = false;                   ///< loaded from a cache, nothing compiled
  double compile_ms = 0;
  int threads = 0;                   ///< per block
  int64_t smem_bytes = 0;            ///< dynamic shared memory per block
  int registers = -1;                ///< per thread (-1: unknown)
  int spill_bytes = -1;              ///< spill stores + loads (-1: unknown)
  std::vector<std::string> warnings; ///< "file.tile:12:3: warning: ..."
};

} // namespace tilejit
