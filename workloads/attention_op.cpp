// tilejit::ops::attention_forward and attention_backward (<tilejit/ops.h>): the attention
// kernels (kernels_src/workloads/attention.tile) on an application's tensors. The checks come
// first and name the tensor; the launches are the Runtime's (tuned configurations).
#include "support/error.h"
#include "workloads/attention_tiles.h"
#include "workloads/op_buffers.h"
#include "workloads/op_checks.h"

#include <tilejit/ops.h>

#include <cmath>

namespace tilejit::ops {
namespace {

const char* const kSource = "embedded:workloads/attention.tile";
const OpChecks forward_checks("attention_forward");
const OpChecks backward_checks("attention_backward");

/// The kernels' tile width: the head dim rounded up to 16.
int64_t tile_of(int64_t head_dim) {
  return (head_dim + 15) / 16 * 16;
}
std::string tile_width(int64_t head_dim) {
  return std::to_string(tile_of(head_dim));
}

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

/// Block lists: dtypes, ranks, a mask per batch / head or broadcast, NB = cdiv(N, block).
void check_blocks(const OpChecks& c, const AttentionBlocks& b, const Tensor& q) {
  const int64_t block = b.block;
  if (block != 16 && block != 32 && block != 64 && block != 128)
    throw Error(
        str(c.named("block_counts", b.counts), ": block = ", block, " is not 16, 32, 64 or 128"));
  const int64_t nb = (q.shape[2] + block - 1) / block;
  c.rank_and_dtype("block_counts", b.counts, 3, {DType::I32}, "[MB, MH, NB] i32");
  c.rank_and_dtype("block_indices", b.indices, 4, {DType::I32}, "[MB, MH, NB, NB] i32");
  const char* names[2] = {"block_counts", "block_indices"};
  const Tensor* ts[2] = {&b.counts, &b.indices};
  for (int i = 0; i < 2; ++i) {
    const Tensor& t = *ts[i];
    if (t.shape[0] != 1 && t.shape[0] != q.shape[0])
      throw Error(str(c.named(names[i], t), " has ", t.shape[0],
                      " in dimension 0 but must have 1 or q's batch B = ", q.shape[0]));
    if (t.shape[1] != 1 && t.shape[1] != q.shape[1])
      throw Error(str(c.named(names[i], t), " has ", t.shape[1],
                      " in dimension 1 but must have 1 or q's heads Hq = ", q.shape[1]));
    c.size(names[i], t, 2, nb, str("cdiv(N, block) = cdiv(", q.shape[2], ", ", block, ")").c_str());
  }
  c.size("block_indices", b.indices, 0, b.counts.shape[0], "block_counts'");
  c.size("block_indices", b.indices, 1, b.counts.shape[1], "block_counts'");
  c.size("block_indices", b.indices, 3, nb, "cdiv(N, block)");
}

/// The case workloads/attention_tiles.h chooses tiles for.
workloads::AttentionTileCase tile_case(const Tensor& q, bool causal,
                                       const std::optional<AttentionBlocks>& blocks) {
  return {q.dtype, tile_of(q.shape[3]), causal, q.shape[2], blocks ? blocks->block : 0};
}

/// Whether the tiles measured on Hopper apply here: a Hopper GPU (cc 9.x: the tiles lean on
/// wgmma and on its 227 KB of shared memory per block) and a case they were measured for.
bool hopper_tiles(Runtime& rt, const workloads::AttentionTileCase& c) {
  return rt.has_gpu() && rt.device().cc_major == 9 && workloads::hopper_tiles_apply(c);
}

Config kernel_config(const Config& user, const Tensor& q, bool causal, bool exact) {
  Config cfg = user;
  cfg["D"] = tile_width(q.shape[3]);
  cfg["CAUSAL"] = causal ? "1" : "0";
  cfg["EXACT"] = exact ? "1" : "0";
  return cfg;
}

} // namespace

void check_attention_forward(const AttentionForwardArgs& a) {
  const OpChecks& c = forward_checks;
  check_qkv(c, a.q, a.k, a.v);
  if (a.o) check_like(c, "o", *a.o, a.q, "q's shape and dtype");
  if (a.lse) check_lse(c, *a.lse, a.q);
  if (a.blocks) check_blocks(c, *a.blocks, a.q);
  scale_of(c, a.scale, a.q);
  c.on_one_gpu({{"q", &a.q},
                {"k", &a.k},
                {"v", &a.v},
                {"o", a.o ? &*a.o : nullptr},
                {"lse", a.lse ? &*a.lse : nullptr},
                {"block_counts", a.blocks ? &a.blocks->counts : nullptr},
                {"block_indices", a.blocks ? &a.blocks->indices : nullptr}});
}

AttentionForwardResult attention_forward(Runtime& rt, const AttentionForwardArgs& a) {
  check_attention_forward(a);
  AttentionForwardResult out;
  const Tensor& q = a.q;
  auto owned = std::make_shared<OwnedBuffers>();
  out.o = a.o ? *a.o : owned->allocate(q.dtype, q.shape, q.device_index);
  out.lse = a.lse
                ? *a.lse
                : owned->allocate(DType::F32, {q.shape[0], q.shape[1], q.shape[2]}, q.device_index);
  if (!owned->buffers.empty()) out.storage = owned;
  if (q.numel() == 0) return out; // no query: nothing to compute
  static const std::string source = kSource;
  LaunchOptions lo;
  lo.stream = a.stream;
  lo.config = kernel_config(a.config, q, a.causal, a.exact);
  // Where nothing was tuned, the tile measured fastest on this kind of GPU and shape.
  const workloads::AttentionTileCase tiles = tile_case(q, a.causal, a.blocks);
  if (hopper_tiles(rt, tiles)) lo.fallback = workloads::forward_tile(tiles);
  const Arg scale = Arg::f32(static_cast<float>(scale_of(forward_checks, a.scale, q)));
  if (a.blocks) {
    lo.config["BLK"] = std::to_string(a.blocks->block);
    rt.launch(rt.load(source, "attn_fwd_sparse"),
              {Arg::of(q), Arg::of(a.k), Arg::of(a.v), Arg::of(a.blocks->counts),
               Arg::of(a.blocks->indices), Arg::of(out.o), Arg::of(out.lse), scale},
              lo);
    return out;
  }
  rt.launch(rt.load(source, "attn_fwd"),
            {Arg::of(q), Arg::of(a.k), Arg::of(a.v), Arg::of(out.o), Arg::of(out.lse), scale}, lo);
  return out;
}

void check_attention_backward(const AttentionBackwardArgs& a) {
  const OpChecks& c = backward_checks;
  check_qkv(c, a.q, a.k, a.v);
  check_like(c, "o", a.o, a.q, "q's shape and dtype");
  check_lse(c, a.lse, a.q);
  check_like(c, "dout", a.dout, a.q, "o's shape and dtype");
  if (a.dq) check_like(c, "dq", *a.dq, a.q, "q's shape and dtype");
  if (a.dk) check_like(c, "dk", *a.dk, a.k, "k's shape and dtype");
  if (a.dv) check_like(c, "dv", *a.dv, a.v, "v's shape and dtype");
  if (a.blocks) check_blocks(c, *a.blocks, a.q);
  scale_of(c, a.scale, a.q);
  if (auto forced = a.config.find("ATOMIC_DQ"); forced != a.config.end()) {
    if (forced->second != "0" && forced->second != "1")
      throw Error(str("attention_backward: config ATOMIC_DQ=", forced->second,
                      " is not 0 (dq by attn_dq) or 1 (dq by atomics)"));
    if (a.blocks && forced->second == "0")
      throw Error("attention_backward: config ATOMIC_DQ=0 (dq by attn_dq) is for dense "
                  "attention; block-sparse takes dq by atomics");
  }
  c.on_one_gpu({{"q", &a.q},
                {"k", &a.k},
                {"v", &a.v},
                {"o", &a.o},
                {"lse", &a.lse},
                {"dout", &a.dout},
                {"dq", a.dq ? &*a.dq : nullptr},
                {"dk", a.dk ? &*a.dk : nullptr},
                {"dv", a.dv ? &*a.dv : nullptr},
                {"block_counts", a.blocks ? &a.blocks->counts : nullptr},
                {"block_indices", a.blocks ? &a.blocks->indices : nullptr}});
}

AttentionBackwardResult attention_backward(Runtime& rt, const AttentionBackwardArgs& a) {
  check_attention_backward(a);
  AttentionBackwardResult out;
  const Tensor &q = a.q, &k = a.k;
  const int device = q.device_index;
  auto owned = std::make_shared<OwnedBuffers>();
  out.dq = a.dq ? *a.dq : owned->allocate(q.dtype, q.shape, device);
  out.dk = a.dk ? *a.dk : owned->allocate(k.dtype, k.shape, device);
  out.dv = a.dv ? *a.dv : owned->allocate(k.dtype, k.shape, device);
  if (!owned->buffers.empty()) out.storage = owned;
  if (q.numel() == 0) return out;
  // dq by atomics into an f32 accumulator from attn_bwd, or by attn_dq (no atomics, no
  // accumulator, two more products): the faster on Hopper per workloads/attention_tiles.h, or
  // what the caller forced with ATOMIC_DQ in `config`.
  const workloads::AttentionTileCase tiles = tile_case(q, a.causal, a.blocks);
  const bool hopper = hopper_tiles(rt, tiles);
  bool atomic_dq = !(hopper && workloads::dq_by_kernel(tiles));
  if (auto forced = a.config.find("ATOMIC_DQ"); forced != a.config.end())
    atomic_dq = forced->second == "1"; // 0 or 1: check_attention_backward saw to it
  // Work buffers for this call: delta = rowsum(o * dout), and dq's f32 accumulator (atomics).
  OwnedBuffers work;
  Tensor delta = work.allocate(DType::F32, {q.shape[0], q.shape[1], q.shape[2]}, device);
  // Without atomics the kernels still take dq_acc's parameter but never touch it: a view of
  // delta's first element with every stride 0 stands in, not 4 bytes per element of q.
  Tensor dq_acc = atomic_dq ? work.allocate(DType::F32, q.shape, device) : [&] {
    Tensor unused = delta;
    unused.shape = q.shape;
    unused.strides = {0, 0, 0, 0};
    return unused;
  }();
  const std::string dq_generic = atomic_dq ? "1" : "0";
  static const std::string source = kSource;
  KernelRef pre = rt.load(source, "attn_bwd_pre");
  KernelRef finish = rt.load(source, "attn_bwd_dq");
  LaunchOptions lo;
  lo.stream = a.stream;
  lo.config = {{"D", tile_width(q.shape[3])}, {"ATOMIC_DQ", dq_generic}};
  rt.launch(pre, {Arg::of(a.o), Arg::of(a.dout), Arg::of(delta), Arg::of(dq_acc)}, lo);
  LaunchOptions main_lo = lo;
  main_lo.config = kernel_config(a.config, q, a.causal, a.exact);
  if (hopper) main_lo.fallback = workloads::backward_tile(tiles);
  const Arg scale = Arg::f32(static_cast<float>(scale_of(backward_checks, a.scale, q)));
  if (a.blocks) {
    main_lo.config["BLK"] = std::to_string(a.blocks->block);
    main_lo.config.erase("ATOMIC_DQ"); // attn_bwd_sparse always adds dq by atomics
    rt.launch(rt.load(source, "attn_bwd_sparse"),
              {Arg::of(q), Arg::of(k), Arg::of(a.v), Arg::of(a.dout), Arg::of(a.lse),
               Arg::of(delta), Arg::of(a.blocks->counts), Arg::of(a.blocks->indices),
               Arg::of(out.dk), Arg::of(out.dv), Arg::of(dq_acc), scale},
              main_lo);
  } else {
    main_lo.config["ATOMIC_DQ"] = dq_generic;
    rt.launch(rt.load(source, "attn_bwd"),
              {Arg::of(q), Arg::of(k), Arg::of(a.v), Arg::of(a.dout), Arg::of(a.lse),
               Arg::of(delta), Arg::of(out.dk), Arg::of(out.dv), Arg::of(dq_acc), scale},
              main_lo);
  }
  if (atomic_dq) {
    lo.config.erase("ATOMIC_DQ");
    rt.launch(finish, {Arg::of(dq_acc), Arg::of(out.dq)}, lo);
  } else {
    LaunchOptions dq_lo;
    dq_lo.stream = a.stream;
    dq_lo.config = kernel_config({}, q, a.causal, a.exact);
    if (hopper) dq_lo.fallback = workloads::dq_kernel_tile(tiles);
    rt.launch(rt.load(source, "attn_dq"),
              {Arg::of(q), Arg::of(k), Arg::of(a.v), Arg::of(a.dout), Arg::of(a.lse),
               Arg::of(delta), Arg::of(out.dq), scale},
              dq_lo);
  }
  // The work buffers are freed here, after the launches are queued: cuMemFree waits for the
  // device to finish with them.
  return out;
}

} // namespace tilejit::ops
