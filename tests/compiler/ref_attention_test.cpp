// attention's forward kernel on the reference interpreter (tests/common/attention_checks.cpp):
// GQA groups, causal and not, sequence lengths that are not multiples of the blocks (one query
// included), head dims that are not multiples of 16, 16-bit and f32 inputs (TF32 and exact).
#include "attention_checks.h"

#include <gtest/gtest.h>

namespace tilejit::test {
namespace {

const Bindings kSmall = {{"BM", "32"}, {"BN", "16"}, {"STAGES", "2"}, {"WARPS", "2"}};

TEST(RefAttention, ForwardGqaAndOddSizes) {
  check_attention_fwd(cpu(), DType::F16, 1, 4, 2, 77, 40, false, false, kSmall);
  check_attention_fwd(cpu(), DType::BF16, 2, 3, 1, 33, 64, false, false,
                      {{"BM", "16"}, {"BN", "32"}, {"STAGES", "1"}, {"WARPS", "1"}});
  check_attention_fwd(cpu(), DType::F16, 1, 2, 2, 1, 8, false, false, kSmall); // one query
}

TEST(RefAttention, ForwardCausal) {
  check_attention_fwd(cpu(), DType::F16, 1, 2, 1, 50, 64, true, false, kSmall);
  check_attention_fwd(cpu(), DType::BF16, 1, 1, 1, 70, 24, true, false,
                      {{"BM", "64"}, {"BN", "32"}, {"STAGES", "3"}, {"WARPS", "4"}});
}

// Ring attention (issue 20) with its ranks simulated one after another: one rank (its two
// chunks), two and three ranks, causal (the zigzag split's diagonal and skipped blocks) and
// not, GQA, an odd chunk length and head dim, f32; forward, and forward and backward.
TEST(RefAttention, RingOverSimulatedRanks) {
  check_ring_attention(cpu(), DType::F16, 1, 2, 1, 13, 40, 1, true, false, kSmall);
  check_ring_attention(cpu(), DType::BF16, 1, 4, 2, 13, 40, 2, true, true, kSmall);
  check_ring_attention(cpu(), DType::F16, 2, 2, 2, 9, 16, 3, true, true, kSmall);
  check_ring_attention(cpu(), DType::F16, 1, 2, 1, 11, 24, 3, false, true, kSmall);
  check_ring_attention(cpu(), DType::F32, 1, 1, 1, 7, 32, 2, true, true, kSmall);
}

TEST(RefAttention, ForwardF32Tf32AndExact) {
  check_attention_fwd(cpu(), DType::F32, 1, 2, 1, 45, 32, true, false, kSmall);
  check_attention_fwd(cpu(), DType::F32, 1, 2, 2, 40, 24, false, true, kSmall);
}

// Block-sparse forward: GQA, a mask per head or broadcast over batch and heads, N not a multiple
// of the block, causal, BN smaller than the block (several key tiles per kept block), empty rows.
TEST(RefAttention, SparseForwardMasksListsAndEmptyRows) {
  check_attention_sparse_fwd(cpu(), DType::F16, 2, 4, 2, 70, 40, 16, 2, 4, 0.5, false,
                             {{"BM", "16"}, {"BN", "16"}, {"STAGES", "2"}, {"WARPS", "1"}});
  check_attention_sparse_fwd(cpu(), DType::BF16, 1, 2, 1, 100, 32, 32, 1, 1, 0.4, true,
                             {{"BM", "16"}, {"BN", "16"}, {"STAGES", "3"}, {"WARPS", "2"}});
  check_attention_sparse_fwd(cpu(), DType::F32, 1, 2, 2, 65, 16, 32, 1, 2, 0.6, true,
                             {{"BM", "32"}, {"BN", "32"}, {"STAGES", "1"}, {"WARPS", "2"}});
}

// Block-sparse backward: GQA with a mask per query head (the kv head's program walks each
// head's own list), broadcast masks, causal, odd N, BM below the block, empty rows.
TEST(RefAttention, SparseBackwardMasksListsAndEmptyRows) {
  check_attention_sparse_bwd(cpu(), DType::F16, 1, 4, 2, 70, 40, 32, 1, 4, 0.5, false,
                             {{"BN", "16"}, {"BM", "16"}, {"STAGES", "2"}, {"WARPS", "1"}});
  check_attention_sparse_bwd(cpu(), DType::BF16, 2, 2, 1, 77, 32, 16, 2, 1, 0.5, true,
                             {{"BN", "16"}, {"BM", "16"}, {"STAGES", "3"}, {"WARPS", "2"}});
  check_attention_sparse_bwd(cpu(), DType::F32, 1, 2, 2, 50, 16, 32, 1, 1, 0.6, true,
                             {{"BN", "32"}, {"BM", "16"}, {"STAGES", "1"}, {"WARPS", "2"}});
}

// The block-sparse backward's transposed form (TR = 1): the same cases' kinds (per-head masks
// under GQA, broadcast masks, causal, odd N, tiles below the block, empty rows).
TEST(RefAttention, SparseBackwardTransposed) {
  check_attention_sparse_bwd(
      cpu(), DType::F16, 1, 4, 2, 70, 40, 32, 1, 4, 0.5, false,
      {{"BN", "16"}, {"BM", "16"}, {"STAGES", "2"}, {"WARPS", "1"}, {"TR", "1"}});
  check_attention_sparse_bwd(
      cpu(), DType::BF16, 2, 2, 1, 77, 32, 16, 2, 1, 0.5, true,
      {{"BN", "16"}, {"BM", "16"}, {"STAGES", "3"}, {"WARPS", "2"}, {"TR", "1"}});
  check_attention_sparse_bwd(
      cpu(), DType::F32, 1, 2, 2, 50, 16, 32, 1, 1, 0.6, true,
      {{"BN", "32"}, {"BM", "16"}, {"STAGES", "1"}, {"WARPS", "2"}, {"TR", "1"}});
}

// Block-sparse with dq in its own kernel (the "dq_kernel" plan: attn_bwd_sparse without atomics,
// then attn_dq_sparse over the forward's lists): GQA with per-head masks, broadcast masks,
// causal, odd N, several key tiles per kept block, both backward forms, empty rows (dq = 0).
TEST(RefAttention, SparseBackwardWithDqInItsOwnKernel) {
  check_attention_sparse_bwd(cpu(), DType::F16, 1, 4, 2, 70, 40, 32, 1, 4, 0.5, false,
                             {{"BN", "16"}, {"BM", "16"}, {"STAGES", "2"}, {"WARPS", "1"}},
                             /*dq_kernel=*/true);
  check_attention_sparse_bwd(cpu(), DType::BF16, 2, 2, 1, 77, 32, 16, 2, 1, 0.5, true,
                             {{"BN", "16"}, {"BM", "16"}, {"STAGES", "3"}, {"WARPS", "2"}},
                             /*dq_kernel=*/true);
  check_attention_sparse_bwd(
      cpu(), DType::F32, 1, 2, 2, 50, 16, 32, 1, 1, 0.6, true,
      {{"BN", "32"}, {"BM", "16"}, {"STAGES", "1"}, {"WARPS", "2"}, {"TR", "1"}},
      /*dq_kernel=*/true);
}

TEST(RefAttention, BackwardGqaCausalAndOddSizes) {
  check_attention_bwd(cpu(), DType::F16, 1, 4, 2, 37, 40, false, false,
                      {{"BN", "16"}, {"BM", "16"}, {"STAGES", "2"}, {"WARPS", "1"}});
  check_attention_bwd(cpu(), DType::BF16, 2, 2, 1, 50, 32, true, false,
                      {{"BN", "32"}, {"BM", "16"}, {"STAGES", "1"}, {"WARPS", "2"}});
  // Two queries: the first sees one key (its ds is zero), the second two. In exact f32: with
  // 32 values per gradient, f16's rounding of o and dout alone exceeded 3e-2 for some seeds.
  check_attention_bwd(cpu(), DType::F32, 1, 1, 1, 2, 16, true, true, {});
}

// The "dq_kernel" plan: dq by attn_dq (no atomics), GQA, causal, odd sizes, f32 exact.
TEST(RefAttention, BackwardWithDqInItsOwnKernel) {
  check_attention_bwd_dq_kernel(cpu(), DType::F16, 1, 4, 2, 37, 40, false, false,
                                {{"BN", "16"}, {"BM", "16"}, {"STAGES", "2"}, {"WARPS", "1"}});
  check_attention_bwd_dq_kernel(cpu(), DType::BF16, 2, 2, 1, 50, 32, true, false,
                                {{"BN", "32"}, {"BM", "16"}, {"STAGES", "1"}, {"WARPS", "2"}});
  check_attention_bwd_dq_kernel(cpu(), DType::F32, 1, 1, 1, 2, 16, true, true, {});
  check_attention_bwd_dq_kernel(cpu(), DType::F32, 1, 2, 2, 20, 16, true, true,
                                {{"BN", "16"}, {"BM", "16"}, {"STAGES", "1"}, {"WARPS", "1"}});
}

// attn_bwd's transposed form (TR = 1: scores as keys by queries, p^T and ds^T from registers):
// GQA, causal, odd sizes, one query, f32 exact, and with dq by attn_dq.
TEST(RefAttention, BackwardTransposed) {
  check_attention_bwd(cpu(), DType::F16, 1, 4, 2, 37, 40, false, false,
                      {{"BN", "16"}, {"BM", "16"}, {"STAGES", "2"}, {"WARPS", "1"}, {"TR", "1"}});
  check_attention_bwd(cpu(), DType::BF16, 2, 2, 1, 50, 32, true, false,
                      {{"BN", "32"}, {"BM", "16"}, {"STAGES", "1"}, {"WARPS", "2"}, {"TR", "1"}});
  check_attention_bwd(cpu(), DType::F32, 1, 1, 1, 2, 16, true, true, {{"TR", "1"}});
  check_attention_bwd(cpu(), DType::F32, 1, 2, 2, 33, 24, true, false,
                      {{"BN", "16"}, {"BM", "32"}, {"STAGES", "2"}, {"WARPS", "2"}, {"TR", "1"}});
  check_attention_bwd_dq_kernel(
      cpu(), DType::F16, 1, 4, 2, 37, 40, true, false,
      {{"BN", "16"}, {"BM", "16"}, {"STAGES", "2"}, {"WARPS", "1"}, {"TR", "1"}});
}

TEST(RefAttention, BackwardF32Tf32AndExact) {
  check_attention_bwd(cpu(), DType::F32, 1, 2, 1, 33, 24, true, false,
                      {{"BN", "16"}, {"BM", "32"}, {"STAGES", "2"}, {"WARPS", "2"}});
  check_attention_bwd(cpu(), DType::F32, 1, 2, 2, 20, 16, false, true,
                      {{"BN", "16"}, {"BM", "16"}, {"STAGES", "1"}, {"WARPS", "1"}});
}

} // namespace
} // namespace tilejit::test
