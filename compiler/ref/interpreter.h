// The reference interpreter: runs a specialised, typed kernel (Tile IR after infer-types, or any
// later pass) on the CPU, program by program, with whole-tile semantics. It defines what a DSL
// program means; compiler/ref/README.md lists the rules.
#pragma once

#include "compiler/host_eval.h"
#include "compiler/ir.h"

#include <tilejit/dtype.h>

#include <array>
#include <cstdint>
#include <vector>

namespace tilejit::ref {

/// A tensor in host memory: `data` points at element [0, ..., 0]; strides are in elements and
/// may be any values (negative, zero, or overlapping are the caller's business).
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  void* data = nullptr;
};

/// One kernel argument: a tensor or a scalar.
struct HostArg {
  bool is_tensor = false;
  HostTensor tensor;
  HostValue scalar;

  static HostArg of_tensor(HostTensor t) { return {true, std::move(t), {}}; }
  static HostArg of_scalar(HostValue v) { return {false, {}, v}; }
};

/// Row-major strides (in elements) of a dense tensor of `shape`.
std::vector<int64_t> dense_strides(const std::vector<int64_t>& shape);

/// Runs `k` over `grid` (x fastest, then y, then z). `args` holds one entry per IR parameter,
/// scratch tensors included. Argument mismatches throw tilejit::Error naming the parameter and
/// the kernel; runtime errors (integer division by zero, shared slice out of range) throw
/// tilejit::Error "file:line:col: runtime error in kernel K, program (x,y,z): ...".
void run_kernel(const ir::Kernel& k, const std::vector<HostArg>& args, std::array<int64_t, 3> grid);

} // namespace tilejit::ref
