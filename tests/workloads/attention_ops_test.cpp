// tilejit::ops::attention_forward / attention_backward's checks of block-sparse lists
// (AttentionBlocks), from C++ (Python builds consistent lists from a block_mask, so these errors
// are what a C++ caller meets): host tensors, so a good call stops at the device check.
#include "tests/workloads/op_test_util.h"
#include "workloads/op_buffers.h"

#include <tilejit/ops.h>

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace tilejit {
namespace {

using test::error_of;
using test::HostTensor;

constexpr int64_t B = 2, HQ = 4, HKV = 2, N = 300, D = 64; // 3 blocks of 128, 5 of 64

struct Forward {
  HostTensor q{DType::BF16, {B, HQ, N, D}}, k{DType::BF16, {B, HKV, N, D}},
      v{DType::BF16, {B, HKV, N, D}};
  ops::AttentionForwardArgs args(const Tensor& counts, const Tensor& indices, int64_t block) {
    ops::AttentionForwardArgs a;
    a.q = q.t;
    a.k = k.t;
    a.v = v.t;
    a.blocks = ops::AttentionBlocks{block, counts, indices};
    return a;
  }
};

TEST(AttentionOps, BlockListsAreCheckedByName) {
  Forward f;
  auto forward_error = [&](std::vector<int64_t> cs, std::vector<int64_t> is, int64_t block,
                           DType d = DType::I32) {
    HostTensor c(d, cs), i(DType::I32, is);
    return error_of([&] { ops::check_attention_forward(f.args(c.t, i.t, block)); });
  };
  // Good lists (a mask per batch and head, or broadcast) reach the device check.
  EXPECT_NE(forward_error({B, HQ, 3}, {B, HQ, 3, 3}, 128).find("host memory"), std::string::npos);
  EXPECT_NE(forward_error({1, 1, 5}, {1, 1, 5, 5}, 64).find("host memory"), std::string::npos);
  EXPECT_NE(
      forward_error({1, 1, 3}, {1, 1, 3, 3}, 100).find("block = 100 is not 16, 32, 64 or 128"),
      std::string::npos);
  EXPECT_NE(forward_error({1, 1, 3}, {1, 1, 3, 3}, 64)
                .find("tensor 'block_counts' (i32[1, 1, 3] cpu) has 3 in dimension 2 but "
                      "cdiv(N, block) = cdiv(300, 64) = 5"),
            std::string::npos);
  EXPECT_NE(forward_error({3, 1, 3}, {3, 1, 3, 3}, 128)
                .find("has 3 in dimension 0 but must have 1 or q's batch B = 2"),
            std::string::npos);
  EXPECT_NE(forward_error({1, 2, 3}, {1, 2, 3, 3}, 128)
                .find("has 2 in dimension 1 but must have 1 or q's heads Hq = 4"),
            std::string::npos);
  EXPECT_NE(forward_error({1, 1, 3}, {1, 1, 3, 3}, 128, DType::I64).find("block_counts"),
            std::string::npos);
  EXPECT_NE(forward_error({1, 1, 3}, {1, 1, 3, 2}, 128).find("tensor 'block_indices'"),
            std::string::npos);
  EXPECT_NE(forward_error({1, 1, 3}, {B, 1, 3, 3}, 128).find("tensor 'block_indices'"),
            std::string::npos);
  EXPECT_NE(forward_error({1, 1}, {1, 1, 3, 3}, 128).find("tensor 'block_counts'"),
            std::string::npos);
}

// The forward's work list (ops.h: AttentionItems) beside the lists: named in every error.
TEST(AttentionOps, WorkListIsCheckedByName) {
  Forward f;
  HostTensor counts(DType::I32, {1, 1, 3}), indices(DType::I32, {1, 1, 3, 3});
  auto items_error = [&](std::vector<int64_t> is, std::vector<int64_t> bs, DType d = DType::I32,
                         bool with_blocks = true) {
    HostTensor items(d, is), bounds(DType::I32, bs);
    ops::AttentionForwardArgs a = f.args(counts.t, indices.t, 128);
    if (!with_blocks) a.blocks.reset();
    a.items = ops::AttentionItems{items.t, bounds.t};
    return error_of([&] { ops::check_attention_forward(a); });
  };
  EXPECT_NE(items_error({12, 8}, {133}).find("host memory"), std::string::npos)
      << items_error({12, 8}, {133});
  EXPECT_NE(items_error({12, 8}, {133}, DType::I32, false)
                .find("tensor 'block_items' (i32[12, 8] cpu): a work list is given without the "
                      "block lists"),
            std::string::npos);
  EXPECT_NE(items_error({12, 7}, {133}).find("tensor 'block_items'"), std::string::npos);
  EXPECT_NE(items_error({12, 8}, {133}, DType::I64).find("tensor 'block_items'"),
            std::string::npos);
  EXPECT_NE(items_error({12, 8, 1}, {133}).find("tensor 'block_items'"), std::string::npos);
  EXPECT_NE(items_error({12, 8}, {1})
                .find("tensor 'block_bounds' (i32[1] cpu) must hold at "
                      "least 2 entries"),
            std::string::npos);
  EXPECT_NE(items_error({12, 8}, {2, 2}).find("tensor 'block_bounds'"), std::string::npos);
}

/// A backward's tensors on the host (so that a good call stops at the device check).
struct Backward : Forward {
  HostTensor o{DType::BF16, {B, HQ, N, D}}, dout{DType::BF16, {B, HQ, N, D}},
      lse{DType::F32, {B, HQ, N}};
  ops::AttentionBackwardArgs args() const {
    ops::AttentionBackwardArgs a;
    a.q = q.t;
    a.k = k.t;
    a.v = v.t;
    a.o = o.t;
    a.lse = lse.t;
    a.dout = dout.t;
    return a;
  }
};

TEST(AttentionOps, BackwardChecksItsBlockListsToo) {
  Backward f;
  HostTensor counts(DType::I32, {1, 1, 4}), indices(DType::I32, {1, 1, 4, 4});
  ops::AttentionBackwardArgs a = f.args();
  a.blocks = ops::AttentionBlocks{128, counts.t, indices.t};
  EXPECT_NE(error_of([&] {
              ops::check_attention_backward(a);
            }).find("attention_backward: tensor 'block_counts'"),
            std::string::npos)
      << error_of([&] { ops::check_attention_backward(a); });
}

// ATOMIC_DQ in the backward's config chooses how dq is computed (1: atomics, 0: attn_dq, for
// block-sparse attn_dq_sparse, which needs the forward's lists); any other value, or 0 with the
// backward's block lists alone, is an error naming the setting.
TEST(AttentionOps, BackwardChecksTheDqChoice) {
  Backward f;
  HostTensor counts(DType::I32, {1, 1, 3}), indices(DType::I32, {1, 1, 3, 3});
  ops::AttentionBackwardArgs a = f.args();
  auto error = [&] { return error_of([&] { ops::check_attention_backward(a); }); };
  for (const char* good : {"0", "1"}) {
    a.config = {{"ATOMIC_DQ", good}};
    EXPECT_NE(error().find("host memory"), std::string::npos) << good << ": " << error();
  }
  a.config = {{"ATOMIC_DQ", "2"}};
  EXPECT_NE(error().find("config ATOMIC_DQ=2 is not 0 (dq by attn_dq) or 1"), std::string::npos)
      << error();
  a.blocks = ops::AttentionBlocks{128, counts.t, indices.t};
  a.config = {{"ATOMIC_DQ", "0"}};
  EXPECT_NE(error().find("ATOMIC_DQ=0 (dq by attn_dq_sparse) needs the forward's block lists "
                         "(forward_blocks)"),
            std::string::npos)
      << error();
  a.config = {{"ATOMIC_DQ", "1"}};
  EXPECT_NE(error().find("host memory"), std::string::npos) << error();
  // With the forward's lists attn_dq_sparse can compute dq: both choices pass the checks.
  a.forward_blocks = ops::AttentionBlocks{128, counts.t, indices.t};
  for (const char* good : {"0", "1"}) {
    a.config = {{"ATOMIC_DQ", good}};
    EXPECT_NE(error().find("host memory"), std::string::npos) << good << ": " << error();
  }
}

// The backward's optional forward lists (AttentionBackwardArgs::forward_blocks): checked like
// the backward's own, under their own names, and only beside them, from the same block.
TEST(AttentionOps, BackwardChecksTheForwardsBlockLists) {
  Backward f;
  HostTensor counts(DType::I32, {1, 1, 3}), indices(DType::I32, {1, 1, 3, 3});
  HostTensor short_indices(DType::I32, {1, 1, 3, 2}), f32_counts(DType::F32, {1, 1, 3});
  ops::AttentionBackwardArgs a = f.args();
  auto error = [&] { return error_of([&] { ops::check_attention_backward(a); }); };
  a.forward_blocks = ops::AttentionBlocks{128, counts.t, indices.t};
  EXPECT_NE(error().find("forward_blocks are the "
                         "block-sparse forward's lists, given without the backward's own"),
            std::string::npos)
      << error();
  a.blocks = ops::AttentionBlocks{128, counts.t, indices.t};
  a.forward_blocks = ops::AttentionBlocks{64, counts.t, indices.t};
  EXPECT_NE(error().find("block = 64 but the backward's lists have block = 128"), std::string::npos)
      << error();
  a.forward_blocks = ops::AttentionBlocks{128, counts.t, short_indices.t};
  EXPECT_NE(error().find("tensor 'forward_block_indices'"), std::string::npos) << error();
  EXPECT_NE(error().find("cdiv(N, block)"), std::string::npos) << error();
  a.forward_blocks = ops::AttentionBlocks{128, f32_counts.t, indices.t};
  EXPECT_NE(error().find("tensor 'forward_block_counts'"), std::string::npos) << error();
  EXPECT_NE(error().find("must be i32"), std::string::npos) << error();
  a.forward_blocks = ops::AttentionBlocks{128, counts.t, indices.t};
  EXPECT_NE(error().find("host memory"), std::string::npos) << error();
}

// An op call's stream-ordered work buffers: an empty one needs no GPU (and no memory); any other
// asks the CUDA driver, which here says there is no GPU, by name.
TEST(CallBuffers, EmptyTensorsNeedNoGpuOthersAskTheDriver) {
  ops::CallBuffers work(nullptr);
  Tensor empty = work.allocate(DType::F32, {3, 0, 5}, 1);
  EXPECT_EQ(empty.data, nullptr);
  EXPECT_EQ(empty.device_index, 1);
  EXPECT_EQ(empty.shape, (std::vector<int64_t>{3, 0, 5}));
  EXPECT_TRUE(empty.is_contiguous());
  if (Runtime().has_gpu()) return; // allocated for real by the GPU tests' ops
  try {
    work.allocate(DType::BF16, {2, 8}, 0);
    ADD_FAILURE() << "allocated without a GPU";
  } catch (const NoGpuError& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
  }
}

} // namespace
} // namespace tilejit
