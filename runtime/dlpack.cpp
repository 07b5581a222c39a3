// DLPack <-> tilejit::Tensor (see include/tilejit/dlpack.h).
#include <tilejit/dlpack.h>

#include "support/error.h"

#include <memory>

namespace tilejit {

namespace {

// DLPack 0.6 predates a boolean type code; later versions (and PyTorch) use 6.
constexpr uint8_t kDLBoolCode = 6;

const char* type_code_name(uint8_t code) {
  switch (code) {
  case kDLInt:
    return "int";
  case kDLUInt:
    return "uint";
  case kDLFloat:
    return "float";
  case kDLOpaqueHandle:
    return "opaque handle";
  case kDLBfloat:
    return "bfloat";
  case kDLComplex:
    return "complex";
  case kDLBoolCode:
    return "bool";
  }
  return "unknown type code";
}

const char* device_type_name(int type) {
  switch (type) {
  case kDLCPU:
    return "kDLCPU";
  case kDLCUDA:
    return "kDLCUDA";
  case kDLCUDAHost:
    return "kDLCUDAHost";
  case kDLOpenCL:
    return "kDLOpenCL";
  case kDLVulkan:
    return "kDLVulkan";
  case kDLMetal:
    return "kDLMetal";
  case kDLVPI:
    return "kDLVPI";
  case kDLROCM:
    return "kDLROCM";
  case kDLROCMHost:
    return "kDLROCMHost";
  case kDLExtDev:
    return "kDLExtDev";
  case kDLCUDAManaged:
    return "kDLCUDAManaged";
  }
  return "unknown device type";
}

DLDataType to_dl_dtype(DType t) {
  auto make = [](uint8_t code, int bits) {
    return DLDataType{code, static_cast<uint8_t>(bits), 1};
  };
  switch (t) {
  case DType::Bool:
    return make(kDLBoolCode, 8);
  case DType::I8:
    return make(kDLInt, 8);
  case DType::U8:
    return make(kDLUInt, 8);
  case DType::I16:
    return make(kDLInt, 16);
  case DType::I32:
    return make(kDLInt, 32);
  case DType::U32:
    return make(kDLUInt, 32);
  case DType::I64:
    return make(kDLInt, 64);
  case DType::F16:
    return make(kDLFloat, 16);
  case DType::BF16:
    return make(kDLBfloat, 16);
  case DType::F32:
    return make(kDLFloat, 32);
  case DType::F64:
    return make(kDLFloat, 64);
  }
  TJ_ICHECK(false, "DType ", static_cast<int>(t), " has no DLPack code");
  return {};
}

DType from_dl_dtype(DLDataType t) {
  for (DType d : {DType::Bool, DType::I8, DType::U8, DType::I16, DType::I32, DType::U32, DType::I64,
                  DType::F16, DType::BF16, DType::F32, DType::F64}) {
    DLDataType candidate = to_dl_dtype(d);
    if (candidate.code == t.code && candidate.bits == t.bits && t.lanes == 1) return d;
  }
  throw Error(str("DLPack dtype ", type_code_name(t.code), " (code ", int(t.code), ") with ",
                  int(t.bits), " bits and ", t.lanes,
                  " lanes has no tilejit equivalent (supported: bool, i8, u8, i16, i32, u32, i64, "
                  "f16, bf16, f32, f64, one lane)"));
}

/// What to_dlpack allocates; the DLManagedTensor comes first so its address is the block's.
struct DLPackView {
  DLManagedTensor managed{};
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

} // namespace

Tensor from_dlpack(const DLTensor& t) {
  Tensor out;
  switch (t.device.device_type) {
  case kDLCPU:
  case kDLCUDAHost: // pinned host memory: a CPU pointer the GPU can also read
    out.device = DeviceKind::CPU;
    break;
  case kDLCUDA:
  case kDLCUDAManaged: // managed memory: valid as a device pointer
    out.device = DeviceKind::CUDA;
    break;
  default:
    throw Error(str("DLPack device ", device_type_name(t.device.device_type), " (",
                    int(t.device.device_type),
                    ") is not supported by tilejit (kDLCPU, kDLCUDA, kDLCUDAHost and "
                    "kDLCUDAManaged are)"));
  }
  out.device_index = t.device.device_id;
  out.dtype = from_dl_dtype(t.dtype);
  if (t.ndim < 0) throw Error(str("DLPack tensor has negative ndim ", t.ndim));
  if (t.ndim > 0 && !t.shape) throw Error(str("DLPack tensor of ndim ", t.ndim, " has no shape"));
  out.shape.assign(t.shape, t.shape + t.ndim);
  for (int i = 0; i < t.ndim; ++i)
    if (out.shape[size_t(i)] < 0)
      throw Error(
          str("DLPack tensor has negative size ", out.shape[size_t(i)], " in dimension ", i));
  if (t.strides) {
    out.strides.assign(t.strides, t.strides + t.ndim);
  } else {
    out.strides = Tensor::contiguous(nullptr, out.dtype, out.shape).strides;
  }
  out.data = t.data ? static_cast<char*>(t.data) + t.byte_offset : nullptr;
  return out;
}

DLManagedTensor* to_dlpack(const Tensor& t) {
  if (t.strides.size() != t.shape.size())
    throw Error(str("cannot export tensor ", t.describe(), " to DLPack: ", t.shape.size(),
                    " dimensions but ", t.strides.size(), " strides"));
  auto view = std::make_unique<DLPackView>();
  view->shape = t.shape;
  view->strides = t.strides;
  DLTensor& dl = view->managed.dl_tensor;
  dl.data = t.data;
  dl.device = DLDevice{t.device == DeviceKind::CUDA ? kDLCUDA : kDLCPU, t.device_index};
  dl.ndim = t.rank();
  dl.dtype = to_dl_dtype(t.dtype);
  dl.shape = view->shape.data();
  dl.strides = view->strides.data();
  dl.byte_offset = 0;
  view->managed.manager_ctx = view.get();
  view->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<DLPackView*>(self->manager_ctx);
  };
  return &view.release()->managed;
}

} // namespace tilejit
