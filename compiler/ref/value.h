// Runtime values of the reference interpreter: scalars and dense row-major tiles, with the
// DSL's element conversions (integer wrap-around, float rounding, saturating float->int casts).
#pragma once

#include <tilejit/dtype.h>

#include <cstdint>
#include <vector>

namespace tilejit::ref {

/// A scalar (empty shape) or a dense row-major tile. Float dtypes keep their elements in `f`,
/// each exactly representable in the dtype (f16/bf16/f32 values are stored rounded); integer
/// and bool dtypes keep theirs in `i`, each within the dtype's range (bool: 0 or 1).
struct Value {
  DType dtype = DType::I32;
  std::vector<int64_t> shape;
  std::vector<double> f;
  std::vector<int64_t> i;

  bool is_float() const { return dtype_is_float(dtype); }
  int64_t numel() const { return static_cast<int64_t>(is_float() ? f.size() : i.size()); }
  /// A value of `dtype` and `shape` with every element 0.
  static Value zeros(DType dtype, std::vector<int64_t> shape);
  static Value scalar_int(DType dtype, int64_t v);  ///< wraps `v` into `dtype`
  static Value scalar_float(DType dtype, double v); ///< rounds `v` to `dtype`
  /// Element `k` as a double (integers converted exactly up to 2^53).
  double as_double(int64_t k) const { return is_float() ? f[k] : static_cast<double>(i[k]); }
};

/// Number of elements of a shape (1 for a scalar).
int64_t shape_numel(const std::vector<int64_t>& shape);

/// `v` wrapped into the range of integer dtype `t` (two's complement); bool: v != 0.
int64_t wrap_int(DType t, int64_t v);
/// `x` rounded to float dtype `t` (nearest even): f16, bf16, f32, or unchanged for f64.
double round_float(DType t, double x);
/// Float -> integer dtype: truncates toward zero, saturates out-of-range values, NaN gives 0.
/// Bool: x != 0 (as in C, NaN is true).
int64_t float_to_int(DType t, double x);
/// Integer (or bool) -> float dtype, rounded once.
double int_to_float(DType t, int64_t v);

/// `v` converted element-wise to `t` (the DSL's cast<t>).
Value cast_value(const Value& v, DType t);

/// For every element of a tile of shape `to` (row-major), the index of the element of a value of
/// shape `from` that broadcasting (NumPy rules, aligned at the last axis) makes it read.
std::vector<int64_t> broadcast_map(const std::vector<int64_t>& from,
                                   const std::vector<int64_t>& to);
/// `v` broadcast to `shape` (a copy; `v`'s shape must broadcast to it).
Value broadcast_to(const Value& v, const std::vector<int64_t>& shape);

/// Reads element `offset` (in elements) of host memory holding `t` values.
void load_element(DType t, const void* base, int64_t offset, Value& out, int64_t k);
/// Writes element `k` of `v` (whose dtype is `t`) to element `offset` of host memory.
void store_element(DType t, void* base, int64_t offset, const Value& v, int64_t k);

} // namespace tilejit::ref
