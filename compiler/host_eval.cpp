#include "compiler/host_eval.h"

#include "dsl/ast_printer.h"
#include "dsl/builtins.h"
#include "dsl/diagnostics.h"

#include <cmath>
#include <limits>

namespace tilejit {

using dsl::BinaryOp;
using dsl::Expr;
using dsl::ExprKind;

namespace {

bool both_int(const HostValue& a, const HostValue& b) {
  return a.kind != HostValue::Kind::Float && b.kind != HostValue::Kind::Float;
}

// Host integers are 64-bit and wrap (two's complement), like the device's i64: signed overflow
// is undefined in C++, so the arithmetic goes through uint64_t.
int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrapping_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrapping_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

/// Truncating division; INT64_MIN / -1 wraps to INT64_MIN (it traps in C++).
int64_t checked_div(int64_t a, int64_t b, const Expr& e, const char* what) {
  if (b == 0) dsl::fail_at(e.loc, str(what, " by zero in '", dsl::expr_to_string(e), "'"));
  return b == -1 ? wrapping_sub(0, a) : a / b;
}

/// Truncating remainder; x % -1 is 0 (INT64_MIN % -1 traps in C++).
int64_t checked_mod(int64_t a, int64_t b, const Expr& e) {
  if (b == 0) dsl::fail_at(e.loc, str("modulo by zero in '", dsl::expr_to_string(e), "'"));
  return b == -1 ? 0 : a % b;
}

/// 64-bit shifts as PTX does them (and compiler/ref): amounts outside [0, 64) give 0, or -1
/// for an arithmetic right shift of a negative value.
int64_t shift(BinaryOp op, int64_t a, int64_t b) {
  bool out_of_range = b < 0 || b >= 64;
  if (op == BinaryOp::Shl)
    return out_of_range ? 0 : static_cast<int64_t>(static_cast<uint64_t>(a) << b);
  if (out_of_range) return a < 0 ? -1 : 0;
  return a >> b;
}

} // namespace

std::optional<HostValue> host_eval(const Expr& e, const HostEnv& env, std::string* missing) {
  switch (e.kind) {
  case ExprKind::IntLit:
    return HostValue::of_int(e.int_value);
  case ExprKind::FloatLit:
    return HostValue::of_float(e.float_value);
  case ExprKind::BoolLit:
    return HostValue::of_bool(e.bool_value);
  case ExprKind::Name: {
    auto it = env.find(e.name);
    if (it != env.end()) return it->second;
    if (e.name == "inf") return HostValue::of_float(std::numeric_limits<double>::infinity());
    if (missing) *missing = e.name;
    return std::nullopt;
  }
  case ExprKind::Unary: {
    auto a = host_eval(*e.lhs, env, missing);
    if (!a) return std::nullopt;
    switch (e.unary_op) {
    case dsl::UnaryOp::Neg:
      return a->kind == HostValue::Kind::Float ? HostValue::of_float(-a->f)
                                               : HostValue::of_int(wrapping_sub(0, a->i));
    case dsl::UnaryOp::Not:
      return HostValue::of_bool(!a->b);
    case dsl::UnaryOp::BitNot:
      return HostValue::of_int(~a->i);
    }
    return std::nullopt;
  }
  case ExprKind::Binary: {
    auto a = host_eval(*e.lhs, env, missing);
    if (!a) return std::nullopt;
    auto b = host_eval(*e.rhs, env, missing);
    if (!b) return std::nullopt;
    bool ints = both_int(*a, *b);
    double x = a->as_double(), y = b->as_double();
    switch (e.binary_op) {
    case BinaryOp::Add:
      return ints ? HostValue::of_int(wrapping_add(a->i, b->i)) : HostValue::of_float(x + y);
    case BinaryOp::Sub:
      return ints ? HostValue::of_int(wrapping_sub(a->i, b->i)) : HostValue::of_float(x - y);
    case BinaryOp::Mul:
      return ints ? HostValue::of_int(wrapping_mul(a->i, b->i)) : HostValue::of_float(x * y);
    case BinaryOp::Div:
      return ints ? HostValue::of_int(checked_div(a->i, b->i, e, "division"))
                  : HostValue::of_float(x / y);
    case BinaryOp::Mod:
      return ints ? HostValue::of_int(checked_mod(a->i, b->i, e))
                  : HostValue::of_float(std::fmod(x, y));
    case BinaryOp::Lt:
      return HostValue::of_bool(ints ? a->i < b->i : x < y);
    case BinaryOp::Le:
      return HostValue::of_bool(ints ? a->i <= b->i : x <= y);
    case BinaryOp::Gt:
      return HostValue::of_bool(ints ? a->i > b->i : x > y);
    case BinaryOp::Ge:
      return HostValue::of_bool(ints ? a->i >= b->i : x >= y);
    case BinaryOp::Eq:
      return HostValue::of_bool(ints ? a->i == b->i : x == y);
    case BinaryOp::Ne:
      return HostValue::of_bool(ints ? a->i != b->i : x != y);
    case BinaryOp::And:
      return HostValue::of_bool(a->b && b->b);
    case BinaryOp::Or:
      return HostValue::of_bool(a->b || b->b);
    case BinaryOp::BitAnd:
      return HostValue::of_int(a->i & b->i);
    case BinaryOp::BitOr:
      return HostValue::of_int(a->i | b->i);
    case BinaryOp::BitXor:
      return HostValue::of_int(a->i ^ b->i);
    case BinaryOp::Shl:
    case BinaryOp::Shr:
      return HostValue::of_int(shift(e.binary_op, a->i, b->i));
    }
    return std::nullopt;
  }
  case ExprKind::Call: {
    const dsl::BuiltinInfo* bi = dsl::find_builtin(e.name);
    std::vector<HostValue> args;
    for (const auto& a : e.args) {
      auto v = host_eval(*a, env, missing);
      if (!v) return std::nullopt;
      args.push_back(*v);
    }
    if (bi) {
      switch (bi->kind) {
      case dsl::BuiltinKind::Cdiv:
        return HostValue::of_int(
            checked_div(wrapping_sub(wrapping_add(args[0].i, args[1].i), 1), args[1].i, e, "cdiv"));
      case dsl::BuiltinKind::Min:
        if (both_int(args[0], args[1])) return HostValue::of_int(std::min(args[0].i, args[1].i));
        return HostValue::of_float(std::min(args[0].as_double(), args[1].as_double()));
      case dsl::BuiltinKind::Max:
        if (both_int(args[0], args[1])) return HostValue::of_int(std::max(args[0].i, args[1].i));
        return HostValue::of_float(std::max(args[0].as_double(), args[1].as_double()));
      case dsl::BuiltinKind::Abs:
        if (args[0].kind != HostValue::Kind::Float)
          return HostValue::of_int(args[0].i < 0 ? wrapping_sub(0, args[0].i) : args[0].i);
        return HostValue::of_float(std::fabs(args[0].f));
      case dsl::BuiltinKind::Sqrt:
        return HostValue::of_float(std::sqrt(args[0].as_double()));
      case dsl::BuiltinKind::Rsqrt:
        return HostValue::of_float(1.0 / std::sqrt(args[0].as_double()));
      case dsl::BuiltinKind::Log2:
        return HostValue::of_float(std::log2(args[0].as_double()));
      case dsl::BuiltinKind::Exp2:
        return HostValue::of_float(std::exp2(args[0].as_double()));
      default:
        break;
      }
    }
    dsl::fail_at(e.loc, str("'", e.name, "' cannot be evaluated on the host"));
  }
  case ExprKind::Index:
    dsl::fail_at(e.loc, "indexing cannot be evaluated on the host");
  }
  return std::nullopt;
}

int64_t host_eval_int(const Expr& e, const HostEnv& env, const std::string& what) {
  std::string missing;
  auto v = host_eval(e, env, &missing);
  if (!v) dsl::fail_at(e.loc, str(what, ": '", missing, "' has no value here"));
  if (v->kind == HostValue::Kind::Float)
    dsl::fail_at(e.loc, str(what, " must be an integer, got ", v->f));
  return v->i;
}

} // namespace tilejit
