// What the typed ops' C++ check tests share: an error's text, and host tensors (a good call
// then stops at the device check, so every other check is reached without a GPU).
#pragma once

#include <tilejit/tensor.h>

#include <functional>
#include <string>
#include <vector>

namespace tilejit::test {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

/// Host storage behind a tensor of `shape`.
struct HostTensor {
  std::vector<char> bytes;
  Tensor t;
  HostTensor(DType d, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    bytes.resize(static_cast<size_t>(n * dtype_size(d)) + 16);
    t = Tensor::contiguous(bytes.data(), d, shape, DeviceKind::CPU);
  }
};

} // namespace tilejit::test
