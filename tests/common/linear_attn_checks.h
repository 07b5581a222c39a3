// gated_delta's linear attention kernel (kernels_src/workloads/gated_delta.tile, linear_attn)
// on fresh random inputs, every output element against a float64 reference, outputs poisoned
// first. Each check takes the runner to use (interpreter or GPU).
#pragma once

#include "kernel_runner.h"

#include <cstdint>

namespace tilejit::test {

/// linear_attn: q, k [B, NT, H, KH], v [B, NT, H, VH], scale 1/sqrt(KH); o = scale * sum over
/// s <= t (REV: s >= t) of (q_t . k_s) v_s against float64 (relative error 2e-2: 16-bit inputs
/// and the state rounded to them for the tensor cores). `config` is forced on the kernel.
void check_linear_attn(const KernelRunner& run, DType t, int64_t b, int64_t nt, int64_t h,
                       int64_t kh, int64_t vh, bool rev, const Bindings& config);

/// The backward as the workload runs it, launches of linear_attn with exchanged operands:
/// dq = la(do, v, k), dv = la_rev(k, q, do), dk = la_rev(v, do, q), or with `fused_config`
/// dk and dv from one launch of linear_attn_bwd_kv in that configuration; dq, dk and dv
/// against float64 gradients of sum(do * o) taken from the definition (relative error 2e-2).
void check_linear_attn_backward(const KernelRunner& run, DType t, int64_t b, int64_t nt, int64_t h,
                                int64_t kh, int64_t vh, const Bindings& config,
                                const Bindings* fused_config = nullptr);

/// gated_delta_recurrent: q, k [B, NT, H, KH], v [B, NT, H, VH], g (log decay in [-0.5, 0))
/// and beta (in (0.05, 0.95)) f32 [B, NT, H], h0 [B, H, KH, VH] when `with_h0`; o and the final
/// state ht against a float64 recurrence (relative error 2e-2). `norm`: q and k L2-normalised
/// in the kernel (else k drawn small enough, |k|^2 <= 1, for the rule to stay stable).
void check_gated_delta_recurrent(const KernelRunner& run, DType t, int64_t b, int64_t nt, int64_t h,
                                 int64_t kh, int64_t vh, bool norm, bool with_h0,
                                 const Bindings& config);

/// The chunked form, as the workload runs it: gated_delta_prepare (w, u, the cumulative g, and
/// q's and k's reciprocal norms when `norm`) then gated_delta_chunk (the chunks in order) with
/// chunk size `chunk`, each kernel's own configuration forced; the same inputs and float64
/// recurrence as check_gated_delta_recurrent (relative error 2e-2), intermediates poisoned
/// first.
void check_gated_delta_chunked(const KernelRunner& run, DType t, int64_t b, int64_t nt, int64_t h,
                               int64_t kh, int64_t vh, bool norm, bool with_h0, int64_t chunk,
                               const Bindings& prepare_config, const Bindings& chunk_config);

/// The rule's backward, step 1 (gated_delta_bwd_state, after gated_delta_prepare): the state
/// gradients it carries, dh at every chunk's end and dh0, against the float64 reverse of the
/// recurrence (workloads/gated_delta_reference.h), for a random dout and (`with_dht`) dht
/// (relative error 2e-2).
void check_gated_delta_bwd_state(const KernelRunner& run, DType t, int64_t b, int64_t nt, int64_t h,
                                 int64_t kh, int64_t vh, bool norm, bool with_dht, int64_t chunk,
                                 const Bindings& config);

/// The rule's whole backward as the workload will run it: gated_delta_prepare, gated_delta_chunk
/// saving the chunk states, gated_delta_bwd_state, then gated_delta_bwd_chunk (`config`
/// forced); dq, dk, dv, dg, dbeta and dh0 against the float64 reverse of the recurrence for a
/// random dout and (`with_dht`) dht (relative error 3e-2: 16-bit products of gradients).
void check_gated_delta_backward(const KernelRunner& run, DType t, int64_t b, int64_t nt, int64_t h,
                                int64_t kh, int64_t vh, bool norm, bool with_h0, bool with_dht,
                                int64_t chunk, const Bindings& config);

} // namespace tilejit::test
