// What the attention ops share (attention_op.cpp, ring_attention_op.cpp): the argument checks
// that name the tensor, the kernels' tile width and generics, and the Hopper tiles' fallback.
#pragma once

#include "workloads/attention_tiles.h"
#include "workloads/op_checks.h"
#include "workloads/op_plan.h"

#include <tilejit/ops.h>
#include <tilejit/tilejit.h>

#include <optional>
#include <string>

namespace tilejit::ops::attention_detail {

inline const char* const kSource = "embedded:workloads/attention.tile";

/// The kernels' tile width: the head dim rounded up to 16.
inline int64_t tile_of(int64_t head_dim) {
  return (head_dim + 15) / 16 * 16;
}
inline std::string tile_width(int64_t head_dim) {
  return std::to_string(tile_of(head_dim));
}

/// q, k, v: ranks, dtypes, GQA, head dims, rows dense.
void check_qkv(const OpChecks& c, const Tensor& q, const Tensor& k, const Tensor& v);
/// `t` has `like`'s rank, dtype and shape, rows dense.
void check_like(const OpChecks& c, const char* name, const Tensor& t, const Tensor& like,
                const char* like_name);
/// lse is f32 [B, Hq, N] like q's first three dimensions, dense.
void check_lse(const OpChecks& c, const Tensor& lse, const Tensor& q);
/// The backward's o, lse, dout and the given gradients, each like the tensor it mirrors (q, k).
void check_backward_like(const OpChecks& c, const Tensor& q, const Tensor& k, const Tensor& o,
                         const Tensor& lse, const Tensor& dout, const std::optional<Tensor>& dq,
                         const std::optional<Tensor>& dk, const std::optional<Tensor>& dv);
/// The given scale (finite, >= 0) or 1 / sqrt(D).
double scale_of(const OpChecks& c, const std::optional<double>& scale, const Tensor& q);

/// The case workloads/attention_tiles.h chooses tiles for (`n` the kernel's sequence length).
workloads::AttentionTileCase tile_case(const Tensor& q, bool causal, int64_t n, int64_t block);
/// Whether the tiles measured on Hopper apply here: a Hopper GPU (cc 9.x: the tiles lean on
/// wgmma and on its 227 KB of shared memory per block) and a case they were measured for.
bool hopper_tiles(Runtime& rt, const workloads::AttentionTileCase& c);
/// The plan (workloads/attention_workload.cpp: "atomic_dq" or "dq_kernel") the runtime's
/// tuning database chose for dense attention of q's and k's shape, or nullopt (none chosen).
std::optional<workloads::TunedPlan> tuned_plan(Runtime& rt, const Tensor& q, const Tensor& k,
                                               bool causal, bool exact);
/// The forward's and backward's generics (D, CAUSAL, EXACT) over the caller's forced values.
Config kernel_config(const Config& user, const Tensor& q, bool causal, bool exact);

} // namespace tilejit::ops::attention_detail
