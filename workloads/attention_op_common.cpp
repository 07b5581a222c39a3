// What the attention ops share (attention_op_common.h).
#include "workloads/attention_op_common.h"

#include "support/error.h"
#include "workloads/attention_workload.h"

#include <cmath>

namespace tilejit::ops::attention_detail {

/// q, k, v: ranks, dtypes, GQA, head dims, rows dense, one GPU.
void check_qkv(const OpChecks& c, const Tensor& q, const Tensor& k, const Tensor& v) {
  c.rank_and_dtype("q", q, 4, {DType::F16, DType::BF16, DType::F32}, "[B, Hq, N, D]");
  c.rank_and_dtype("k", k, 4, {q.dtype}, "[B, Hkv, N, D], q's dtype");
  c.rank_and_dtype("v", v, 4, {q.dtype}, "[B, Hkv, N, D], q's dtype");
  const int64_t d = q.shape[3];
  if (d % 8 != 0 || d < 8 || d > 256)
    throw Error(
        str(c.named("q", q), ": head dim D = ", d, " is not a multiple of 8 from 8 to 256"));
  c.size("k", k, 0, q.shape[0], "q's batch B");
  c.size("k", k, 2, q.shape[2], "q's sequence length N");
  c.size("k", k, 3, d, "q's head dim D");
  if (k.shape[1] < 1 || q.shape[1] % k.shape[1] != 0)
    throw Error(str(c.named("k", k), " has ", k.shape[1], " heads, which do not divide q's ",
                    q.shape[1], " (GQA: Hq must be a multiple of Hkv)"));
  for (int dim = 0; dim < 4; ++dim) c.size("v", v, dim, k.shape[dim], "k's");
  for (const auto& [name, t] :
       {std::pair<const char*, const Tensor*>{"q", &q}, {"k", &k}, {"v", &v}})
    c.rows_dense(name, *t);
}

void check_like(const OpChecks& c, const char* name, const Tensor& t, const Tensor& like,
                const char* like_name) {
  c.rank_and_dtype(name, t, 4, {like.dtype}, like_name);
  for (int dim = 0; dim < 4; ++dim) c.size(name, t, dim, like.shape[dim], like_name);
  c.rows_dense(name, t);
}

void check_lse(const OpChecks& c, const Tensor& lse, const Tensor& q) {
  c.rank_and_dtype("lse", lse, 3, {DType::F32}, "[B, Hq, N] f32");
  for (int dim = 0; dim < 3; ++dim) c.size("lse", lse, dim, q.shape[dim], "q's");
  c.contiguous("lse", lse);
}

void check_backward_like(const OpChecks& c, const Tensor& q, const Tensor& k, const Tensor& o,
                         const Tensor& lse, const Tensor& dout, const std::optional<Tensor>& dq,
                         const std::optional<Tensor>& dk, const std::optional<Tensor>& dv) {
  check_like(c, "o", o, q, "q's shape and dtype");
  check_lse(c, lse, q);
  check_like(c, "dout", dout, q, "o's shape and dtype");
  if (dq) check_like(c, "dq", *dq, q, "q's shape and dtype");
  if (dk) check_like(c, "dk", *dk, k, "k's shape and dtype");
  if (dv) check_like(c, "dv", *dv, k, "v's shape and dtype");
}

double scale_of(const OpChecks& c, const std::optional<double>& scale, const Tensor& q) {
  if (!scale) return 1.0 / std::sqrt(static_cast<double>(q.shape[3]));
  if (!std::isfinite(*scale))
    throw Error(str(c.named("q", q), ": scale = ", *scale, " is not a finite number"));
  // The forward folds the scale into exp2 after taking each row's max of the raw scores,
  // which is the max of the scaled ones only for a scale >= 0.
  if (*scale < 0)
    throw Error(str(c.named("q", q), ": scale = ", *scale,
                    " is negative (the kernels take a scale >= 0; negate q instead)"));
  return *scale;
}

workloads::AttentionTileCase tile_case(const Tensor& q, bool causal, int64_t n, int64_t block) {
  return {q.dtype, tile_of(q.shape[3]), causal, n, block};
}

/// Whether the tiles measured on Hopper apply here: a Hopper GPU (cc 9.x: the tiles lean on
/// wgmma and on its 227 KB of shared memory per block) and a case they were measured for.
bool hopper_tiles(Runtime& rt, const workloads::AttentionTileCase& c) {
  return rt.has_gpu() && rt.device().cc_major == 9 && workloads::hopper_tiles_apply(c);
}

std::optional<workloads::TunedPlan> tuned_plan(Runtime& rt, const Tensor& q, const Tensor& k,
                                               bool causal, bool exact) {
  // The workload's problem of this shape: its plan choice's key is what `tune` stored under.
  workloads::AttentionShape s;
  s.batch = q.shape[0];
  s.heads_q = q.shape[1];
  s.heads_kv = k.shape[1];
  s.seq = q.shape[2];
  s.head_dim = q.shape[3];
  s.causal = causal;
  s.exact = exact && q.dtype == DType::F32;
  s.dtype = q.dtype;
  return workloads::tuned_plan(rt, "attention", s.describe(),
                               [&] { return workloads::make_attention_problem(s); });
}

Config kernel_config(const Config& user, const Tensor& q, bool causal, bool exact) {
  Config cfg = user;
  cfg["D"] = tile_width(q.shape[3]);
  cfg["CAUSAL"] = causal ? "1" : "0";
  cfg["EXACT"] = exact ? "1" : "0";
  return cfg;
}

} // namespace tilejit::ops::attention_detail
