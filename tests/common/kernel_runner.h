// Runs a .tile kernel on test data, on the reference interpreter (CPU) or on the GPU through
// the public Runtime, so one set of checks serves both.
#pragma once

#include "compiler/kernel_library.h"
#include "compiler/ref/run_tile.h"
#include "compiler/specialise.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tilejit::test {

/// A kernel argument in tests: a host buffer (copied to the device and back on the GPU), or a
/// scalar.
struct TestArg {
  ref::HostBuffer* buffer = nullptr;
  DType scalar_dtype = DType::F32;
  double scalar = 0;
  /// An input the kernel never writes and the test does not change while it lives: a GPU
  /// runner may keep its device copy between runs (large KV caches) and need not copy it back.
  bool constant_input = false;
  static TestArg of(ref::HostBuffer& b) { return {&b}; }
  static TestArg input(ref::HostBuffer& b) { return {&b, DType::F32, 0, true}; }
  static TestArg f32(double v) { return {nullptr, DType::F32, v}; }
  static TestArg i32(int64_t v) { return {nullptr, DType::I32, static_cast<double>(v)}; }
};

/// Runs the kernel in `source` (a .tile path, or "embedded:<path>"; "path#name" picks one
/// kernel of a file that holds several) with `config` forced
/// (tunables and generics; the rest inferred or defaulted) and leaves every buffer holding
/// what the kernel left in it.
using KernelRunner = std::function<void(const std::string& source, const Bindings& config,
                                        const std::vector<TestArg>& args)>;

/// Loads a .tile module named like Runtime::load does.
LoadedModule load_source(const std::string& source);
/// "path#kernel" -> (path, kernel); no '#': (source, "").
std::pair<std::string, std::string> split_source(const std::string& source);
/// A file under the source tree: there when the tests run where they were built, else (a
/// build carried to the GPU machine, run from the repository's root) relative to the
/// working directory.
std::string test_data_path(const std::string& relative);

/// The reference interpreter, running the IR after pass `after` (default: infer-types).
/// `as_launched`: compiled as a launch with well-formed tensors would be (16-byte aligned
/// rows the TMA can describe, 32-bit offsets), so that the passes after specialise take the
/// paths such arguments get (TMA copies, 16-byte vectors).
KernelRunner interpreter_runner(const std::string& after = "infer-types", bool as_launched = false);
/// One interpreter_runner() for a test binary's checks (the ref_*_test files share it).
const KernelRunner& cpu();

/// "BM=16 BN=32 " for traces.
std::string config_text(const Bindings& b);

} // namespace tilejit::test
