#include "workloads/attention_tiles.h"

namespace tilejit::workloads {

bool hopper_tiles_apply(const AttentionTileCase& c) {
  // Measured at widths 64 and 128; wider, the wide tiles' K and V stages alone pass the 227 KB
  // of shared memory a block may have (D = 192: 256 KB), and the kernels' defaults hold.
  return c.dtype != DType::F32 && (c.tile_width == 64 || c.tile_width == 128);
}

Config forward_tile(const AttentionTileCase& c) {
  if (c.block == 64) return {};
  // The next key tile's scores issued before this tile's softmax (AHEAD, with q by descriptor:
  // SA), dense also p v left running (ISSUE; attn_fwd_sparse has none): bit-equal outputs,
  // 1.08x at N = 8192 D = 128 (causal too), 1.14x at D = 64, 1.04x at N = 16384, block-sparse
  // 1.01-1.02x (H200, 2026-11-30, configurations alternating over 5 rounds:
  // bench/results/2026-11-30-attention-fwd-ahead-h200.md).
  Config t = {{"BM", "128"},   {"BN", "128"}, {"WARPS", "8"},
              {"STAGES", "2"}, {"SA", "1"},   {"AHEAD", "1"}};
  if (c.block == 0) {
    t["WG"] = "1"; // attn_fwd_sparse has no WG: its dots take wgmma where they fit
    t["ISSUE"] = "1";
  }
  // Width 128: the copies issued by producer warps (PRODUCER; the others get 240 registers,
  // enough without spilling only with p v left running, so attn_fwd_sparse takes ISSUE too):
  // bit-equal, dense N = 8192 3.85 -> 3.65 ms (causal 2.06 -> 1.95), block-sparse N = 16384
  // 2.02 -> 1.86 / 4.37 -> 4.17 / 8.23 -> 8.00 ms at 10 / 25 / 50% (H200, 2026-11-30,
  // bench/results/2026-11-30-forward-producer-warps-h200.md). Not at width 64: 2.56 -> 2.64 ms,
  // causal 1.39 -> 1.53.
  if (c.tile_width == 128) {
    t["ISSUE"] = "1";
    t["PRODUCER"] = "1";
  }
  return t;
}

bool items_forward_applies(const AttentionTileCase& c, bool exact) {
  // Measured at width 128 (10% of N = 16384: 1.10-1.13x attn_fwd_sparse at its Hopper tile,
  // 25% 1.03x, 50% 0.98x) and 64 (10%: 1.02-1.06x) on the H200, 2026-12-01
  // (bench/results/2026-12-01-sparse-forward-work-list-h200.md).
  return hopper_tiles_apply(c) && c.block == 128 && !exact;
}

Config backward_tile(const AttentionTileCase& c, bool atomic_dq) {
  // BM 128 at width 128 spills (23.3 ms against 10.2 block-sparse at N = 16384). At width 64
  // with dq by attn_dq the wide tile below too (8 warps, producer warps, both score products
  // issued at once) against 4 warps of BN 64, BM 128: dense N = 8192 4.40 -> 4.27 ms, causal
  // 2.33 -> 2.29, N = 16384 17.26 -> 16.75, N = 2048 0.323 -> 0.326; block-sparse N = 16384
  // 9.45 -> 8.81 / 4.87 -> 4.58 / 2.04 -> 2.01 ms at 50 / 25 / 10%, N = 8192 within 0.5%
  // (H200, 2026-12-01, bench/results/2026-12-01-bwd-sparse-row-mask-h200.md section 6); with
  // dq's atomics the narrow one stays (not measured there).
  if (c.tile_width == 64 && c.block != 64 && atomic_dq)
    return {{"TR", "1"}, {"BN", "64"}, {"BM", "128"}, {"WARPS", "4"}, {"STAGES", "2"}};
  if (c.block == 64)
    return {{"TR", "1"}, {"BN", "64"}, {"BM", "64"}, {"WARPS", "4"}, {"STAGES", "2"}};
  // ISSUE 1 (both score products issued at once; with dq's atomics in this kernel it is
  // slower, 17.6 -> 23.3 ms): with q, do, k and v read through descriptors it no longer spills,
  // and the backward with attn_dq went 13.64 -> 13.00 ms at N = 8192 D = 128, 7.27 -> 7.21
  // causal, 6.87 -> 6.43 at 10% of N = 16384 (H200, 2026-11-30,
  // bench/results/2026-11-30-wgmma-ss-a-h200.md).
  // PRODUCER 1 (the copies issued by producer warps, setmaxnreg giving the others 240
  // registers): 13.21 -> 12.73 ms at N = 8192 D = 128 with attn_dq; with dq's atomics here no
  // faster (15.22 -> 15.46).
  // With dq's atomics: BULK 1 too, the dq tile added by a warp of the producer warpgroup
  // through the TMA's tensor reductions (FlashAttention-3's dq writer), dk's product left
  // running meanwhile: the five-product backward, 1.01x attn_dq's plan at N = 8192 D = 128 and
  // 1.05x at 50% block-sparse, slower at 10% and causal (H200, 2026-11-30,
  // bench/results/2026-11-30-dq-writer-warp-h200.md), so the tuner's choice per shape; without
  // tuning, dq_by_kernel's.
  Config t = {{"TR", "1"},     {"BN", "128"},  {"BM", "64"},     {"WARPS", "8"},
              {"STAGES", "2"}, {"ISSUE", "1"}, {"PRODUCER", "1"}};
  if (atomic_dq) t["BULK"] = "1";
  return t;
}

Config dq_kernel_tile(const AttentionTileCase& c) {
  // Width 64, dense, not causal: 128 query rows on 8 warps over key tiles of 64, both score
  // products issued at once: N = 8192 3.05 -> 2.99 ms, N = 16384 12.47 -> 12.17, N = 2048
  // 0.207 -> 0.199; causal it is slower (1.55 -> 1.66) and block-sparse even (1.03x at 50%,
  // 0.99x at 10%), where the 4-warp tile stays (H200, 2026-12-01,
  // bench/results/2026-12-01-bwd-sparse-row-mask-h200.md section 6).
  if (c.tile_width == 64 && c.block == 0 && !c.causal)
    return {{"BM", "128"}, {"BN", "64"}, {"WARPS", "8"}, {"STAGES", "2"}, {"ISSUE", "1"}};
  if (c.tile_width == 64 || c.block == 64)
    return {{"BM", "64"}, {"BN", "64"}, {"WARPS", "4"}, {"STAGES", "2"}};
  // ISSUE 1: both score products issued at once (H200, 2026-11-30, ncu: attn_dq 4.78 -> 4.44 ms
  // at N = 8192 D = 128, attn_dq_sparse 2.29 -> 2.20 at 10% of N = 16384;
  // bench/results/2026-11-30-attention-issue-both-scores-h200.md). Not measured alone at width
  // 64, where the backward took 8.46 ms with it against 8.13-8.19 without (other calls).
  return {{"BM", "128"}, {"BN", "128"}, {"WARPS", "8"}, {"STAGES", "2"}, {"ISSUE", "1"}};
}

bool dq_by_kernel(const AttentionTileCase& c) {
  // Since the backward's q and do tiles come by TMA, attn_dq (block-sparse: attn_dq_sparse over
  // the forward's lists) beats the atomics on every shape measured (H200, 2026-11-29: the
  // backward 1.01-1.26x at width 128, causal or not, N from 1024 to 16384, GQA; 1.08-1.28x
  // block-sparse; bench/results/2026-11-29-attention-dq-plans-h200.md); before it, width 128
  // took the atomics below N = 8192 and with causal masking. The five-product plan (dq by a
  // producer warp's tensor reductions) tied it for a while; since the backward kernels read
  // lse and delta into registers first, attn_dq's plan is again the faster on every shape
  // measured (H200, 2026-11-30: 11.88 vs 12.25 ms at N = 8192 D = 128, 5.86 vs 6.64 at 10%
  // block-sparse, 24.43 vs 24.68 at 50%; bench/results/2026-11-30-bwd-stats-in-registers-h200.md).
  return hopper_tiles_apply(c);
}

} // namespace tilejit::workloads
