#include "runtime/kernel_args.h"

#include "support/error.h"

#include <cstring>

namespace tilejit {

unsigned char* KernelArgs::reserve(size_t bytes) {
  size_t at = (bytes_.size() + 7) & ~size_t(7);
  offsets_.push_back(at);
  bytes_.resize(at + bytes);
  return bytes_.data() + at;
}

void KernelArgs::clear() {
  bytes_.clear();
  offsets_.clear();
}

void KernelArgs::add_tensor(const Tensor& t, bool index32) {
  add_tensor(t.data, t.shape.data(), t.strides.data(), t.shape.size(), index32);
}

void KernelArgs::add_tensor(const void* data, const int64_t* shape, const int64_t* strides,
                            size_t rank, bool index32) {
  const size_t field = index32 ? 4 : 8;
  unsigned char* bytes = reserve(8 + 2 * field * rank);
  uint64_t ptr = reinterpret_cast<uintptr_t>(data);
  std::memcpy(bytes, &ptr, 8);
  auto put = [&](size_t offset, int64_t v) {
    if (index32) {
      TJ_ICHECK(v >= INT32_MIN && v <= INT32_MAX,
                "a size or stride that does not fit 32 bits went to a 32-bit-index kernel");
      int32_t v32 = static_cast<int32_t>(v);
      std::memcpy(bytes + offset, &v32, 4);
    } else {
      std::memcpy(bytes + offset, &v, 8);
    }
  };
  for (size_t d = 0; d < rank; ++d) {
    put(8 + field * d, shape[d]);
    put(8 + field * (rank + d), strides[d]);
  }
}

void KernelArgs::add_bytes(const void* data, size_t bytes) {
  std::memcpy(reserve(bytes), data, bytes);
}

void KernelArgs::add_scalar(DType dtype, const HostValue& v) {
  unsigned char* bytes = reserve(dtype_size(dtype));
  auto put = [&](auto x) { std::memcpy(bytes, &x, sizeof x); };
  switch (dtype) {
  case DType::Bool:
    put(static_cast<uint8_t>(v.b));
    break;
  case DType::I8:
    put(static_cast<int8_t>(v.i));
    break;
  case DType::U8:
    put(static_cast<uint8_t>(v.i));
    break;
  case DType::I16:
    put(static_cast<int16_t>(v.i));
    break;
  case DType::I32:
    put(static_cast<int32_t>(v.i));
    break;
  case DType::U32:
    put(static_cast<uint32_t>(v.i));
    break;
  case DType::I64:
    put(static_cast<int64_t>(v.i));
    break;
  case DType::F32:
    put(static_cast<float>(v.as_double()));
    break;
  case DType::F64:
    put(v.as_double());
    break;
  case DType::F16:
  case DType::BF16:
    throw Error("16-bit float scalar parameters are not supported; declare them f32");
  }
}

void** KernelArgs::pointers() {
  pointers_.clear();
  for (size_t at : offsets_) pointers_.push_back(bytes_.data() + at);
  return pointers_.data();
}

bool offsets_fit_int32(const Tensor& t) {
  constexpr int64_t kMax = (int64_t(1) << 31) - 1;
  int64_t last = 0;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (t.shape[d] > kMax || t.strides[d] > kMax || t.strides[d] < -kMax) return false;
    if (t.shape[d] == 0) return true; // empty: nothing is ever addressed
    last += (t.shape[d] - 1) * (t.strides[d] < 0 ? -t.strides[d] : t.strides[d]);
    if (last > kMax) return false;
  }
  return true;
}

bool vector_aligned(const Tensor& t) {
  if (t.shape.empty()) return false;
  const int64_t elem = dtype_size(t.dtype);
  if (reinterpret_cast<uintptr_t>(t.data) % 16 != 0) return false;
  if (t.strides.back() != 1 && t.shape.back() != 1) return false;
  if ((t.shape.back() * elem) % 16 != 0) return false;
  for (size_t d = 0; d + 1 < t.shape.size(); ++d)
    if (t.shape[d] > 1 && (t.strides[d] * elem) % 16 != 0) return false;
  return true;
}

} // namespace tilejit
