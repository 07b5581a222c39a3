// Tensor maps for the tensor memory accelerator (TMA, sm_90): which arguments qualify, and the
// CUtensorMap a kernel's TMA copies read (GeneratedKernel::tma_maps says which and how).
#pragma once

#include "compiler/target.h"
#include "runtime/cuda_abi.h"

#include <tilejit/tensor.h>

#include <string>

namespace tilejit {

/// Whether the TMA can fetch boxes of `t`: a non-empty tensor of rank 2 to 5 whose base is
/// 16-byte aligned, whose last dimension is contiguous and every other stride (in any order) a
/// multiple of 16 bytes at least a row long (no overlapping rows, no broadcast stride 0), sizes
/// in 32 bits, strides below 2^40 bytes. The runtime compiles TMA copies only for such
/// arguments (CompileOptions).
bool tma_compatible(const Tensor& t);

/// The map of `t` for `spec`: boxes of spec.box_rows x spec.box_cols elements (one element deep
/// in the outer dimensions of a tensor of rank 3 to 5), the 128-byte
/// swizzle (tj::swizzle128's layout), zeros out of range. `name` (the parameter) is named in
/// the error the driver's refusal becomes.
cu::CUtensorMap encode_tma_map(const Tensor& t, const TmaMapSpec& spec, const std::string& name);

} // namespace tilejit
