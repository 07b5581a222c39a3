// A global tensor argument: pointer, sizes and strides (in elements). The host packs it with
// the same layout (runtime/kernel_args.cpp): 8-byte pointer, then R sizes, then R strides.
#pragma once

namespace tj {

template <class T, int R> struct Tensor {
  T* ptr;
  long long shape[R];
  long long stride[R];
};

} // namespace tj
