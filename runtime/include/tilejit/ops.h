// Typed operations: one call per workload, on tensor views, checked argument by argument with
// errors that name the tensor. Each op is the workload's DSL kernel launched through the
// Runtime, so it takes the tuned configuration from the runtime's tuning database.
#pragma once

#include <tilejit/tilejit.h>

#include <memory>
#include <optional>

namespace tilejit::ops {

/// Sparse decode attention over a paged KV cache (WORKLOADS.md section 1).
///   q [B, Hq, D], k_cache / v_cache [pages, page_size, Hkv, D] (f16 or bf16, all the same),
///   block_table [B, max_pages] i32, seq_lens [B] i32, kept_idx [B, Hkv, max_kept] i32 (token
///   positions, ascending), kept_len [B, Hkv] i32.
/// Writes o [B, Hq, D] (q's dtype) and lse [B, Hq] f32 (natural log; -inf where nothing is
/// kept, with o = 0 there). Hq must be a multiple of Hkv (group size 1..16); D in {64, 96,
/// 128, 256}; page_size in {8, 16, 32, 64, 128, 256}.
struct PagedSparseDecodeArgs {
  Tensor q, k_cache, v_cache, block_table, seq_lens, kept_idx, kept_len;
  std::optional<Tensor> o, lse; ///< written when given; allocated on the device otherwise
  std::optional<double> scale;  ///< default 1 / sqrt(D)
  void* stream = nullptr;       ///< CUstream (null: the legacy default stream)
  Config config;                ///< forced tunables (CHUNK, BN, ...): none to use the tuned ones
};

struct PagedSparseDecodeResult {
  Tensor o, lse;
  /// Owns o and lse when the op allocated them (null when the caller gave both).
  std::shared_ptr<void> storage;
};

/// Checks the arguments (every tensor: device, dtype, rank, sizes against the others) and
/// launches. Throws tilejit::Error naming the tensor, its shape and what was expected.
PagedSparseDecodeResult paged_sparse_decode(Runtime& rt, const PagedSparseDecodeArgs& args);

/// The checks alone (no GPU needed): throws what paged_sparse_decode would.
void check_paged_sparse_decode(const PagedSparseDecodeArgs& args);

/// Weight-only int4 GPTQ weights in the packed form of tilejit's per-call kernel (w4a16_tc),
/// made once by repack_int4 (like a model load). Views of device memory: `storage` owns it when
/// repack_int4 allocated it, else the caller's tensors do.
struct Int4Weights {
  /// i32 [N, K/8]: 8 consecutive k of one column per word, K permuted; interleaved: k 8j + i
  /// in nibble i / 2 + 4 * (i % 2) (the order tj::dot_q4 reads without permutes)
  Tensor qweight_t;
  Tensor scales; ///< [ceil(K/G), N] f16 or bf16 (the activations' dtype)
  Tensor qzeros; ///< i32 [ceil(K/G), ceil(N/8)], 8 zero points per word along N (GPTQ's)
  Tensor perm;   ///< i32 [K]: packed row k is GPTQ row perm[k]; the identity without act-order
  int64_t group = 128;    ///< G of the packed form: 32, 64 or 128 (one group: 128, repeated)
  bool act_order = false; ///< K was permuted: x is read through perm
  std::shared_ptr<void> storage;
};

/// GPTQ int4 (WORKLOADS.md section 2): qweight [K/8, N] i32 (8 consecutive k per word, nibble i
/// = bits 4i..4i+3), scales [ceil(K/G), N] f16/bf16, qzeros [ceil(K/G), ceil(N/8)] i32 (packed
/// along N the same way, used as stored), group_size G in {32, 64, 128, -1 (one group)},
/// optional act-order g_idx [K] i32 (the group of row k; each group must hold G rows, as GPTQ's
/// act-order writes them). W[n, k] = (q[k, n] - z[g(k), n]) * s[g(k), n].
struct RepackInt4Args {
  Tensor qweight, scales, qzeros;
  std::optional<Tensor> g_idx;
  int64_t group_size = 128;
  /// Where the packed form goes: all four (shapes and dtypes as Int4Weights'), or none to have
  /// repack_int4 allocate it.
  std::optional<Tensor> qweight_t, scales_out, qzeros_out, perm;
  void* stream = nullptr;
};

/// Repacks (the w4_repack kernel; act-order resolved by sorting K by group, the permutation
/// computed on the host from g_idx). Throws tilejit::Error naming the tensor for bad input: a
/// qweight that is not [K/8, N] i32, scales or qzeros with the wrong number of groups, a g_idx
/// entry out of range, a group that does not hold G rows.
Int4Weights repack_int4(Runtime& rt, const RepackInt4Args& args);
/// The checks repack_int4 makes before touching the GPU (g_idx's values excepted: they are on
/// the GPU).
void check_repack_int4(const RepackInt4Args& args);

/// y [M, N] = x [M, K] @ W^T with W the repacked int4 weights; x f16 or bf16 (the scales'
/// dtype), f32 accumulation, any M (0 too) and N; K is the weights'.
struct DequantLinearArgs {
  Tensor x;
  Int4Weights weights;
  std::optional<Tensor> y; ///< written when given (x's dtype); allocated otherwise
  void* stream = nullptr;
  Config config; ///< forced tunables (BN, BK, ...): none to use the tuned ones
};

/// int8 weight-only: y [M, N] = x [M, K] @ (w * s[:, None])^T, w [N, K] i8, scales [N] (x's
/// dtype f16 or bf16), f32 accumulation (the w8a16_mma kernel).
struct Int8LinearArgs {
  Tensor x, w, scales;
  std::optional<Tensor> y;
  void* stream = nullptr;
  Config config;
};

struct LinearResult {
  Tensor y;
  std::shared_ptr<void> storage; ///< owns y when the op allocated it
};

LinearResult dequant_linear(Runtime& rt, const DequantLinearArgs& args);
void check_dequant_linear(const DequantLinearArgs& args);
LinearResult int8_linear(Runtime& rt, const Int8LinearArgs& args);
void check_int8_linear(const Int8LinearArgs& args);

/// FlashAttention (WORKLOADS.md section 3), dense, causal or not, GQA.
///   q [B, Hq, N, D], k and v [B, Hkv, N, D] (Hq a multiple of Hkv), all f16, bf16 or f32 (f32
///   through TF32 tensor cores, or 3xTF32 with `exact`: fp32's accuracy), D a multiple of 8 up
///   to 256, each tensor's last dimension contiguous (other strides free: q.transpose(1, 2) of
///   a [B, N, H, D] tensor works). Writes o [B, Hq, N, D] (q's dtype) and lse [B, Hq, N] f32
///   (natural log). scale defaults to 1 / sqrt(D); a given one must be >= 0.
/// Block-sparse attention's kept blocks, as lists (flex_attention's BlockMask layout): the
/// sequence in blocks of `block` (16, 32, 64 or 128) positions, NB = cdiv(N, block) of them.
/// Row r of (mask batch mb, mask head mh) keeps counts[mb, mh, r] blocks, whose indices are
/// indices[mb, mh, r, 0 : count] (any order, each once; an index outside [0, NB) keeps nothing).
/// counts i32 [MB, MH, NB], indices i32 [MB, MH, NB, NB], MB = 1 or B, MH = 1 or Hq (1: the
/// same mask for every batch / head). For the forward a row is a query block and the indices
/// are key blocks; the backward takes the transposed lists (row = key block). Python's
/// tilejit.ops.attention(..., block_mask=) builds both from a boolean mask.
struct AttentionBlocks {
  int64_t block = 128;
  Tensor counts, indices;
};

/// Block-sparse forward, optional: the same kept blocks as one work list per program, built
/// once per mask (Python's tilejit.ops.BlockMask builds it): items i32 [E, 8], row e = (b, h,
/// hk, m0, j, tile, 0, 0) for query tile `tile` = (b * Hq + h) * cdiv(N, 128) + m0 / 128 (rows
/// m0 : m0 + 128 of head h, batch b; hk = h / (Hq / Hkv)) and the key block at row j (a
/// multiple of 128; a tile that keeps nothing is one item with j = -128); bounds i32 [P + 1],
/// program p's items items[bounds[p] : bounds[p + 1]], each tile's consecutive and every tile
/// once. With blocks of 128 on Hopper's width-64 and width-128 tiles (f16/bf16) the forward
/// then runs attn_fwd_sparse_items, one program per multiprocessor walking its items as one
/// pipeline (faster at low densities); elsewhere it is not used.
struct AttentionItems {
  Tensor items, bounds;
};

struct AttentionForwardArgs {
  Tensor q, k, v;
  /// Block-sparse: per query block, its kept key blocks (masked blocks are never loaded; a
  /// row that keeps no key gets o = 0 and lse = -inf). Dense when absent.
  std::optional<AttentionBlocks> blocks;
  std::optional<AttentionItems> items; ///< with blocks: the same as a work list (above)
  std::optional<Tensor> o, lse;        ///< written when given; allocated on the device otherwise
  bool causal = false;
  bool exact = false;
  std::optional<double> scale;
  void* stream = nullptr;
  Config config; ///< forced tunables of attn_fwd (BM, BN, STAGES, WARPS)
};

struct AttentionForwardResult {
  Tensor o, lse;
  std::shared_ptr<void> storage; ///< owns o and lse when the op allocated them
};

AttentionForwardResult attention_forward(Runtime& rt, const AttentionForwardArgs& args);
void check_attention_forward(const AttentionForwardArgs& args);

/// The gradients of sum(dout * o) for o = attention_forward(q, k, v): q, k, v, o, lse as the
/// forward took and gave them, dout like o. dq like q; dk and dv like k (summed over each GQA
/// group). Three kernels: a pre-pass (rowsum(o * dout), dq's f32 accumulator zeroed), dk/dv per
/// key block with dq by atomics, dq converted; the two f32 work buffers ([B, Hq, N] and
/// [B, Hq, N, D]) are allocated per call.
struct AttentionBackwardArgs {
  Tensor q, k, v, o, lse, dout;
  /// Block-sparse: per key block, the query blocks that keep it (the forward's mask
  /// transposed). Dense when absent.
  std::optional<AttentionBlocks> blocks;
  /// Block-sparse, optional: the forward's own lists too (per query block, its kept key
  /// blocks; the same block as `blocks`). Given, dq may come from attn_dq_sparse over them (no
  /// atomics, no f32 accumulator), which on Hopper measured faster; without them dq goes by
  /// atomics.
  std::optional<AttentionBlocks> forward_blocks;
  std::optional<Tensor> dq, dk, dv; ///< written when given; allocated otherwise
  bool causal = false;
  bool exact = false;
  std::optional<double> scale;
  void* stream = nullptr;
  /// Forced tunables of attn_bwd (BN, BM, STAGES, WARPS, TR), and ATOMIC_DQ: 1 adds dq by
  /// atomics from attn_bwd into an f32 accumulator, 0 computes it in attn_dq (block-sparse:
  /// attn_dq_sparse, which needs forward_blocks). By default what `tilejit tune --workload
  /// attention` stored for the shape, else attn_dq on Hopper at 16-bit head dims up to 128
  /// (faster on every shape measured; block-sparse given forward_blocks;
  /// workloads/attention_tiles.h), atomics elsewhere.
  Config config;
};

struct AttentionBackwardResult {
  Tensor dq, dk, dv;
  std::shared_ptr<void> storage;
};

AttentionBackwardResult attention_backward(Runtime& rt, const AttentionBackwardArgs& args);
void check_attention_backward(const AttentionBackwardArgs& args);

/// Causal, unnormalised linear attention (WORKLOADS.md section 4): o_t = scale * q_t sum over
/// s <= t of k_s^T v_s. q and k [B, T, H, Dk], v [B, T, H, Dv] (f16 or bf16, one dtype, the last
/// dimension contiguous, Dk and Dv from 1 to 256); o like v. scale defaults to 1/sqrt(Dk). One
/// launch of linear_attn (the f32 state carried from chunk to chunk).
struct LinearAttnForwardArgs {
  Tensor q, k, v;
  std::optional<Tensor> o; ///< written when given; allocated on the device otherwise
  std::optional<double> scale;
  void* stream = nullptr;
  Config config; ///< forced tunables of linear_attn (C, BV, STAGES, WARPS)
};

struct LinearAttnForwardResult {
  Tensor o;
  std::shared_ptr<void> storage; ///< owns o when the op allocated it
};

LinearAttnForwardResult linear_attn_forward(Runtime& rt, const LinearAttnForwardArgs& args);
void check_linear_attn_forward(const LinearAttnForwardArgs& args);

/// The gradients of sum(dout * o) for o = linear_attn_forward(q, k, v): dout like v; dq and dk
/// like q, dv like v. Three launches of the same kernel with exchanged operands: dq = la(dout,
/// v, k), dv = la_rev(k, q, dout), dk = la_rev(v, dout, q) (la_rev: anti-causal).
struct LinearAttnBackwardArgs {
  Tensor q, k, v, dout;
  std::optional<Tensor> dq, dk, dv; ///< written when given; allocated otherwise
  std::optional<double> scale;
  void* stream = nullptr;
  Config config; ///< forced tunables of linear_attn for all three launches
};

struct LinearAttnBackwardResult {
  Tensor dq, dk, dv;
  std::shared_ptr<void> storage;
};

LinearAttnBackwardResult linear_attn_backward(Runtime& rt, const LinearAttnBackwardArgs& args);
void check_linear_attn_backward(const LinearAttnBackwardArgs& args);

/// The gated delta rule's forward (WORKLOADS.md section 4): per step S = S exp(g_t),
/// u = beta_t (v_t - k_t S), S = S + k_t^T u, o_t = scale q_t S, with q_t and k_t
/// L2-normalised first when `normalize`. q and k [B, T, H, Dk], v [B, T, H, Dv] (f16 or bf16),
/// g (the log decay, <= 0: not checked here, the values are on the device) and beta
/// [B, T, H] f32 contiguous; h0 [B, H, Dk, Dv] f32 the initial state (zero when absent). o like
/// v and the final state ht [B, H, Dk, Dv] f32. In chunks of `chunk` steps (16, 32 or 64): two
/// launches (gated_delta_prepare, gated_delta_chunk) and five work buffers of this call ([B, T,
/// H, Dk] and [B, T, H, Dv] in the inputs' dtype, three [B, T, H] f32).
/// Variable-length sequences (`cu_seqlens`, as flash-linear-attention takes them): N sequences
/// packed along T of a batch of one, sequence n the steps cu_seqlens[n] .. cu_seqlens[n+1] - 1
/// (0 = cu_seqlens[0] <= ... <= cu_seqlens[N] = T); each starts from its own state, so h0 and ht
/// are [N, H, Dk, Dv]. Today the op runs the sequences one after another (the launches above per
/// sequence, on work buffers of the longest): right for any lengths, fast for long ones.
struct GatedDeltaRuleArgs {
  Tensor q, k, v, g, beta;
  std::optional<Tensor> h0;
  std::optional<Tensor> o, ht;     ///< written when given; allocated otherwise
  std::vector<int64_t> cu_seqlens; ///< empty: B sequences of T steps
  bool normalize = true;
  int64_t chunk = 64;
  std::optional<double> scale;
  void* stream = nullptr;
  Config config; ///< forced tunables of both kernels (BV, STAGES, WARPS)
};

struct GatedDeltaRuleResult {
  Tensor o, ht;
  std::shared_ptr<void> storage;
};

GatedDeltaRuleResult gated_delta_rule_forward(Runtime& rt, const GatedDeltaRuleArgs& args);
void check_gated_delta_rule_forward(const GatedDeltaRuleArgs& args);

/// The gradients of sum(dout * o) + sum(dht * ht) for (o, ht) = gated_delta_rule_forward(q, k,
/// v, g, beta, h0) with the same normalize, chunk and scale: dq, dk like q, dv like v, dg and
/// dbeta [B, T, H] f32, dh0 [B, H, Dk, Dv] f32 (h0's, also when h0 is absent: at zero; [N, H, Dk,
/// Dv] with cu_seqlens, as dht). The
/// forward runs again saving its chunk states (no state is kept between the calls), then the
/// state gradients chunk by chunk from the last, then the rest per chunk: four launches, work
/// buffers of this call ([B, H, chunks, Dk, Dv] f32 twice, and the forward's).
struct GatedDeltaRuleBackwardArgs {
  GatedDeltaRuleArgs forward; ///< the forward's inputs and options (its o and ht: ignored)
  Tensor dout;
  std::optional<Tensor> dht;                        ///< zero when absent
  std::optional<Tensor> dq, dk, dv, dg, dbeta, dh0; ///< written when given; allocated otherwise
};

struct GatedDeltaRuleBackwardResult {
  Tensor dq, dk, dv, dg, dbeta, dh0;
  std::shared_ptr<void> storage;
};

GatedDeltaRuleBackwardResult gated_delta_rule_backward(Runtime& rt,
                                                       const GatedDeltaRuleBackwardArgs& args);
void check_gated_delta_rule_backward(const GatedDeltaRuleBackwardArgs& args);

/// hbv (WORKLOADS.md section 5): the HBV-96 hydrological model, one lane per model. P, TEMP and
/// PET [B, T] f32 (the forcings, days along the row), params [B, 12] f32 in WORKLOADS.md's order
/// (BETA, FC, K0, K1, K2, LP, PERC, UZL, TT, CFMAX, CFR, CWH), all contiguous; writes Q [B, T]
/// f32. Any B and T (0 too). Several components per basin: params [B, 12, NM] (dHBV's layout,
/// NM = 2, 4, 8 or 16) runs B x NM models in one kernel (hbv_forward_nmul: each basin's
/// forcings read once and shared by its components) and Q is their mean; d_params is then
/// [B, 12, NM] and the forcings' gradients sum over the components. Such a backward takes the
/// form segment -1 gives B x NM models (0: the training forward stores every 64th day's states,
/// [cdiv(B, BB), cdiv(T, 64), 5, BB, NM] with BB = 32 / NM; a segment length: the segment form,
/// its states, tape and maps shaped so, NM last); another count of
/// components is B x NM models whose rows the caller repeats (Python's tilejit.ops.hbv(...,
/// nmul=) does).
/// `segment` picks the derived backward the training forward prepares for: 0 the checkpointed
/// reverse (the training forward stores every 64th day's states, [cdiv(B, 32), cdiv(T, 64), 5,
/// 32] f32: the smallest memory), one of 8, 16, 32, 64, 128, 256 the segment form (each segment's
/// start state stored: [cdiv(B, 32), cdiv(T, SEG), 5, 32] f32; the backward tapes about B x T x
/// 20 bytes), -1 (default) the op's choice (workloads/hbv_segments.h: the segment form while its
/// tape fits 256 MiB). The stored states come back as `starts`.
struct HbvForwardArgs {
  Tensor P, TEMP, PET, params;
  std::optional<Tensor> Q; ///< written when given; allocated otherwise
  /// false: hbv_forward alone (inference); true: the forward the backward needs
  /// (hbv_forward_grad_fwd: the same Q, the states it stores kept as `starts`).
  bool training = false;
  /// Training: written when given (shaped as above); allocated otherwise.
  std::optional<Tensor> starts;
  int64_t segment = -1;
  void* stream = nullptr;
  Config config; ///< forced tunables of hbv_forward (BB, WARPS)
};

struct HbvForwardResult {
  Tensor Q;
  std::optional<Tensor> starts; ///< training: for hbv_backward
  int64_t segment = 0;          ///< the backward's form: 0 checkpoints, else SEG
  std::shared_ptr<void> storage;
};

HbvForwardResult hbv_forward(Runtime& rt, const HbvForwardArgs& args);
/// The backward's form for B basins, T days and `segment` (as HbvForwardArgs takes it): 0 for
/// the checkpointed kernel, else the segment length. Throws tilejit::Error for a bad segment.
int64_t hbv_backward_form(int64_t b, int64_t t, int64_t segment);
/// The form the ops take on `rt` for B basins of `nm` components (1, or 2, 4, 8, 16) and T days:
/// `segment` when given (>= 0); else the plan `tilejit tune --workload hbv` stored in `rt`'s
/// tuning database for this shape (or the nearest tuned one) where the ops run it (`segmentsS`:
/// S; `forward_checkpoints64`: 0); else the untuned choice (hbv_backward_form for the B x NM
/// models). hbv_forward and hbv_backward resolve segment -1 this way.
int64_t hbv_op_form(Runtime& rt, int64_t b, int64_t t, int64_t nm, int64_t segment);
/// Days between the states a training forward stores for backward form `form` (0 or a segment
/// length): `starts` is [cdiv(B, 32), cdiv(T, days), 5, 32] f32. Throws for another form.
int64_t hbv_starts_interval(int64_t form);
/// The shape of an hbv work buffer for B basins of `nm` components (1, or 2, 4, 8, 16 in one
/// kernel), T days and backward form `form` (0 or a segment length): `which` is "starts" (the
/// training forward's states: [cdiv(B, BB), cdiv(T, days), 5, BB] with BB = 32, or with
/// components [.., 5, 32 / NM, NM]), "tape" or "maps" (the segment form's, [.., SEG, 5, BB(, NM)]
/// and [.., 30, BB(, NM)]; form > 0 only). The one formula Python and C++ share; throws
/// tilejit::Error naming what is wrong.
std::vector<int64_t> hbv_buffer_shape(const std::string& which, int64_t b, int64_t t, int64_t form,
                                      int64_t nm = 1);
void check_hbv_forward(const HbvForwardArgs& args);

/// The gradients of sum(dQ * Q) for Q = hbv_forward(P, TEMP, PET, params), derived by the
/// compiler from hbv_forward (reverse mode, dsl/README.md; the tie rules of WORKLOADS.md): d_P,
/// d_TEMP, d_PET like P and d_params like params. `segment` and `starts` as the training forward
/// returned them. Segment 0: the gradients zeroed, then one kernel that walks the days back from
/// the starts (hbv_forward_grad_ck), or without starts one that first reruns the forward for its
/// own checkpoints (hbv_forward_grad). A segment form: the gradients zeroed, each segment
/// linearised (its days taped), then each segment's reverse; without starts the training forward
/// runs first.
struct HbvBackwardArgs {
  Tensor P, TEMP, PET, params, dQ;
  int64_t segment = -1;
  std::optional<Tensor> starts;
  std::optional<Tensor> d_P, d_TEMP, d_PET, d_params; ///< written when given; allocated otherwise
  /// The segment form's work buffers (hbv_tape_shape and hbv_maps_shape: [cdiv(B, 32),
  /// cdiv(T, SEG), SEG, 5, 32] and [cdiv(B, 32), cdiv(T, SEG), 30, 32] f32), both or neither:
  /// given, the call allocates nothing (a framework's caching allocator can hand them out);
  /// absent, they are allocated and freed per call.
  std::optional<Tensor> tape, maps;
  void* stream = nullptr;
  Config config; ///< forced tunables of hbv_forward_grad (BB, WARPS, CK): segment 0, no starts
};

struct HbvBackwardResult {
  Tensor d_P, d_TEMP, d_PET, d_params;
  int64_t segment = 0; ///< the form that ran
  std::shared_ptr<void> storage;
};

HbvBackwardResult hbv_backward(Runtime& rt, const HbvBackwardArgs& args);
void check_hbv_backward(const HbvBackwardArgs& args);

} // namespace tilejit::ops
