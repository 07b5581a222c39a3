#include "compiler/ref/value.h"

#include "compiler/ref/float_formats.h"
#include "support/error.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace tilejit::ref {

int64_t shape_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Value Value::zeros(DType dtype, std::vector<int64_t> shape) {
  Value v;
  v.dtype = dtype;
  v.shape = std::move(shape);
  int64_t n = shape_numel(v.shape);
  if (v.is_float())
    v.f.assign(n, 0.0);
  else
    v.i.assign(n, 0);
  return v;
}

Value Value::scalar_int(DType dtype, int64_t x) {
  Value v = zeros(dtype, {});
  if (v.is_float())
    v.f[0] = int_to_float(dtype, x);
  else
    v.i[0] = wrap_int(dtype, x);
  return v;
}

Value Value::scalar_float(DType dtype, double x) {
  Value v = zeros(dtype, {});
  if (v.is_float())
    v.f[0] = round_float(dtype, x);
  else
    v.i[0] = float_to_int(dtype, x);
  return v;
}

int64_t wrap_int(DType t, int64_t v) {
  switch (t) {
  case DType::Bool:
    return v != 0;
  case DType::I8:
    return static_cast<int8_t>(static_cast<uint8_t>(v));
  case DType::U8:
    return static_cast<uint8_t>(v);
  case DType::I16:
    return static_cast<int16_t>(static_cast<uint16_t>(v));
  case DType::I32:
    return static_cast<int32_t>(static_cast<uint32_t>(v));
  case DType::U32:
    return static_cast<uint32_t>(v);
  case DType::I64:
    return v;
  default:
    break;
  }
  TJ_ICHECK(false, "wrap_int on ", dtype_name(t));
  return v;
}

double round_float(DType t, double x) {
  switch (t) {
  case DType::F16:
    return round_to_f16(x);
  case DType::BF16:
    return round_to_bf16(x);
  case DType::F32:
    return static_cast<double>(static_cast<float>(x));
  case DType::F64:
    return x;
  default:
    break;
  }
  TJ_ICHECK(false, "round_float on ", dtype_name(t));
  return x;
}

namespace {

/// The range of integer dtype `t` as int64 bounds.
void int_range(DType t, int64_t& lo, int64_t& hi) {
  switch (t) {
  case DType::I8:
    lo = INT8_MIN, hi = INT8_MAX;
    return;
  case DType::U8:
    lo = 0, hi = UINT8_MAX;
    return;
  case DType::I16:
    lo = INT16_MIN, hi = INT16_MAX;
    return;
  case DType::I32:
    lo = INT32_MIN, hi = INT32_MAX;
    return;
  case DType::U32:
    lo = 0, hi = UINT32_MAX;
    return;
  case DType::I64:
    lo = INT64_MIN, hi = INT64_MAX;
    return;
  default:
    TJ_ICHECK(false, "int_range on ", dtype_name(t));
  }
}

} // namespace

