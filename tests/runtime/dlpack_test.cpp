// DLPack conversion: every dtype both ways, strides and offsets, and what is refused.
#include <tilejit/dlpack.h>

#include "support/error.h"

#include <gtest/gtest.h>

namespace tilejit {
namespace {

const DType kAllDTypes[] = {DType::Bool, DType::I8,  DType::U8,  DType::I16,
                            DType::I32,  DType::U32, DType::I64, DType::F16,
                            DType::BF16, DType::F32, DType::F64};

/// Owns a DLManagedTensor from to_dlpack and calls its deleter, as a consumer would.
struct Managed {
  DLManagedTensor* m;
  ~Managed() { m->deleter(m); }
};

TEST(DLPackTest, RoundTripEveryDType) {
  alignas(16) static char storage[1024];
  for (DType dt : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor t = Tensor::contiguous(storage, dt, {2, 3, 5});
    t.device_index = 1;
    Managed managed{to_dlpack(t)};
    const DLTensor& dl = managed.m->dl_tensor;
    EXPECT_EQ(dl.dtype.bits, dtype_size(dt) * 8);
    EXPECT_EQ(dl.dtype.lanes, 1);
    EXPECT_EQ(dl.device.device_type, kDLCUDA);
    EXPECT_EQ(dl.device.device_id, 1);
    EXPECT_EQ(dl.ndim, 3);
    Tensor back = from_dlpack(dl);
    EXPECT_EQ(back.dtype, dt);
    EXPECT_EQ(back.data, t.data);
    EXPECT_EQ(back.shape, t.shape);
    EXPECT_EQ(back.strides, t.strides);
    EXPECT_EQ(back.device, DeviceKind::CUDA);
    EXPECT_EQ(back.device_index, 1);
  }
}

TEST(DLPackTest, DTypeCodesMatchTheStandard) {
  auto code_of = [](DType dt) {
    Managed m{to_dlpack(Tensor::contiguous(nullptr, dt, {1}))};
    return std::make_pair(int(m.m->dl_tensor.dtype.code), int(m.m->dl_tensor.dtype.bits));
  };
  EXPECT_EQ(code_of(DType::F16), std::make_pair(int(kDLFloat), 16));
  EXPECT_EQ(code_of(DType::BF16), std::make_pair(int(kDLBfloat), 16));
  EXPECT_EQ(code_of(DType::I64), std::make_pair(int(kDLInt), 64));
  EXPECT_EQ(code_of(DType::U32), std::make_pair(int(kDLUInt), 32));
  EXPECT_EQ(code_of(DType::Bool), std::make_pair(6, 8)) << "kDLBool from DLPack 0.8 on";
}

TEST(DLPackTest, StridesAndCpuDevice) {
  float storage[20];
  Tensor t = Tensor::contiguous(storage, DType::F32, {4, 5}, DeviceKind::CPU);
  t.strides = {1, 4}; // column-major view
  Managed managed{to_dlpack(t)};
  EXPECT_EQ(managed.m->dl_tensor.device.device_type, kDLCPU);
  EXPECT_EQ(managed.m->dl_tensor.strides[0], 1);
  EXPECT_EQ(managed.m->dl_tensor.strides[1], 4);
  Tensor back = from_dlpack(managed.m->dl_tensor);
  EXPECT_EQ(back.strides, (std::vector<int64_t>{1, 4}));
  EXPECT_FALSE(back.is_contiguous());
  EXPECT_EQ(back.device, DeviceKind::CPU);
}

DLTensor dl_tensor(void* data, int64_t* shape, int ndim, DLDataType dtype) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCUDA, 0};
  t.ndim = ndim;
  t.dtype = dtype;
  t.shape = shape;
  return t;
}

TEST(DLPackTest, NullStridesMeanRowMajorAndOffsetIsFolded) {
  static double storage[64];
  int64_t shape[] = {2, 3, 4};
  DLTensor dl = dl_tensor(storage, shape, 3, {kDLFloat, 64, 1});
  dl.byte_offset = 16;
  Tensor t = from_dlpack(dl);
  EXPECT_EQ(t.strides, (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(t.data, static_cast<void*>(storage + 2));
  EXPECT_EQ(t.dtype, DType::F64);
}

TEST(DLPackTest, ManagedAndPinnedMemoryMap) {
  int64_t shape[] = {8};
  DLTensor dl = dl_tensor(nullptr, shape, 1, {kDLInt, 32, 1});
  dl.device = {kDLCUDAManaged, 2};
  EXPECT_EQ(from_dlpack(dl).device, DeviceKind::CUDA);
  EXPECT_EQ(from_dlpack(dl).device_index, 2);
  dl.device = {kDLCUDAHost, 0};
  EXPECT_EQ(from_dlpack(dl).device, DeviceKind::CPU);
}

void expect_error(const DLTensor& dl, const std::string& needle) {
  try {
    from_dlpack(dl);
    ADD_FAILURE() << "no error; expected one mentioning " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(DLPackTest, UnsupportedInputsAreNamed) {
  int64_t shape[] = {4, 4};
  expect_error(dl_tensor(nullptr, shape, 2, {kDLComplex, 64, 1}), "complex");
  expect_error(dl_tensor(nullptr, shape, 2, {kDLFloat, 8, 1}), "float (code 2) with 8 bits");
  expect_error(dl_tensor(nullptr, shape, 2, {kDLFloat, 32, 4}), "4 lanes");
  expect_error(dl_tensor(nullptr, shape, 2, {kDLUInt, 16, 1}), "uint");
  DLTensor rocm = dl_tensor(nullptr, shape, 2, {kDLFloat, 32, 1});
  rocm.device = {kDLROCM, 0};
  expect_error(rocm, "kDLROCM");
  DLTensor opencl = rocm;
  opencl.device = {kDLOpenCL, 0};
  expect_error(opencl, "kDLOpenCL");
  expect_error(dl_tensor(nullptr, nullptr, 2, {kDLFloat, 32, 1}), "no shape");
  int64_t negative[] = {4, -1};
  expect_error(dl_tensor(nullptr, negative, 2, {kDLFloat, 32, 1}), "negative size -1");
}

TEST(DLPackTest, ToDlpackRejectsMismatchedStrides) {
  Tensor t = Tensor::contiguous(nullptr, DType::F32, {2, 2});
  t.strides = {1};
  EXPECT_THROW(to_dlpack(t), Error);
}

} // namespace
} // namespace tilejit
