// tilejit::ops::attention_forward and attention_backward (<tilejit/ops.h>): the attention
// kernels (kernels_src/workloads/attention.tile) on an application's tensors. The checks come
// first and name the tensor; the launches are the Runtime's (tuned configurations).
#include "support/error.h"
#include "workloads/attention_op_common.h"
#include "workloads/op_buffers.h"
#include "workloads/op_checks.h"

#include <tilejit/ops.h>

#include <cmath>

namespace tilejit::ops {
namespace {

using namespace attention_detail;

const OpChecks forward_checks("attention_forward");
const OpChecks backward_checks("attention_backward");

/// Block lists: dtypes, ranks, a mask per batch / head or broadcast, NB = cdiv(N, block).
/// `names`: the lists' names in errors (the backward's forward_blocks have their own).
void check_blocks(const OpChecks& c, const AttentionBlocks& b, const Tensor& q,
                  const char* const (&names)[2] = {"block_counts", "block_indices"}) {
  const int64_t block = b.block;
  if (block != 16 && block != 32 && block != 64 && block != 128)
    throw Error(str(c.named(names[0], b.counts), ": block = ", block, " is not 16, 32, 64 or 128"));
  const int64_t nb = (q.shape[2] + block - 1) / block;
  c.rank_and_dtype(names[0], b.counts, 3, {DType::I32}, "[MB, MH, NB] i32");
  c.rank_and_dtype(names[1], b.indices, 4, {DType::I32}, "[MB, MH, NB, NB] i32");
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
  const std::string counts_own = str(names[0], "'");
  c.size(names[1], b.indices, 0, b.counts.shape[0], counts_own.c_str());
  c.size(names[1], b.indices, 1, b.counts.shape[1], counts_own.c_str());
  c.size(names[1], b.indices, 3, nb, "cdiv(N, block)");
}

/// The work list (ops.h: AttentionItems): dtypes, ranks, 8 columns, at least one program; with
/// the block lists it stands for. (Its rows are the list builder's; out-of-range ones read
/// zeros and write nothing.)
void check_items(const OpChecks& c, const AttentionForwardArgs& a) {
  const AttentionItems& w = *a.items;
  if (!a.blocks)
    throw Error(str(c.named("block_items", w.items),
                    ": a work list is given without the block lists it was built from "
                    "(block_counts, block_indices)"));
  c.rank_and_dtype("block_items", w.items, 2, {DType::I32}, "[E, 8] i32");
  c.size("block_items", w.items, 1, 8, "8 (b, h, hk, m0, j, tile, 0, 0)");
  c.rank_and_dtype("block_bounds", w.bounds, 1, {DType::I32}, "[P + 1] i32");
  if (w.bounds.shape[0] < 2)
    throw Error(str(c.named("block_bounds", w.bounds),
                    " must hold at least 2 entries (one program's start and end)"));
}

/// The case the tiles are chosen for: the whole sequence, and the block lists' block.
workloads::AttentionTileCase tile_case(const Tensor& q, bool causal,
                                       const std::optional<AttentionBlocks>& blocks) {
  return attention_detail::tile_case(q, causal, q.shape[2], blocks ? blocks->block : 0);
}

} // namespace

void check_attention_forward(const AttentionForwardArgs& a) {
  const OpChecks& c = forward_checks;
  check_qkv(c, a.q, a.k, a.v);
  if (a.o) check_like(c, "o", *a.o, a.q, "q's shape and dtype");
  if (a.lse) check_lse(c, *a.lse, a.q);
  if (a.blocks) check_blocks(c, *a.blocks, a.q);
  if (a.items) check_items(c, a);
  scale_of(c, a.scale, a.q);
  c.on_one_gpu({{"q", &a.q},
                {"k", &a.k},
                {"v", &a.v},
                {"o", a.o ? &*a.o : nullptr},
                {"lse", a.lse ? &*a.lse : nullptr},
                {"block_counts", a.blocks ? &a.blocks->counts : nullptr},
                {"block_indices", a.blocks ? &a.blocks->indices : nullptr},
                {"block_items", a.items ? &a.items->items : nullptr},
                {"block_bounds", a.items ? &a.items->bounds : nullptr}});
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
  // A work list (built once per mask) on Hopper's tiles at blocks of 128, where no
  // configuration of attn_fwd_sparse was asked for: attn_fwd_sparse_items, one pipeline per
  // program across its tiles (workloads/attention_tiles.h: items_forward_applies).
  if (a.blocks && a.items && a.config.empty() && hopper_tiles(rt, tiles) &&
      workloads::items_forward_applies(tiles, a.exact)) {
    LaunchOptions items_lo;
    items_lo.stream = a.stream;
    items_lo.config = {{"D", std::to_string(tiles.tile_width)}, {"CAUSAL", a.causal ? "1" : "0"}};
    rt.launch(rt.load(source, "attn_fwd_sparse_items"),
              {Arg::of(q), Arg::of(a.k), Arg::of(a.v), Arg::of(a.items->items),
               Arg::of(a.items->bounds), Arg::of(out.o), Arg::of(out.lse), scale},
              items_lo);
    return out;
  }
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
  check_backward_like(c, a.q, a.k, a.o, a.lse, a.dout, a.dq, a.dk, a.dv);
  if (a.blocks) check_blocks(c, *a.blocks, a.q);
  if (a.forward_blocks) {
    if (!a.blocks)
      throw Error(str(c.named("forward_block_counts", a.forward_blocks->counts),
                      ": forward_blocks are the block-sparse forward's lists, given without the "
                      "backward's own (blocks): dense attention takes neither"));
    if (a.forward_blocks->block != a.blocks->block)
      throw Error(str(c.named("forward_block_counts", a.forward_blocks->counts),
                      ": block = ", a.forward_blocks->block,
                      " but the backward's lists have block = ", a.blocks->block,
                      ": both come from one mask"));
    check_blocks(c, *a.forward_blocks, a.q, {"forward_block_counts", "forward_block_indices"});
  }
  scale_of(c, a.scale, a.q);
  if (auto forced = a.config.find("ATOMIC_DQ"); forced != a.config.end()) {
    if (forced->second != "0" && forced->second != "1")
      throw Error(str("attention_backward: config ATOMIC_DQ=", forced->second,
                      " is not 0 (dq by attn_dq) or 1 (dq by atomics)"));
    if (a.blocks && !a.forward_blocks && forced->second == "0")
      throw Error("attention_backward: config ATOMIC_DQ=0 (dq by attn_dq_sparse) needs the "
                  "forward's block lists (forward_blocks) for block-sparse attention; without "
                  "them dq goes by atomics");
  }
  c.on_one_gpu(
      {{"q", &a.q},
       {"k", &a.k},
       {"v", &a.v},
       {"o", &a.o},
       {"lse", &a.lse},
       {"dout", &a.dout},
       {"dq", a.dq ? &*a.dq : nullptr},
       {"dk", a.dk ? &*a.dk : nullptr},
       {"dv", a.dv ? &*a.dv : nullptr},
       {"block_counts", a.blocks ? &a.blocks->counts : nullptr},
       {"block_indices", a.blocks ? &a.blocks->indices : nullptr},
       {"forward_block_counts", a.forward_blocks ? &a.forward_blocks->counts : nullptr},
       {"forward_block_indices", a.forward_blocks ? &a.forward_blocks->indices : nullptr}});
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
  // accumulator, two more products): what the caller forced with ATOMIC_DQ in `config`, else
  // the plan `tilejit tune --workload attention` chose for this shape (or the nearest tuned
  // one) in the runtime's tuning database, else the faster on Hopper per
  // workloads/attention_tiles.h. Block-sparse calls take attn_dq_sparse only when given the
  // forward's block lists (it walks each query block's kept key blocks), atomics otherwise.
  const workloads::AttentionTileCase tiles = tile_case(q, a.causal, a.blocks);
  const bool hopper = hopper_tiles(rt, tiles);
  const bool dq_kernel_possible = !a.blocks || a.forward_blocks;
  bool atomic_dq = !(dq_kernel_possible && hopper && workloads::dq_by_kernel(tiles));
  if (auto forced = a.config.find("ATOMIC_DQ"); forced != a.config.end())
    atomic_dq = forced->second == "1"; // 0 or 1: check_attention_backward saw to it
  else if (!a.blocks)
    if (auto tuned = tuned_plan(rt, q, k, a.causal, a.exact))
      atomic_dq = tuned->name != "dq_kernel";
  // Work buffers for this call, stream-ordered: delta = rowsum(o * dout), and dq's f32
  // accumulator (atomics).
  CallBuffers work(a.stream);
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
  if (hopper) main_lo.fallback = workloads::backward_tile(tiles, atomic_dq);
  const Arg scale = Arg::f32(static_cast<float>(scale_of(backward_checks, a.scale, q)));
  if (a.blocks) {
    main_lo.config["BLK"] = std::to_string(a.blocks->block);
    main_lo.config["ATOMIC_DQ"] = dq_generic;
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
    // ISSUE (the dots left running) and PRODUCER (producer warps) are the backward's choice
    // for each of its kernels.
    for (const char* both : {"ISSUE", "PRODUCER"})
      if (auto it = a.config.find(both); it != a.config.end()) dq_lo.config[both] = it->second;
    if (hopper) dq_lo.fallback = workloads::dq_kernel_tile(tiles);
    if (a.blocks) {
      dq_lo.config["BLK"] = std::to_string(a.blocks->block);
      rt.launch(rt.load(source, "attn_dq_sparse"),
                {Arg::of(q), Arg::of(k), Arg::of(a.v), Arg::of(a.dout), Arg::of(a.lse),
                 Arg::of(delta), Arg::of(a.forward_blocks->counts),
                 Arg::of(a.forward_blocks->indices), Arg::of(out.dq), scale},
                dq_lo);
    } else {
      rt.launch(rt.load(source, "attn_dq"),
                {Arg::of(q), Arg::of(k), Arg::of(a.v), Arg::of(a.dout), Arg::of(a.lse),
                 Arg::of(delta), Arg::of(out.dq), scale},
                dq_lo);
    }
  }
  // The work buffers go back to the pool here, on the call's stream, after the launches.
  return out;
}

} // namespace tilejit::ops