int64_t float_to_int(DType t, double x) {
  if (t == DType::Bool) return x != 0;
  if (std::isnan(x)) return 0;
  int64_t lo, hi;
  int_range(t, lo, hi);
  double tr = std::trunc(x);
  // Compare in double: 2^63 is exact, INT64_MAX is not, so test against its successor.
  if (tr <= static_cast<double>(lo)) return lo;
  if (t == DType::I64 ? tr >= 9223372036854775808.0 : tr >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(tr);
}

double int_to_float(DType t, int64_t v) {
  switch (t) {
  case DType::F32:
    return static_cast<double>(static_cast<float>(v)); // one rounding
  case DType::F64:
    return static_cast<double>(v);
  default:
    return round_float(t, static_cast<double>(v)); // exact below 2^53; f16 max is 65504
  }
}

Value cast_value(const Value& v, DType t) {
  if (v.dtype == t) return v;
  Value out = Value::zeros(t, v.shape);
  int64_t n = v.numel();
  if (out.is_float()) {
    for (int64_t k = 0; k < n; ++k)
      out.f[k] = v.is_float() ? round_float(t, v.f[k]) : int_to_float(t, v.i[k]);
  } else {
    for (int64_t k = 0; k < n; ++k)
      out.i[k] = v.is_float() ? float_to_int(t, v.f[k]) : wrap_int(t, v.i[k]);
  }
  return out;
}

std::vector<int64_t> broadcast_map(const std::vector<int64_t>& from,
                                   const std::vector<int64_t>& to) {
  int64_t n = shape_numel(to);
  std::vector<int64_t> map(n, 0);
  if (from == to) {
    for (int64_t k = 0; k < n; ++k) map[k] = k;
    return map;
  }
  if (from.empty()) return map;
  size_t rank = to.size();
  TJ_ICHECK(from.size() <= rank, "cannot broadcast a rank-", from.size(), " value to rank ", rank);
  // Strides of `from` seen through `to`'s axes: 0 where `from` has no such axis or size 1.
  std::vector<int64_t> stride(rank, 0);
  int64_t s = 1;
  for (size_t j = 0; j < from.size(); ++j) {
    size_t ax = rank - 1 - j;
    int64_t d = from[from.size() - 1 - j];
    TJ_ICHECK(d == to[ax] || d == 1, "cannot broadcast dimension ", d, " to ", to[ax]);
    stride[ax] = d == 1 ? 0 : s;
    s *= d;
  }
  std::vector<int64_t> idx(rank, 0);
  int64_t src = 0;
  for (int64_t k = 0; k < n; ++k) {
    map[k] = src;
    for (size_t ax = rank; ax-- > 0;) { // odometer, last axis fastest
      src += stride[ax];
      if (++idx[ax] < to[ax]) break;
      src -= stride[ax] * to[ax];
      idx[ax] = 0;
    }
  }
  return map;
}

Value broadcast_to(const Value& v, const std::vector<int64_t>& shape) {
  if (v.shape == shape) return v;
  std::vector<int64_t> map = broadcast_map(v.shape, shape);
  Value out;
  out.dtype = v.dtype;
  out.shape = shape;
  if (v.is_float()) {
    out.f.resize(map.size());
    for (size_t k = 0; k < map.size(); ++k) out.f[k] = v.f[map[k]];
  } else {
    out.i.resize(map.size());
    for (size_t k = 0; k < map.size(); ++k) out.i[k] = v.i[map[k]];
  }
  return out;
}

namespace {
template <typename T> T read_as(const void* base, int64_t offset) {
  T x;
  std::memcpy(&x, static_cast<const char*>(base) + offset * static_cast<int64_t>(sizeof(T)),
              sizeof(T));
  return x;
}
template <typename T> void write_as(void* base, int64_t offset, T x) {
  std::memcpy(static_cast<char*>(base) + offset * static_cast<int64_t>(sizeof(T)), &x, sizeof(T));
}
} // namespace

void load_element(DType t, const void* base, int64_t offset, Value& out, int64_t k) {
  switch (t) {
  case DType::Bool:
    out.i[k] = read_as<uint8_t>(base, offset) != 0;
    return;
  case DType::I8:
    out.i[k] = read_as<int8_t>(base, offset);
    return;
  case DType::U8:
    out.i[k] = read_as<uint8_t>(base, offset);
    return;
  case DType::I16:
    out.i[k] = read_as<int16_t>(base, offset);
    return;
  case DType::I32:
    out.i[k] = read_as<int32_t>(base, offset);
    return;
  case DType::U32:
    out.i[k] = read_as<uint32_t>(base, offset);
    return;
  case DType::I64:
    out.i[k] = read_as<int64_t>(base, offset);
    return;
  case DType::F16:
    out.f[k] = f16_bits_to_f64(read_as<uint16_t>(base, offset));
    return;
  case DType::BF16:
    out.f[k] = bf16_bits_to_f64(read_as<uint16_t>(base, offset));
    return;
  case DType::F32:
    out.f[k] = read_as<float>(base, offset);
    return;
  case DType::F64:
    out.f[k] = read_as<double>(base, offset);
    return;
  }
}

void store_element(DType t, void* base, int64_t offset, const Value& v, int64_t k) {
  switch (t) {
  case DType::Bool:
    write_as<uint8_t>(base, offset, v.i[k] != 0);
    return;
  case DType::I8:
    write_as<int8_t>(base, offset, static_cast<int8_t>(v.i[k]));
    return;
  case DType::U8:
    write_as<uint8_t>(base, offset, static_cast<uint8_t>(v.i[k]));
    return;
  case DType::I16:
    write_as<int16_t>(base, offset, static_cast<int16_t>(v.i[k]));
    return;
  case DType::I32:
    write_as<int32_t>(base, offset, static_cast<int32_t>(v.i[k]));
    return;
  case DType::U32:
    write_as<uint32_t>(base, offset, static_cast<uint32_t>(v.i[k]));
    return;
  case DType::I64:
    write_as<int64_t>(base, offset, v.i[k]);
    return;
  case DType::F16:
    write_as<uint16_t>(base, offset, f64_to_f16_bits(v.f[k]));
    return;
  case DType::BF16:
    write_as<uint16_t>(base, offset, f64_to_bf16_bits(v.f[k]));
    return;
  case DType::F32:
    write_as<float>(base, offset, static_cast<float>(v.f[k]));
    return;
  case DType::F64:
    write_as<double>(base, offset, v.f[k]);
    return;
  }
}

} // namespace tilejit::ref
