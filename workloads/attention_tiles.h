// The attention kernels' tiles measured fastest on Hopper (H200, 2026-11-29,
// bench/results/2026-11-29-5e2d196-attention-wide-h200.md) for 16-bit inputs whose tile width
// is a multiple of 64 (where the products run on wgmma). One place for them: the workload
// suggests them to the tuner first, and the ops launch them where nothing was tuned
// (LaunchOptions::fallback) instead of the kernels' portable defaults.
#pragma once

#include <tilejit/tensor.h>
#include <tilejit/tilejit.h>

#include <cstdint>

namespace tilejit::workloads {

/// What the choice depends on.
struct AttentionTileCase {
  DType dtype = DType::BF16;
  int64_t tile_width = 64; ///< the head dim rounded up to 16
  bool causal = false;
  int64_t seq = 0;
  int64_t block = 0; ///< block-sparse: the mask's block (64 or 128); 0 dense
};

/// Whether the tiles below apply: 16-bit inputs, a tile width of 64 or 128 (where they were
/// measured and fit).
bool hopper_tiles_apply(const AttentionTileCase& c);

/// attn_fwd (and attn_fwd_sparse at block 128): BM 128, BN 128 on two warpgroups, the K and V
/// tiles each serving 128 query rows. Empty where it does not apply (block 64).
Config forward_tile(const AttentionTileCase& c);

/// Whether the block-sparse forward takes attn_fwd_sparse_items when given a work list: blocks
/// of 128, not the exact f32 mode (the tiles above apply: 16-bit, width 64 or 128).
bool items_forward_applies(const AttentionTileCase& c, bool exact);

/// attn_bwd / attn_bwd_sparse in the transposed form: BN 128, BM 64, 8 warps, ISSUE 1, producer
/// warps, and with dq's atomics BULK 1 too (the five-product plan); BN 64, BM 64, 4 warps at
/// block 64, and BN 64, BM 128, 4 warps at width 64 with dq's atomics.
Config backward_tile(const AttentionTileCase& c, bool atomic_dq);

/// attn_dq (and attn_dq_sparse): the forward's wide tile from width 128, BM 64, BN 64, 4 warps
/// at 64 (and at block 64, which the wide tile does not divide), except dense attn_dq at width
/// 64 not causal: BM 128, BN 64, 8 warps.
Config dq_kernel_tile(const AttentionTileCase& c);

/// Whether dq is faster by attn_dq (no atomics, two more products) than by atomics: wherever
/// the tiles above apply (measured on every shape, dense and block-sparse).
bool dq_by_kernel(const AttentionTileCase& c);

} // namespace tilejit::workloads
