#include "runtime/tma_map.h"

#include "runtime/cuda_driver.h"
#include "support/error.h"
#include "support/text.h"

namespace tilejit {

bool tma_compatible(const Tensor& t) {
  // Rank 2 to 5 (a kernel's TMA copy takes a 2-D range after point subscripts of the outer
  // dimensions); the last dimension contiguous; every other stride a multiple of 16 bytes under
  // 2^40 and at least a row long (no overlapping rows, no broadcast), in any order (heads
  // between rows, [B, N, H, D] seen as [B, H, N, D]), as cuTensorMapEncodeTiled takes them:
  // anything else is copied by the threads instead.
  const size_t rank = t.shape.size();
  if (rank < 2 || rank > 5 || t.strides.size() != rank || !t.data) return false;
  const int64_t esize = dtype_size(t.dtype);
  if (esize != 1 && esize != 2 && esize != 4) return false;
  if (reinterpret_cast<uintptr_t>(t.data) % 16 != 0 || t.strides[rank - 1] != 1) return false;
  for (size_t i = 0; i < rank; ++i)
    if (t.shape[i] < 1 || t.shape[i] > INT32_MAX) return false;
  const int64_t row = t.shape[rank - 1];
  for (size_t i = 0; i + 1 < rank; ++i) {
    const int64_t stride = t.strides[i];
    if (stride < row || (stride * esize) % 16 != 0 || stride * esize >= (int64_t(1) << 40))
      return false;
  }
  return true;
}

cu::CUtensorMap encode_tma_map(const Tensor& t, const TmaMapSpec& spec, const std::string& name) {
  TJ_ICHECK(tma_compatible(t), "a tensor map for '", name, "', which the TMA cannot describe");
  TJ_ICHECK(dtype_size(t.dtype) == spec.elem_bytes, "tensor map element size");
  CudaDriver& d = CudaDriver::get();
  TJ_ICHECK(d.has_tensor_maps(), "a TMA kernel compiled for a driver without tensor maps");
  // f32 as FLOAT32: the TMA's tensor reductions (a bulk atomic_add) add by the map's type;
  // copies move bits whatever it is.
  const int type = spec.elem_bytes == 1    ? cu::CU_TENSOR_MAP_DATA_TYPE_UINT8
                   : spec.elem_bytes == 2  ? cu::CU_TENSOR_MAP_DATA_TYPE_UINT16
                   : t.dtype == DType::F32 ? cu::CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                           : cu::CU_TENSOR_MAP_DATA_TYPE_UINT32;
  // Innermost first: columns, rows, then the outer dimensions; strides in bytes (the innermost
  // one implied); the box is one element deep outside the rows and columns.
  const unsigned rank = static_cast<unsigned>(t.shape.size());
  unsigned long long dims[5] = {}, strides[4] = {};
  unsigned box[5] = {}, element_strides[5] = {};
  for (unsigned i = 0; i < rank; ++i) {
    dims[i] = static_cast<unsigned long long>(t.shape[rank - 1 - i]);
    if (i > 0)
      strides[i - 1] = static_cast<unsigned long long>(t.strides[rank - 1 - i] * spec.elem_bytes);
    box[i] = i == 0   ? static_cast<unsigned>(spec.box_cols)
             : i == 1 ? static_cast<unsigned>(spec.box_rows)
                      : 1u;
    element_strides[i] = 1;
  }
  cu::CUtensorMap map{};
  cu::CUresult r = d.cuTensorMapEncodeTiled(
      &map, type, rank, t.data, dims, strides, box, element_strides,
      cu::CU_TENSOR_MAP_INTERLEAVE_NONE,
      spec.swizzle == 128 ? cu::CU_TENSOR_MAP_SWIZZLE_128B : cu::CU_TENSOR_MAP_SWIZZLE_NONE,
      cu::CU_TENSOR_MAP_L2_PROMOTION_L2_256B, cu::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != cu::CUDA_SUCCESS) {
    std::string shape, stride;
    for (unsigned i = 0; i < rank; ++i) {
      shape += str(i ? ", " : "", t.shape[i]);
      stride += str(i ? ", " : "", t.strides[i]);
    }
    throw Error(str("tensor '", name, "' [", shape, "] (strides ", stride,
                    "): the driver refused its TMA descriptor (boxes of ", spec.box_rows, " x ",
                    spec.box_cols, "): ", d.error_name(r), ": ", d.error_string(r)));
  }
  return map;
}

} // namespace tilejit
