#include "compiler/fold.h"

#include "dsl/diagnostics.h"

#include <cmath>
#include <cstdint>

namespace tilejit {

using ir::ExprKind;
using ir::ExprPtr;

namespace {

bool is_const(const ExprPtr& e) {
  return e && e->kind == ExprKind::Const;
}
bool is_float_const(const ir::Expr& e) {
  return dtype_is_float(e.type.dtype);
}

DType wider_int(DType a, DType b) {
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

/// The float dtype a folded constant keeps: the operands' common float dtype (so f16
/// arithmetic stays f16), f64 if either is f64, else f32.
DType float_result(DType a, DType b) {
  if (a == DType::F64 || b == DType::F64) return DType::F64;
  if (a == b && dtype_is_float(a)) return a;
  if (dtype_is_float(a) && !dtype_is_float(b)) return a;
  if (dtype_is_float(b) && !dtype_is_float(a)) return b;
  return DType::F32;
}

/// Rounds v to what dtype t can hold (f16/bf16 constants carry their rounded value).
double round_to_dtype(double v, DType t) {
  if (t == DType::F32) return static_cast<float>(v);
  if (t == DType::F16 || t == DType::BF16) {
    // Round through float, then to 11 (f16) or 8 (bf16) significant bits, ties to even.
    float f = static_cast<float>(v);
    if (!std::isfinite(f) || f == 0) return f;
    int bits = t == DType::F16 ? 11 : 8;
    int e;
    std::frexp(f, &e);
    if (t == DType::F16 && e < -13) bits = std::max(0, 11 - (-13 - e)); // subnormal f16
    double scale = std::ldexp(1.0, bits - e);
    double r = std::nearbyint(f * scale) / scale;
    if (t == DType::F16 && std::fabs(r) > 65504) return r > 0 ? INFINITY : -INFINITY;
    return r;
  }
  return v;
}

/// Float to integer like the reference interpreter and the GPU prelude: truncate, clamp to the
/// target's range, NaN to 0; then wrap to the target width.
int64_t float_to_int(double x, DType t) {
  if (x != x) return 0;
  double lo, hi;
  switch (t) {
  case DType::I8:
    lo = -128, hi = 127;
    break;
  case DType::U8:
    lo = 0, hi = 255;
    break;
  case DType::I16:
    lo = -32768, hi = 32767;
    break;
  case DType::I32:
    lo = -2147483648.0, hi = 2147483647.0;
    break;
  case DType::U32:
    lo = 0, hi = 4294967295.0;
    break;
  default:
    lo = -9223372036854775808.0, hi = 9223372036854775807.0;
    break;
  }
  if (x <= lo) return static_cast<int64_t>(lo);
  if (x >= hi) return t == DType::I64 ? INT64_MAX : static_cast<int64_t>(hi);
  return static_cast<int64_t>(x);
}

/// Wraps an integer to the width and signedness of t (two's complement).
int64_t wrap_int(int64_t v, DType t) {
  switch (t) {
  case DType::I8:
    return static_cast<int8_t>(v);
  case DType::U8:
    return static_cast<uint8_t>(v);
  case DType::I16:
    return static_cast<int16_t>(v);
  case DType::I32:
    return static_cast<int32_t>(v);
  case DType::U32:
    return static_cast<uint32_t>(v);
  default:
    return v;
  }
}

/// Two's complement arithmetic in 64 bits (wrap_int then narrows to the dtype): signed overflow
/// is undefined in C++, wrapping is what the language defines.
int64_t wrapping_add(int64_t x, int64_t y) {
  return static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
}
int64_t wrapping_sub(int64_t x, int64_t y) {
  return static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y));
}
int64_t wrapping_mul(int64_t x, int64_t y) {
  return static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
}

/// Truncating division and remainder (y != 0). INT64_MIN / -1 traps in C++; in the language it
/// wraps like every other overflow (quotient -x, remainder 0), as the reference interpreter does.
int64_t int_div(int64_t x, int64_t y) {
  return y == -1 ? wrapping_sub(0, x) : x / y;
}
int64_t int_mod(int64_t x, int64_t y) {
  return y == -1 ? 0 : x % y;
}

/// Shifts as PTX and the reference interpreter do them, in 32 bits (64 for 64-bit dtypes):
/// amounts outside [0, width) shift everything out, giving 0, or -1 for an arithmetic right
/// shift of a negative value.
int64_t int_shift(dsl::BinaryOp op, int64_t x, int64_t y, DType t) {
  x = wrap_int(x, t);
  int width = dtype_size(t) <= 4 ? 32 : 64;
  bool out_of_range = y < 0 || y >= width;
  if (op == dsl::BinaryOp::Shl)
    return out_of_range ? 0 : static_cast<int64_t>(static_cast<uint64_t>(x) << y);
  if (out_of_range) return dtype_is_signed(t) && x < 0 ? -1 : 0;
  return x >> y; // x is sign-extended for signed dtypes, zero-extended otherwise
}

ExprPtr with_loc(ExprPtr e, const dsl::SourceLoc& loc, bool literal) {
  e->loc = loc;
  e->literal = literal;
  return e;
}

} // namespace

