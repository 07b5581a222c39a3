// Tensor view helpers (see include/tilejit/tensor.h).
#include <tilejit/tensor.h>

#include <fmt/format.h>

#include <iterator>

namespace tilejit {

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool Tensor::is_contiguous() const {
  if (strides.size() != shape.size()) return false;
  if (numel() == 0) return true;
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

Tensor Tensor::contiguous(void* data, DType dtype, std::vector<int64_t> shape, DeviceKind device) {
  Tensor t;
  t.data = data;
  t.dtype = dtype;
  t.device = device;
  t.strides.assign(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) t.strides[i - 1] = t.strides[i] * shape[i];
  t.shape = std::move(shape);
  return t;
}

std::string Tensor::describe() const {
  std::string out = fmt::format("{}[{}]", dtype_name(dtype), fmt::join(shape, ", "));
  if (!is_contiguous())
    fmt::format_to(std::back_inserter(out), " strides [{}]", fmt::join(strides, ", "));
  if (device == DeviceKind::CUDA)
    fmt::format_to(std::back_inserter(out), " cuda:{}", device_index);
  else
    out += " cpu";
  return out;
}

} // namespace tilejit
