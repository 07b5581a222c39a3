// hbv's DSL kernels (kernels_src/workloads/hbv.tile) against the float64 reference
// (workloads/hbv_reference.h), on the interpreter or the GPU (KernelRunner).
#pragma once

#include "kernel_runner.h"
#include "workloads/hbv_reference.h"

#include <cstdint>
#include <functional>
#include <string>

namespace tilejit::test {

/// hbv_forward on B basins over T days, random inputs from WORKLOADS.md's ranges (fresh seed),
/// Q poisoned first: every element must be finite and Q within 1e-4 (norm-relative) of the
/// float64 reference run on the same f32-rounded inputs.
void check_hbv_forward(const KernelRunner& run, int64_t b, int64_t t, const Bindings& config);

/// hbv_forward_grad, the kernel the compiler's reverse mode derives from hbv_forward
/// ("grad:embedded:workloads/hbv.tile"), on random inputs and loss weights dQ: the gradients of
/// sum(dQ * Q) for the 12 parameters and the three forcings against the hand-written float64
/// adjoint (workloads/hbv_reference.h). The gradient buffers start at random values (the kernel
/// adds to them), so an element left alone or added twice fails; `tol` is norm-relative over
/// each whole gradient and over each basin's parameters.
/// `edit`, when given, changes the random inputs first (parameters at their ranges' edges...).
/// `f32_branches`: the reference takes the branches an f32 run of the kernel's operations takes
/// (workloads::hbv_decisions_f32, the interpreter's rounding), and every basin is compared;
/// otherwise it takes float64's own, and basins near a tie are left out.
/// With SEG in `config`, the segment form runs instead (reverse_mode.h): hbv_forward_grad_fwd
/// (its Q checked too), hbv_forward_grad_lin, then hbv_forward_grad_seg, their tensors poisoned
/// first; with ON_STARTS too (a key of this test's), hbv_forward_grad_ck on the forward's starts
/// instead of those two.
void check_hbv_gradient(const KernelRunner& run, int64_t b, int64_t t, const Bindings& config,
                        double tol = 1e-3,
                        const std::function<void(workloads::HbvInputs&)>& edit = nullptr,
                        bool f32_branches = false);

/// hbv_forward_nmul (NM components per basin, Q their mean) and its derived backward on B
/// basins over T days against the float64 reference run on the B * NM models (each basin's
/// forcings, the component's parameters): Q, then the gradients of sum(dQ * Q) for the
/// parameters [B, 12, NM] and the forcings (summed over the components). `form`: "forward" (Q
/// only), "whole" (hbv_forward_nmul_grad, CK in `config`), "ck" (the training forward's starts
/// every SEG days, then hbv_forward_nmul_grad_ck) or "segments" (_grad_fwd, _grad_lin,
/// _grad_seg). Outputs and the caller's tensors poisoned; gradients start at random values.
/// The reference follows f32's branches (every model compared).
void check_hbv_nmul(const KernelRunner& run, int64_t b, int64_t t, int64_t nm,
                    const Bindings& config, const std::string& form, double tol = 1e-3);

} // namespace tilejit::test
