// Runs a DSL kernel on the CPU from its AST, the way the GPU launcher would: infers generics
// from the arguments, completes the bindings with tunable defaults, checks the arguments and
// plans the launch (compiler/launch_plan.h), allocates scratch tensors, lowers to typed IR and
// interprets it. Tests and tools use this; the GPU tests compare against it.
#pragma once

#include "compiler/pipeline.h"
#include "compiler/ref/interpreter.h"
#include "compiler/specialise.h"
#include "dsl/ast.h"

#include <array>
#include <memory>
#include <vector>

namespace tilejit::ref {

/// An owned, dense, row-major host tensor.
class HostBuffer {
public:
  HostBuffer() = default;
  /// Zero-filled.
  HostBuffer(DType dtype, std::vector<int64_t> shape);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t numel() const;
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }

  /// Element `k` (row-major) as a double: f16/bf16 decoded exactly, integers converted.
  double get(int64_t k) const;
  int64_t get_int(int64_t k) const;
  /// Sets element `k` to `v` converted like cast<dtype>(v): rounded for floats, truncated and
  /// saturated for integers.
  void set(int64_t k, double v);
  void set_int(int64_t k, int64_t v);
  void fill(double v);
  /// Fills with NaN (float dtypes) or the byte 0xA5 (others): a value no correct kernel leaves.
  void poison();

  HostTensor view();
  HostArg arg() { return HostArg::of_tensor(view()); }

private:
  DType dtype_ = DType::F32;
  std::vector<int64_t> shape_;
  std::vector<unsigned char> bytes_;
};

/// What run_tile did: the complete bindings, the grid, the IR that ran, and the scratch tensors
/// (by parameter index; empty buffers for the caller's parameters), for inspection.
struct RunResult {
  Bindings bindings;
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::unique_ptr<ir::Kernel> kernel;
  std::vector<HostBuffer> scratch;
};

/// Runs `k` on the CPU. `args` holds the caller's arguments in declaration order, scratch
/// tensors left out; `given` holds generic and tunable values by name (`--set` style; missing
/// generics are inferred from the arguments, missing tunables take their defaults). Scratch
/// tensors declared `= 0` are zeroed; the others are poisoned, since a kernel must not read
/// scratch it has not written. Errors are those of plan_launch, lowering and run_kernel.
/// `after`: the pass whose IR runs (infer-types, the first the interpreter can run, by
/// default; any later one runs what the backends get, ring buffers and all).
RunResult run_tile(const dsl::Kernel& k, const Bindings& given, const std::vector<HostArg>& args,
                   const CompileOptions& options = {}, const std::string& after = "infer-types");

} // namespace tilejit::ref
