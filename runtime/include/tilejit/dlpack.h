// Conversion between tilejit tensor views and DLPack (0.6), the exchange format of PyTorch,
// JAX and CuPy, so a binding can pass framework tensors to tilejit kernels without copies.
#pragma once

#include <dlpack/dlpack.h>
#include <tilejit/tensor.h>

namespace tilejit {

/// A view of `t`'s memory: byte_offset is folded into `data`, NULL strides become row-major.
/// Throws tilejit::Error naming the dtype or device when tilejit has no equivalent (complex,
/// vector lanes, ROCm, ...). Bool is read from the later DLPack code kDLBool (6), as newer
/// PyTorch writes it.
Tensor from_dlpack(const DLTensor& t);

/// A DLPack view of `t` that does not own the data: its deleter frees only the DLPack structs
/// (shape and strides included), so call it when the consumer is done, and keep the memory
/// alive until then. Throws tilejit::Error when shape and strides disagree in length.
DLManagedTensor* to_dlpack(const Tensor& t);

} // namespace tilejit
