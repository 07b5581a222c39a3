// Packs launch arguments the way generated kernels declare them: a tensor is tj::Tensor<T, R>
// (an 8-byte pointer, R 8-byte sizes, R 8-byte strides, in elements), or tj::Tensor32<T, R>
// (4-byte sizes and strides) in kernels compiled for 32-bit indices; a scalar is passed by
// value in its dtype.
#pragma once

#include "compiler/host_eval.h"

#include <tilejit/tensor.h>

#include <cstdint>
#include <vector>

namespace tilejit {

class KernelArgs {
public:
  /// `index32`: the kernel was compiled for 32-bit indices (sizes and strides must fit).
  void add_tensor(const Tensor& t, bool index32 = false);
  void add_scalar(DType dtype, const HostValue& v);
  /// The void* array cuLaunchKernel takes; valid while this object lives.
  void** pointers();

private:
  std::vector<std::vector<unsigned char>> storage_;
  std::vector<void*> pointers_;
};

/// Whether a view qualifies for 16-byte vector accesses along its rows: base 16-byte aligned,
/// unit last stride, every other stride and the row length multiples of 16 bytes.
bool vector_aligned(const Tensor& t);
/// Whether every size and every element offset of `t` fits in a 32-bit signed integer (the
/// compiler may then index it with 32-bit arithmetic).
bool offsets_fit_int32(const Tensor& t);

} // namespace tilejit
