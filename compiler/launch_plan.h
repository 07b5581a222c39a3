// What a launch needs from the host side, computed once per call from the kernel's
// declaration and the arguments' shapes: runtime sizes (checked for consistency), `require`
// checks, the grid, and the shapes of scratch tensors. Shared by the GPU launcher and the
// reference interpreter so both agree on every check and every error message.
#pragma once

#include "compiler/host_eval.h"
#include "compiler/specialise.h"
#include "dsl/ast.h"

#include <tilejit/dtype.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tilejit {

/// What the caller passes for one parameter (scratch tensors are left empty).
struct ArgSpec {
  bool is_tensor = true;
  DType dtype = DType::F32;
  std::vector<int64_t> shape; ///< tensors
  HostValue scalar;           ///< scalars
  bool provided = true;       ///< false for scratch tensors the runtime allocates
};

struct LaunchPlan {
  HostEnv env; ///< sizes, scalars, generics, tunables by name
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::vector<std::vector<int64_t>> scratch_shapes; ///< per parameter (empty for non-scratch)
  /// Per parameter: the dimensions declared 1|X that were given size 1 while X is larger, with
  /// X's value. The kernel sees such a dimension with size X and stride 0 (PyTorch's expand).
  std::vector<std::vector<std::pair<int, int64_t>>> broadcast_dims;
};

/// Infers generics that a tensor's dtype or shape fixes (T from q's dtype, D from q's last
/// dim) and adds them to `bindings` when absent. Returns what was inferred, by name.
std::vector<std::string> infer_generics(const dsl::Kernel& k, const std::vector<ArgSpec>& args,
                                        Bindings& bindings);

/// Checks the arguments against the declaration (count, dtypes, ranks, fixed dims, one value
/// per size name, 1 or X for a dimension declared 1|X) and evaluates `require`, the grid and
/// scratch shapes. Errors name the tensor, the expected and the actual shape, and the kernel.
LaunchPlan plan_launch(const dsl::Kernel& k, const Bindings& complete_bindings,
                       const std::vector<ArgSpec>& args);

/// Per parameter: whether plan_launch reads the value of this scalar parameter (in a `require`,
/// the grid, the thread count or a tensor's declared shape). Other scalars only reach the
/// kernel body, so a launch whose plan is cached need not look at their values.
std::vector<bool> scalars_read_by_plan(const dsl::Kernel& k);

/// Per parameter: whether the kernel body may write this tensor (it is the target of a
/// `store` or an atomic). Scratch tensors are included (the runtime owns them).
std::vector<bool> params_written(const dsl::Kernel& k);

} // namespace tilejit
