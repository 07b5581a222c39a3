// Tensor views: element counts, contiguity (PyTorch's rule) and descriptions; how launch
// arguments are packed for tj::Tensor and tj::Tensor32.
#include <tilejit/tensor.h>

#include "runtime/kernel_args.h"

#include "support/error.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace tilejit {
namespace {

TEST(TensorTest, ContiguousStridesAreSuffixProducts) {
  Tensor t = Tensor::contiguous(nullptr, DType::F16, {3, 32, 128});
  EXPECT_EQ(t.strides, (std::vector<int64_t>{4096, 128, 1}));
  EXPECT_EQ(t.numel(), 3 * 32 * 128);
  EXPECT_EQ(t.rank(), 3);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.device, DeviceKind::CUDA);
  EXPECT_EQ(t.device_index, 0);
}

TEST(TensorTest, RankZeroIsOneElement) {
  Tensor t = Tensor::contiguous(nullptr, DType::F32, {});
  EXPECT_EQ(t.numel(), 1);
  EXPECT_EQ(t.rank(), 0);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.describe(), "f32[] cuda:0");
}

TEST(TensorTest, Contiguity) {
  Tensor t = Tensor::contiguous(nullptr, DType::F32, {4, 5});
  t.strides = {1, 4}; // a transpose
  EXPECT_FALSE(t.is_contiguous());
  t.strides = {10, 1}; // a row slice of a wider matrix
  EXPECT_FALSE(t.is_contiguous());
  // Size-1 dimensions may carry any stride.
  Tensor u = Tensor::contiguous(nullptr, DType::F32, {1, 5, 1});
  u.strides = {999, 1, 7};
  EXPECT_TRUE(u.is_contiguous());
  // Empty tensors are contiguous whatever their strides.
  Tensor e = Tensor::contiguous(nullptr, DType::F32, {0, 5});
  e.strides = {3, 3};
  EXPECT_EQ(e.numel(), 0);
  EXPECT_TRUE(e.is_contiguous());
  // Mismatched strides are not a valid contiguous view.
  Tensor bad = Tensor::contiguous(nullptr, DType::F32, {2, 2});
  bad.strides = {2};
  EXPECT_FALSE(bad.is_contiguous());
}

TEST(TensorTest, Describe) {
  EXPECT_EQ(Tensor::contiguous(nullptr, DType::F16, {3, 32, 128}).describe(),
            "f16[3, 32, 128] cuda:0");
  Tensor t = Tensor::contiguous(nullptr, DType::I32, {4, 4}, DeviceKind::CPU);
  EXPECT_EQ(t.describe(), "i32[4, 4] cpu");
  t.strides = {1, 4};
  EXPECT_EQ(t.describe(), "i32[4, 4] strides [1, 4] cpu");
  Tensor g = Tensor::contiguous(nullptr, DType::BF16, {8});
  g.device_index = 3;
  EXPECT_EQ(g.describe(), "bf16[8] cuda:3");
}

} // namespace

// The launcher compiles 32-bit index math only when every offset of every tensor fits.
TEST(TensorTest, OffsetsFitInt32) {
  // The largest paged_sparse K cache: 24576 pages x 16 x 8 heads x 256 = 805M elements.
  EXPECT_TRUE(offsets_fit_int32(Tensor::contiguous(nullptr, DType::F16, {24576, 16, 8, 256})));
  // 2^31 elements: the last offset is 2^31 - 1, which still fits; one more page does not.
  EXPECT_TRUE(offsets_fit_int32(Tensor::contiguous(nullptr, DType::F16, {65536, 16, 8, 256})));
  EXPECT_FALSE(offsets_fit_int32(Tensor::contiguous(nullptr, DType::F16, {65537, 16, 8, 256})));
  // Sizes are compared as 32-bit integers too: a dimension of 2^31 does not fit.
  EXPECT_TRUE(offsets_fit_int32(Tensor::contiguous(nullptr, DType::F32, {(int64_t(1) << 31) - 1})));
  EXPECT_FALSE(offsets_fit_int32(Tensor::contiguous(nullptr, DType::F32, {int64_t(1) << 31})));
  // A broadcast (stride 0) dimension adds nothing; an empty tensor is never addressed.
  Tensor b = Tensor::contiguous(nullptr, DType::F32, {int64_t(1) << 40, 4});
  b.strides = {0, 1};
  EXPECT_FALSE(offsets_fit_int32(b)); // the size itself does not fit
  b.shape = {1 << 30, 4};
  EXPECT_TRUE(offsets_fit_int32(b));
  EXPECT_TRUE(offsets_fit_int32(Tensor::contiguous(nullptr, DType::F32, {0, 1 << 20})));
  // Negative strides count by magnitude.
  Tensor n = Tensor::contiguous(nullptr, DType::F32, {3, 1 << 30});
  n.strides = {-(1 << 30), 1};
  EXPECT_FALSE(offsets_fit_int32(n));
}

// The bytes cuLaunchKernel gets for one tensor: the layout of tj::Tensor<T, R> (8-byte sizes and
// strides) or tj::Tensor32<T, R> (4-byte), pointer first.
TEST(KernelArgsTest, TensorsArePackedInTheKernelsIndexWidth) {
  alignas(16) static float data[64];
  Tensor t = Tensor::contiguous(data, DType::F32, {3, 5, 4});
  t.strides = {40, 8, 1}; // a padded view: strides differ from the sizes
  KernelArgs wide, narrow;
  wide.add_tensor(t);
  narrow.add_tensor(t, /*index32=*/true);
  auto check = [&](void* p, auto zero) {
    using I = decltype(zero);
    struct Packed {
      float* ptr;
      I shape[3];
      I stride[3];
    } got;
    std::memcpy(&got, p, sizeof got);
    EXPECT_EQ(got.ptr, data);
    for (int d = 0; d < 3; ++d) {
      EXPECT_EQ(got.shape[d], t.shape[d]) << "dim " << d;
      EXPECT_EQ(got.stride[d], t.strides[d]) << "dim " << d;
    }
  };
  check(wide.pointers()[0], int64_t(0));
  check(narrow.pointers()[0], int32_t(0));
  // A value that does not fit 32 bits never reaches a 32-bit kernel silently truncated.
  Tensor big = Tensor::contiguous(data, DType::F32, {int64_t(1) << 32});
  KernelArgs a;
  EXPECT_THROW(a.add_tensor(big, true), InternalError);
}

} // namespace tilejit
