// Reverse-mode differentiation of a .tile kernel, source to source: from a kernel whose body is
// elementwise math, `where`/`min`/`max`/`clamp`/`pow`, loads, stores and (at most) one `serial`
// loop carrying state, derive a kernel that adds the gradients of the loss
// sum over every stored output O of d_O * O into d_X for each differentiated input X.
//
// The derived kernel is DSL text (readable, and compiled, tuned and inspected like any other
// kernel; `tilejit grad` prints it). It runs the forward once, storing the loop-carried state every
// CK steps (CK a tunable), then walks the checkpoints backwards: each segment is recomputed from
// its checkpoint with the state taped per step, and the steps are undone in reverse, each step's
// intermediates recomputed from its taped state. Memory: the checkpoints and one segment's tape.
//
// Rules at ties (WORKLOADS.md section 5, dsl/README.md): min/max give the whole gradient to the
// first argument as written; clamp(x, lo, hi) passes it to x at its bounds; pow(x, y) at x = 0 has
// gradient 0 in x (and in y); where(c, a, b) sends it to the branch taken.
#pragma once

#include "dsl/ast.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tilejit::autodiff {

/// Which derived kernel: the whole gradient in one kernel, or one of the three kernels of the
/// segment form (a time-parallel reverse for a loop whose state is a tile of independent lanes):
///  - `segments_forward` ("<kernel>_grad_fwd"): the forward as written (its outputs stored), the
///    carried state also stored at the start of every segment of SEG steps into the caller's
///    `ck__<type>` tensor: the training forward.
///  - `segments_linearize` ("<kernel>_grad_lin"): one program per lane block and segment. It
///    starts from its segment's checkpoint, tapes the segment's states into the caller's
///    `tp__<type>` tensor and runs the segment's reverse steps for NV + 1 seeds at once
///    (NV carried values): the segment's adjoint recursion is affine in the adjoint of the state
///    after it, lambda_start = A lambda_end + b, and it stores A (the NV unit seeds, no loss)
///    and b (the loss, lambda_end = 0) per lane into the caller's `ln__<type>` tensor.
///  - `segments_finish` ("<kernel>_grad_seg"): the same grid; each program applies the later
///    segments' maps to get its lambda_end, then undoes its segment from the tape with it, adding
///    every gradient (inputs read before the loop by atomics, as every segment adds its share).
/// The reverse then takes about two segments' time, not T reverse steps (with more work: one
/// reverse per carried value and segment more, which pays where lanes alone leave the GPU idle).
///  - `segments_checkpointed` ("<kernel>_grad_ck"): the whole gradient in one kernel per lane
///    block, as `whole`, but with the training forward's segment starts as its checkpoints
///    (every SEG steps, the caller's `ck__<type>` tensor): no forward pass of its own, and no
///    memory beyond one segment's tape. For shapes whose lanes fill the GPU, where the segment
///    form's extra reverses cost more than they save.
enum class GradientForm {
  whole,
  segments_forward,
  segments_linearize,
  segments_finish,
  segments_checkpointed
};

struct GradientOptions {
  GradientForm form = GradientForm::whole;
  /// Tensor parameters to differentiate; empty: every floating-point tensor the kernel only reads.
  std::vector<std::string> wrt;
  /// The derived kernel's name; empty: "<kernel>_grad" (segment form: "_grad_fwd", "_grad_lin",
  /// "_grad_seg", "_grad_ck").
  std::string name;
};

struct GradientKernel {
  std::string name;                 ///< the derived kernel's name
  std::string source;               ///< its DSL text, one kernel
  std::vector<std::string> wrt;     ///< differentiated inputs: the kernel takes d_<X> for each
  std::vector<std::string> outputs; ///< stored outputs: the kernel takes d_<O> for each
};

/// Derives the gradient kernel of `kernel` (parsed from `source_path`, for the comments that map
/// the derived lines back). Throws dsl::CompileError at the construct it cannot differentiate,
/// saying what is supported.
GradientKernel derive_gradient(const dsl::Kernel& kernel, const GradientOptions& options = {});

/// The derived kernel's parameters, after the forward kernel's own: `d_<O>` (the loss's weights,
/// shaped as O) for each output, then `d_<X>` (f32, shaped as X; gradients are added, so the
/// caller zeroes them) for each differentiated input.
std::string gradient_param_name(const std::string& tensor);

} // namespace tilejit::autodiff
