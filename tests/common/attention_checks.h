// The attention kernels (kernels_src/workloads/attention.tile) on fresh random inputs, every
// element of o and lse against a float64 reference, outputs poisoned first. Each check takes
// the runner to use (interpreter or GPU).
#pragma once

#include "kernel_runner.h"

#include <tilejit/tilejit.h>

#include <cstdint>
#include <functional>
#include <string>

namespace tilejit::test {

/// attn_fwd: q [B, HQ, N, DH], k and v [B, HKV, N, DH] (GQA: HQ a multiple of HKV), scale
/// 1/sqrt(DH); o and lse against float64 (relative error of o: 1e-2 for 16-bit inputs, 5e-3
/// for f32 through TF32, 1e-5 exact; lse: 2e-3, 3e-3, 1e-5 absolute). The tile width D is DH
/// rounded up to 16.
/// Ring attention (workloads/ring_attention.h) with `world` ranks simulated in turn on `run`: a
/// sequence of 2 * world * chunk positions split zigzag, each rank's query chunks against the
/// key/value chunks its ring steps hold (attn_fwd per block, causal on the diagonal) merged by
/// attn_merge; with `backward`, attn_bwd_pre per query chunk, attn_bwd per block (dq by
/// atomics into its query chunk's accumulator), each block's dk and dv added into its key
/// chunk's f32 sum by attn_add, dq by attn_bwd_dq. Outputs and partials poisoned first; o, lse
/// (and dq, dk, dv) of every chunk against the float64 attention of the whole sequence, with
/// check_attention_fwd's and check_attention_bwd's tolerances.
void check_ring_attention(const KernelRunner& run, DType t, int64_t b, int64_t hq, int64_t hkv,
                          int64_t chunk, int64_t dh, int world, bool causal, bool backward,
                          const Bindings& config);

/// Device tensors of one attention call: inputs q, k, v, dout drawn at random, outputs o, lse,
/// dq, dk, dv poisoned.
struct AttentionOpTensors {
  Tensor q, k, v, dout, o, lse, dq, dk, dv;
};
/// Uploads fresh random inputs and poisoned outputs on `rt`'s GPU, lets `call` compute o, lse,
/// dq, dk and dv into them (an op's forward and backward), and checks every element against
/// the float64 attention and gradients (scale 1/sqrt(dh)), with check_ring_attention's
/// tolerances. `what` names the call in failures.
void check_attention_ops(Runtime& rt, DType t, int64_t b, int64_t hq, int64_t hkv, int64_t n,
                         int64_t dh, bool causal, const std::string& what,
                         const std::function<void(const AttentionOpTensors&)>& call);

/// The C++ ring op (tilejit::ops::ring_attention_forward/backward) on a RingGroup of one rank
/// on `rt`'s GPU (NCCL with no transfers): a sequence of 2 * chunk positions against the
/// float64 attention and gradients, outputs poisoned first, the tolerances of
/// check_ring_attention. Needs a GPU and NCCL (TILEJIT_NCCL_LIBRARY).
void check_ring_op_of_one(Runtime& rt, DType t, int64_t b, int64_t hq, int64_t hkv, int64_t chunk,
                          int64_t dh, bool causal);

void check_attention_fwd(const KernelRunner& run, DType t, int64_t b, int64_t hq, int64_t hkv,
                         int64_t n, int64_t dh, bool causal, bool exact, const Bindings& config);

/// attn_fwd_sparse: attn_fwd's check over a random block mask of BLK x BLK blocks (the diagonal
/// and each other block with probability `density`; mask_b / mask_h: one mask per batch / head, or
/// 1 broadcast), given to the kernel as shuffled per-row lists, with one query block per mask row
/// dropping every key block: its rows (and, causal, any row whose kept blocks all follow it) must
/// come out exactly o = 0, lse = -inf.
void check_attention_sparse_fwd(const KernelRunner& run, DType t, int64_t b, int64_t hq,
                                int64_t hkv, int64_t n, int64_t dh, int64_t blk, int64_t mask_b,
                                int64_t mask_h, double density, bool causal,
                                const Bindings& config);

/// attn_bwd_pre, attn_bwd and attn_bwd_dq on fresh q, k, v and dout, with o and lse from a
/// float64 forward (o rounded to the inputs' dtype): dq, dk and dv (dk and dv summed over each
/// GQA group) against float64 gradients (relative error 3e-2 for 16-bit inputs, 1e-2 for
/// TF32, 1e-4 exact). `config` is forced on attn_bwd (the other two take their defaults).
void check_attention_bwd(const KernelRunner& run, DType t, int64_t b, int64_t hq, int64_t hkv,
                         int64_t n, int64_t dh, bool causal, bool exact, const Bindings& config);

/// The same gradients by the workload's "dq_kernel" plan: attn_bwd_pre and attn_bwd with
/// ATOMIC_DQ = 0 (dq_acc is poisoned and must stay unread), then attn_dq; `config` is forced
/// on attn_bwd and attn_dq.
void check_attention_bwd_dq_kernel(const KernelRunner& run, DType t, int64_t b, int64_t hq,
                                   int64_t hkv, int64_t n, int64_t dh, bool causal, bool exact,
                                   const Bindings& config);

/// attn_bwd_pre, attn_bwd_sparse and attn_bwd_dq over a random block mask as in
/// check_attention_sparse_fwd (the kernel takes the per-key-block lists): dq, dk and dv against
/// float64 gradients of the masked attention, and dq exactly 0 on rows that see no key.
/// dq_kernel: the "dq_kernel" plan instead, attn_bwd_sparse without atomics and dq by
/// attn_dq_sparse (the forward's per-query-block lists); `config` is both kernels' tile.
void check_attention_sparse_bwd(const KernelRunner& run, DType t, int64_t b, int64_t hq,
                                int64_t hkv, int64_t n, int64_t dh, int64_t blk, int64_t mask_b,
                                int64_t mask_h, double density, bool causal, const Bindings& config,
                                bool dq_kernel = false);

} // namespace tilejit::test
