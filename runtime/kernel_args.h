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

/// The packed argument list of one launch. Fields live in one byte buffer (each at an 8-byte
/// aligned offset), so packing a launch allocates nothing once the buffer has grown: the
/// runtime keeps one per thread and clear()s it for every launch.
class KernelArgs {
public:
  /// `index32`: the kernel was compiled for 32-bit indices (sizes and strides must fit).
  void add_tensor(const Tensor& t, bool index32 = false);
  /// A tensor given by its parts (the runtime's scratch tensors, without building a Tensor).
  void add_tensor(const void* data, const int64_t* shape, const int64_t* strides, size_t rank,
                  bool index32);
  void add_scalar(DType dtype, const HostValue& v);
  /// A field copied as it is (a tensor map: 128 bytes; cuLaunchKernel copies it by value).
  void add_bytes(const void* data, size_t bytes);
  /// Forgets the fields, keeps the memory.
  void clear();
  /// The void* array cuLaunchKernel takes; valid until the next add or clear.
  void** pointers();

private:
  unsigned char* reserve(size_t bytes);
  std::vector<unsigned char> bytes_;
  std::vector<size_t> offsets_;
  std::vector<void*> pointers_;
};

/// Whether a view qualifies for 16-byte vector accesses along its rows: base 16-byte aligned,
/// unit last stride, every other stride and the row length multiples of 16 bytes.
bool vector_aligned(const Tensor& t);
/// Whether every size and every element offset of `t` fits in a 32-bit signed integer (the
/// compiler may then index it with 32-bit arithmetic).
bool offsets_fit_int32(const Tensor& t);

} // namespace tilejit