ExprPtr fold(ExprPtr e) {
  using dsl::BinaryOp;
  switch (e->kind) {
  case ExprKind::Unary: {
    if (!is_const(e->a)) return e;
    const ir::Expr& a = *e->a;
    switch (e->unary_op) {
    case dsl::UnaryOp::Neg:
      if (is_float_const(a))
        return with_loc(ir::make_float(-a.float_value, a.type.dtype), e->loc, a.literal);
      if (a.type.dtype == DType::Bool) return e;
      return with_loc(
          ir::make_int(wrap_int(wrapping_sub(0, a.int_value), a.type.dtype), a.type.dtype), e->loc,
          a.literal);
    case dsl::UnaryOp::Not:
      if (a.type.dtype != DType::Bool) return e;
      return with_loc(ir::make_bool(!a.int_value), e->loc, false);
    case dsl::UnaryOp::BitNot:
      if (!dtype_is_int(a.type.dtype)) return e;
      return with_loc(ir::make_int(~a.int_value, a.type.dtype), e->loc, a.literal);
    }
    return e;
  }
  case ExprKind::Binary: {
    if (!is_const(e->a) || !is_const(e->b)) return e;
    const ir::Expr& a = *e->a;
    const ir::Expr& b = *e->b;
    bool literal = a.literal && b.literal;
    bool bools = a.type.dtype == DType::Bool && b.type.dtype == DType::Bool;
    bool floats = is_float_const(a) || is_float_const(b);
    double x = is_float_const(a) ? a.float_value : static_cast<double>(a.int_value);
    double y = is_float_const(b) ? b.float_value : static_cast<double>(b.int_value);
    int64_t i = a.int_value, j = b.int_value;
    DType it = wider_int(a.type.dtype, b.type.dtype);
    DType ft = float_result(a.type.dtype, b.type.dtype);
    auto num = [&](double fv, int64_t iv) {
      return floats ? with_loc(ir::make_float(round_to_dtype(fv, ft), ft), e->loc, literal)
                    : with_loc(ir::make_int(wrap_int(iv, it), it), e->loc, literal);
    };
    auto boolean = [&](bool v) { return with_loc(ir::make_bool(v), e->loc, false); };
    bool arith = e->binary_op == BinaryOp::Add || e->binary_op == BinaryOp::Sub ||
                 e->binary_op == BinaryOp::Mul || e->binary_op == BinaryOp::Div ||
                 e->binary_op == BinaryOp::Mod;
    bool logic = e->binary_op == BinaryOp::And || e->binary_op == BinaryOp::Or;
    bool bitwise = !arith && !logic && e->binary_op != BinaryOp::Lt &&
                   e->binary_op != BinaryOp::Le && e->binary_op != BinaryOp::Gt &&
                   e->binary_op != BinaryOp::Ge && e->binary_op != BinaryOp::Eq &&
                   e->binary_op != BinaryOp::Ne;
    bool shift = e->binary_op == BinaryOp::Shl || e->binary_op == BinaryOp::Shr;
    bool any_bool = a.type.dtype == DType::Bool || b.type.dtype == DType::Bool;
    // Arithmetic and shifts on a bool are type errors: leave them for infer_types to report
    // (folding `1 + true` to 2 would hide the error that `n + true` gets).
    if (((arith || shift) && any_bool) || (logic && !bools) || (bitwise && floats)) return e;
    switch (e->binary_op) {
    case BinaryOp::Add:
      return num(x + y, wrapping_add(i, j));
    case BinaryOp::Sub:
      return num(x - y, wrapping_sub(i, j));
    case BinaryOp::Mul:
      return num(x * y, wrapping_mul(i, j));
    case BinaryOp::Div:
      if (!floats && j == 0) dsl::fail_at(e->loc, "division by zero");
      return num(x / y, floats ? 0 : int_div(i, j));
    case BinaryOp::Mod:
      if (!floats && j == 0) dsl::fail_at(e->loc, "modulo by zero");
      return num(std::fmod(x, y), floats ? 0 : int_mod(i, j));
    case BinaryOp::Lt:
      return boolean(floats ? x < y : i < j);
    case BinaryOp::Le:
      return boolean(floats ? x <= y : i <= j);
    case BinaryOp::Gt:
      return boolean(floats ? x > y : i > j);
    case BinaryOp::Ge:
      return boolean(floats ? x >= y : i >= j);
    case BinaryOp::Eq:
      return boolean(floats ? x == y : i == j);
    case BinaryOp::Ne:
      return boolean(floats ? x != y : i != j);
    case BinaryOp::And:
      return boolean(i && j);
    case BinaryOp::Or:
      return boolean(i || j);
    case BinaryOp::BitAnd:
      return num(0, i & j);
    case BinaryOp::BitOr:
      return num(0, i | j);
    case BinaryOp::BitXor:
      return num(0, i ^ j);
    case BinaryOp::Shl:
    case BinaryOp::Shr:
      return num(0, int_shift(e->binary_op, i, j, it));
    }
    return e;
  }
  case ExprKind::Select: {
    // A constant condition picks a branch only where that branch has the where's own type:
    // where(true, 1.0, x) is x's shape of ones, not the scalar 1.0 (a tile declared from it
    // was refused as a scalar). Before infer_types nothing is typed, so nothing folds there.
    if (!is_const(e->a) || e->a->type.dtype != DType::Bool) return e;
    ExprPtr& keep = e->a->int_value ? e->b : e->c;
    if (!(keep->type == e->type)) return e;
    return std::move(keep);
  }
  case ExprKind::Math: {
    if (!is_const(e->a) || (e->b && !is_const(e->b))) return e;
    const ir::Expr& a = *e->a;
    bool floats = is_float_const(a) || (e->b && is_float_const(*e->b));
    double x = is_float_const(a) ? a.float_value : static_cast<double>(a.int_value);
    bool literal = a.literal && (!e->b || e->b->literal);
    if (e->math == ir::MathFn::Min || e->math == ir::MathFn::Max) {
      const ir::Expr& b = *e->b;
      if (!floats) {
        int64_t v = e->math == ir::MathFn::Min ? std::min(a.int_value, b.int_value)
                                               : std::max(a.int_value, b.int_value);
        return with_loc(ir::make_int(v, wider_int(a.type.dtype, b.type.dtype)), e->loc, literal);
      }
      double y = is_float_const(b) ? b.float_value : static_cast<double>(b.int_value);
      DType ft = float_result(a.type.dtype, b.type.dtype);
      return with_loc(
          ir::make_float(e->math == ir::MathFn::Min ? std::fmin(x, y) : std::fmax(x, y), ft),
          e->loc, literal);
    }
    if (e->math == ir::MathFn::Abs && !floats)
      return with_loc(
          ir::make_int(
              wrap_int(a.int_value < 0 ? wrapping_sub(0, a.int_value) : a.int_value, a.type.dtype),
              a.type.dtype),
          e->loc, literal);
    double r;
    switch (e->math) {
    case ir::MathFn::Exp:
      r = std::exp(x);
      break;
    case ir::MathFn::Exp2:
      r = std::exp2(x);
      break;
    case ir::MathFn::Log:
      r = std::log(x);
      break;
    case ir::MathFn::Log2:
      r = std::log2(x);
      break;
    case ir::MathFn::Sqrt:
      r = std::sqrt(x);
      break;
    case ir::MathFn::Rsqrt:
      r = 1.0 / std::sqrt(x);
      break;
    case ir::MathFn::Abs:
      r = std::fabs(x);
      break;
    case ir::MathFn::Floor:
      r = std::floor(x);
      break;
    case ir::MathFn::Ceil:
      r = std::ceil(x);
      break;
    case ir::MathFn::Tanh:
      r = std::tanh(x);
      break;
    case ir::MathFn::Sigmoid:
      r = 1.0 / (1.0 + std::exp(-x));
      break;
    case ir::MathFn::Pow: {
      const ir::Expr& b = *e->b;
      r = std::pow(x, is_float_const(b) ? b.float_value : static_cast<double>(b.int_value));
      break;
    }
    default:
      return e;
    }
    DType ft = float_result(a.type.dtype, e->b ? e->b->type.dtype : a.type.dtype);
    return with_loc(ir::make_float(round_to_dtype(r, ft), ft), e->loc, literal);
  }
  case ExprKind::Cast: {
    if (!is_const(e->a)) return e;
    const ir::Expr& a = *e->a;
    DType t = e->type.dtype;
    double x = is_float_const(a) ? a.float_value : static_cast<double>(a.int_value);
    if (dtype_is_float(t)) return with_loc(ir::make_float(round_to_dtype(x, t), t), e->loc, false);
    if (t == DType::Bool)
      return with_loc(ir::make_bool(is_float_const(a) ? (x != 0) : a.int_value != 0), e->loc,
                      false);
    return with_loc(
        ir::make_int(is_float_const(a) ? float_to_int(x, t) : wrap_int(a.int_value, t), t), e->loc,
        false);
  }
  default:
    return e;
  }
}

} // namespace tilejit
