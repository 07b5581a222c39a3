// Tensor maps for the tensor memory accelerator (TMA, sm_90): which arguments qualify, and the
// CUtensorMap a kernel's TMA copies read (GeneratedKernel::tma_maps says which and how).
#pragma once

#include "compiler/target.h"
#include "runtime/cuda_abi.h"

#include <tilejit/tensor.h>

#include <string>

namespace tilejit {

/// Whether the TMA can fetch boxes of `t`: a rank-2, non-empty tensor whose base is 16-byte
/// aligned, whose rows are contiguous, no longer than their stride (no overlapping rows, no
/// broadcast stride 0) and a multiple of 16 bytes apart, sizes in 32 bits, strides below
/// 2^40 bytes. The runtime compiles TMA copies only for such arguments (CompileOptions).
bool tma_compatible(const Tensor& t);

/// The map of `t` for `spec`: boxes of spec.box_rows x spec.box_cols elements, the 128-byte
/// swizzle (tj::swizzle128's layout), zeros out of range. `name` (the parameter) is named in
/// the error the driver's refusal becomes.
cu::CUtensorMap encode_tma_map(const Tensor& t, const TmaMapSpec& spec, const std::string& name);

} // namespace tilejit
