// gated_delta's linear attention kernel on the reference interpreter
// (tests/common/linear_attn_checks.cpp): causal and anti-causal, T not a multiple of the chunk
// (one step included), head dims that are not multiples of 16, Dk != Dv, VH split over programs,
// 16-bit inputs; the backward as the workload runs it (launches with exchanged operands, or dk
// and dv from linear_attn_bwd_kv).
#include "linear_attn_checks.h"

#include <gtest/gtest.h>

namespace tilejit::test {
namespace {

const Bindings kSmall = {{"C", "16"}, {"BV", "16"}, {"STAGES", "2"}, {"WARPS", "1"}};

TEST(RefLinearAttn, CausalOddSizes) {
  check_linear_attn(cpu(), DType::F16, 2, 37, 3, 24, 40, false, kSmall);
  check_linear_attn(cpu(), DType::BF16, 1, 70, 2, 32, 16, false,
                    {{"C", "32"}, {"BV", "16"}, {"STAGES", "3"}, {"WARPS", "2"}});
  check_linear_attn(cpu(), DType::F16, 1, 1, 1, 8, 8, false, kSmall); // one step
}

TEST(RefLinearAttn, AntiCausal) {
  check_linear_attn(cpu(), DType::F16, 1, 45, 2, 16, 24, true, kSmall);
  check_linear_attn(cpu(), DType::BF16, 2, 33, 1, 40, 32, true,
                    {{"C", "16"}, {"BV", "32"}, {"STAGES", "1"}, {"WARPS", "1"}});
}

TEST(RefLinearAttn, Backward) {
  check_linear_attn_backward(cpu(), DType::F16, 1, 37, 2, 24, 40, kSmall);
  check_linear_attn_backward(cpu(), DType::BF16, 2, 20, 1, 16, 16,
                             {{"C", "16"}, {"BV", "16"}, {"STAGES", "1"}, {"WARPS", "1"}});
}

// dk and dv in one reverse pass (linear_attn_bwd_kv): Dk != Dv, neither a multiple of 16, T not
// a multiple of the chunk, one step, more than one warp.
TEST(RefLinearAttn, BackwardKeysAndValuesInOnePass) {
  const Bindings one = {{"C", "16"}, {"STAGES", "2"}, {"WARPS", "1"}};
  const Bindings two = {{"C", "32"}, {"STAGES", "1"}, {"WARPS", "2"}};
  check_linear_attn_backward(cpu(), DType::F16, 1, 37, 2, 24, 40, kSmall, &one);
  check_linear_attn_backward(cpu(), DType::BF16, 2, 45, 1, 16, 8, kSmall, &two);
  check_linear_attn_backward(cpu(), DType::F16, 1, 1, 1, 8, 8, kSmall, &one);
}

// The gated delta rule's recurrent form: normalised q and k or not, with an initial state or not,
// odd sizes (Dk != Dv, not multiples of 16), VH split over programs, one step.
TEST(RefGatedDelta, RecurrentForward) {
  const Bindings small = {{"BV", "16"}, {"WARPS", "1"}};
  check_gated_delta_recurrent(cpu(), DType::F16, 2, 23, 3, 24, 40, true, false, small);
  check_gated_delta_recurrent(cpu(), DType::BF16, 1, 30, 2, 32, 16, true, true,
                              {{"BV", "32"}, {"WARPS", "2"}});
  check_gated_delta_recurrent(cpu(), DType::F16, 1, 17, 1, 16, 24, false, true, small);
  check_gated_delta_recurrent(cpu(), DType::BF16, 1, 1, 1, 8, 8, true, false, small);
}

// The chunked form (gated_delta_prepare, then gated_delta_chunk): T past a chunk and not a
// multiple of it, one step, normalised or not, h0 or not, Dk != Dv and not multiples of 16, VH
// split over programs and over prepare's loop, chunks of 16 and 32.
TEST(RefGatedDelta, ChunkedForward) {
  const Bindings prep = {{"BV", "16"}, {"WARPS", "1"}};
  const Bindings chunk = {{"BV", "16"}, {"STAGES", "2"}, {"WARPS", "1"}};
  check_gated_delta_chunked(cpu(), DType::F16, 2, 37, 3, 24, 40, true, false, 16, prep, chunk);
  check_gated_delta_chunked(cpu(), DType::BF16, 1, 45, 2, 32, 16, true, true, 32,
                            {{"BV", "32"}, {"WARPS", "2"}},
                            {{"BV", "16"}, {"STAGES", "1"}, {"WARPS", "2"}});
  check_gated_delta_chunked(cpu(), DType::F16, 1, 17, 1, 16, 24, false, true, 16, prep, chunk);
  check_gated_delta_chunked(cpu(), DType::BF16, 1, 1, 1, 8, 8, true, false, 16, prep, chunk);
}

// The rule's backward, step 1: the state gradients at the chunks' ends and h0's, normalised or
// not, with a final-state gradient or not, T past a chunk and not a multiple of it, one step.
TEST(RefGatedDelta, BackwardStateGradients) {
  const Bindings small = {{"BV", "16"}, {"STAGES", "2"}, {"WARPS", "1"}};
  check_gated_delta_bwd_state(cpu(), DType::F16, 2, 37, 3, 24, 40, true, true, 16, small);
  check_gated_delta_bwd_state(cpu(), DType::BF16, 1, 45, 2, 32, 16, false, false, 32,
                              {{"BV", "16"}, {"STAGES", "1"}, {"WARPS", "2"}});
  check_gated_delta_bwd_state(cpu(), DType::F16, 1, 1, 1, 8, 8, true, true, 16, small);
}

// The rule's whole backward (four launches): every gradient, normalised or not, h0 and dht or
// not, T past a chunk and not a multiple of it, Dk != Dv and not multiples of 16, one step.
TEST(RefGatedDelta, Backward) {
  const Bindings small = {{"BV", "16"}, {"WARPS", "1"}};
  check_gated_delta_backward(cpu(), DType::F16, 2, 37, 2, 24, 40, true, true, true, 16, small);
  check_gated_delta_backward(cpu(), DType::BF16, 1, 45, 2, 32, 16, false, false, false, 32,
                             {{"BV", "32"}, {"WARPS", "2"}});
  check_gated_delta_backward(cpu(), DType::F16, 2, 1, 3, 8, 8, true, true, true, 16, small);
}

} // namespace
} // namespace tilejit::test
