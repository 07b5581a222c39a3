// Which arguments the runtime lets kernels fetch by TMA (runtime/tma_map.h): the conditions
// cuTensorMapEncodeTiled puts on a tensor, checked without a GPU.
#include "runtime/tma_map.h"

#include <gtest/gtest.h>

namespace tilejit {
namespace {

alignas(256) unsigned char storage[1 << 16];

Tensor view(int64_t offset_bytes, DType t, std::vector<int64_t> shape,
            std::vector<int64_t> strides) {
  Tensor v = Tensor::contiguous(storage + offset_bytes, t, shape);
  v.strides = std::move(strides);
  return v;
}

TEST(TmaMap, ContiguousAlignedMatricesQualify) {
  EXPECT_TRUE(tma_compatible(view(0, DType::F16, {64, 128}, {128, 1})));
  EXPECT_TRUE(tma_compatible(view(0, DType::BF16, {1, 8}, {8, 1})));
  EXPECT_TRUE(tma_compatible(view(16, DType::I32, {3, 4}, {4, 1})));
  // A column slice of a wider matrix: rows 16-byte multiples apart, longer than the slice.
  EXPECT_TRUE(tma_compatible(view(32, DType::F16, {10, 24}, {64, 1})));
}

TEST(TmaMap, WhatTheAcceleratorCannotDescribeIsRefused) {
  EXPECT_FALSE(tma_compatible(view(2, DType::F16, {64, 128}, {128, 1}))); // base not 16-aligned
  EXPECT_FALSE(tma_compatible(view(0, DType::F16, {64, 100}, {100, 1}))); // rows 200 bytes apart
  EXPECT_FALSE(tma_compatible(view(0, DType::F16, {64, 128}, {1, 64})));  // columns not contiguous
  EXPECT_FALSE(tma_compatible(view(0, DType::F16, {64, 128}, {0, 1})));   // broadcast rows
  EXPECT_FALSE(tma_compatible(view(0, DType::F16, {64, 128}, {64, 1})));  // overlapping rows
  EXPECT_FALSE(tma_compatible(view(0, DType::F16, {0, 128}, {128, 1})));  // empty
  EXPECT_FALSE(tma_compatible(view(0, DType::F16, {128}, {1})));          // rank 1
  EXPECT_FALSE(tma_compatible(view(0, DType::F16, {2, 2, 2, 2, 2, 8}, {256, 128, 64, 32, 16, 1})));
  EXPECT_FALSE(tma_compatible(view(0, DType::F64, {4, 4}, {4, 1}))); // 8-byte elements
  Tensor none = view(0, DType::F16, {4, 8}, {8, 1});
  none.data = nullptr;
  EXPECT_FALSE(tma_compatible(none));
}

// Attention's k[B, H, N, D]: a kernel's TMA copy takes rows and columns after point subscripts
// of the outer dimensions, so ranks 3 to 5 qualify on the same conditions, the outer strides
// in any order.
TEST(TmaMap, HigherRanksQualifyOnTheSameConditions) {
  EXPECT_TRUE(tma_compatible(view(0, DType::F16, {2, 4, 8}, {32, 8, 1})));
  EXPECT_TRUE(tma_compatible(view(0, DType::BF16, {2, 3, 5, 64}, {960, 320, 64, 1})));
  EXPECT_TRUE(tma_compatible(view(0, DType::BF16, {2, 2, 2, 2, 8}, {128, 64, 32, 16, 1})));
  // Heads interleaved with rows ([B, N, H, D] seen as [B, H, N, D]): strides need not decrease.
  EXPECT_TRUE(tma_compatible(view(0, DType::BF16, {2, 3, 5, 64}, {960, 64, 192, 1})));
  EXPECT_FALSE(tma_compatible(view(0, DType::BF16, {2, 3, 5, 64}, {960, 0, 64, 1})));   // broadcast
  EXPECT_FALSE(tma_compatible(view(0, DType::BF16, {2, 3, 5, 64}, {960, 300, 64, 1}))); // 600 bytes
  EXPECT_FALSE(tma_compatible(view(0, DType::BF16, {2, 3, 5, 64}, {960, 32, 64, 1})));  // overlap
  EXPECT_FALSE(tma_compatible(view(8, DType::BF16, {2, 3, 5, 64}, {960, 320, 64, 1}))); // base
  EXPECT_FALSE(tma_compatible(view(0, DType::BF16, {2, 3, 5, 64}, {960, 320, 1, 5})));  // columns
  EXPECT_FALSE(tma_compatible(view(0, DType::BF16, {2, 3, 0, 64}, {960, 320, 64, 1}))); // empty
}

} // namespace
} // namespace tilejit
