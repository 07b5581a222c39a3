#include "runtime/tma_map.h"

#include "runtime/cuda_driver.h"
#include "support/error.h"
#include "support/text.h"

namespace tilejit {

bool tma_compatible(const Tensor& t) {
  if (t.shape.size() != 2 || t.strides.size() != 2 || !t.data) return false;
  const int64_t esize = dtype_size(t.dtype);
  if (esize != 1 && esize != 2 && esize != 4) return false;
  const int64_t rows = t.shape[0], cols = t.shape[1], stride = t.strides[0];
  if (rows < 1 || cols < 1 || rows > INT32_MAX || cols > INT32_MAX) return false;
  if (reinterpret_cast<uintptr_t>(t.data) % 16 != 0 || t.strides[1] != 1) return false;
  if (stride < cols || (stride * esize) % 16 != 0 || stride * esize >= (int64_t(1) << 40))
    return false;
  return true;
}

cu::CUtensorMap encode_tma_map(const Tensor& t, const TmaMapSpec& spec, const std::string& name) {
  TJ_ICHECK(tma_compatible(t), "a tensor map for '", name, "', which the TMA cannot describe");
  TJ_ICHECK(dtype_size(t.dtype) == spec.elem_bytes, "tensor map element size");
  CudaDriver& d = CudaDriver::get();
  TJ_ICHECK(d.has_tensor_maps(), "a TMA kernel compiled for a driver without tensor maps");
  const int type = spec.elem_bytes == 1   ? cu::CU_TENSOR_MAP_DATA_TYPE_UINT8
                   : spec.elem_bytes == 2 ? cu::CU_TENSOR_MAP_DATA_TYPE_UINT16
                                          : cu::CU_TENSOR_MAP_DATA_TYPE_UINT32;
  // Innermost first: columns, then rows; the row stride in bytes.
  const unsigned long long dims[2] = {static_cast<unsigned long long>(t.shape[1]),
                                      static_cast<unsigned long long>(t.shape[0])};
  const unsigned long long strides[1] = {
      static_cast<unsigned long long>(t.strides[0] * spec.elem_bytes)};
  const unsigned box[2] = {static_cast<unsigned>(spec.box_cols),
                           static_cast<unsigned>(spec.box_rows)};
  const unsigned element_strides[2] = {1, 1};
  cu::CUtensorMap map{};
  cu::CUresult r = d.cuTensorMapEncodeTiled(
      &map, type, 2, t.data, dims, strides, box, element_strides, cu::CU_TENSOR_MAP_INTERLEAVE_NONE,
      cu::CU_TENSOR_MAP_SWIZZLE_128B, cu::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      cu::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != cu::CUDA_SUCCESS)
    throw Error(str("tensor '", name, "' [", t.shape[0], ", ", t.shape[1], "] (row stride ",
                    t.strides[0], "): the driver refused its TMA descriptor (boxes of ",
                    spec.box_rows, " x ", spec.box_cols, "): ", d.error_name(r), ": ",
                    d.error_string(r)));
  return map;
}

} // namespace tilejit
