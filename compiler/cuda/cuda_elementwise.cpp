// Elementwise expressions: one C++ expression per element, fused into a single loop over a
// tile's layout; everything else (loads, dots, reductions...) is materialised first.
#include "compiler/assign_layouts.h"
#include "compiler/cuda/cuda_emitter.h"

#include "compiler/ir_printer.h"
#include "support/text.h"

#include <cmath>

namespace tilejit::cuda {

using ir::ExprKind;
using ir::LayoutKind;
using ir::Space;

std::string Emitter::literal(const ir::Expr& e) {
  DType t = e.type.dtype;
  if (t == DType::Bool) return e.int_value ? "true" : "false";
  if (dtype_is_float(t)) {
    double v = e.float_value;
    bool dbl = t == DType::F64;
    if (std::isinf(v))
      return v > 0 ? (dbl ? "__longlong_as_double(0x7ff0000000000000ll)"
                          : "__int_as_float(0x7f800000)")
                   : (dbl ? "(-__longlong_as_double(0x7ff0000000000000ll))"
                          : "(-__int_as_float(0x7f800000))");
    if (std::isnan(v))
      return dbl ? "__longlong_as_double(0x7ff8000000000000ll)" : "__int_as_float(0x7fc00000)";
    std::string s = format_double(v);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return dbl ? s : s + "f";
  }
  switch (t) {
  case DType::I64:
    return str(e.int_value, "ll");
  case DType::U32:
    return str(static_cast<uint32_t>(e.int_value), "u");
  case DType::I32:
    if (e.int_value == INT32_MIN) return "(-2147483647 - 1)";
    return std::to_string(e.int_value);
  default:
    return str("(", storage_type(t), ")", e.int_value);
  }
}

std::string Emitter::coord(const ir::Expr& node, const ir::Layout* loop, const std::string& idx,
                           int axis) {
  // A unit axis broadcast against a longer one always reads coordinate 0.
  if (axis < node.type.rank() && node.type.shape[axis] == 1 &&
      loop->shape.size() > static_cast<size_t>(axis) && loop->shape[axis] != 1)
    return "0";
  std::string L = layout_name(loop);
  if (loop->rank() == 1) return str(L, "::c(", idx, ")");
  return str(L, axis == 0 ? "::r(" : "::c(", idx, ")");
}

namespace {

std::string read_as_compute(const std::string& access, DType t) {
  if (t == DType::F16 || t == DType::BF16) return str("tj::to_f32(", access, ")");
  return access;
}

const char* float_fn(ir::MathFn f) {
  switch (f) {
  case ir::MathFn::Exp:
    return "expf";
  case ir::MathFn::Exp2:
    return "tj::exp2_approx";
  case ir::MathFn::Log:
    return "logf";
  case ir::MathFn::Log2:
    return "log2f";
  case ir::MathFn::Sqrt:
    return "sqrtf";
  case ir::MathFn::Rsqrt:
    return "rsqrtf";
  case ir::MathFn::Abs:
    return "fabsf";
  case ir::MathFn::Floor:
    return "floorf";
  case ir::MathFn::Ceil:
    return "ceilf";
  case ir::MathFn::Tanh:
    return "tanhf";
  case ir::MathFn::Sigmoid:
    return "tj::sigmoidf";
  case ir::MathFn::Pow:
    return "powf";
  case ir::MathFn::Min:
    return "fminf";
  case ir::MathFn::Max:
    return "fmaxf";
  }
  return "?";
}

const char* double_fn(ir::MathFn f) {
  switch (f) {
  case ir::MathFn::Exp:
    return "exp";
  case ir::MathFn::Exp2:
    return "exp2";
  case ir::MathFn::Log:
    return "log";
  case ir::MathFn::Log2:
    return "log2";
  case ir::MathFn::Sqrt:
    return "sqrt";
  case ir::MathFn::Rsqrt:
    return "rsqrt";
  case ir::MathFn::Abs:
    return "fabs";
  case ir::MathFn::Floor:
    return "floor";
  case ir::MathFn::Ceil:
    return "ceil";
  case ir::MathFn::Tanh:
    return "tanh";
  case ir::MathFn::Sigmoid:
    return "tj::sigmoid_d";
  case ir::MathFn::Pow:
    return "pow";
  case ir::MathFn::Min:
    return "fmin";
  case ir::MathFn::Max:
    return "fmax";
  }
  return "?";
}

/// Rounds a float expression to a 16-bit float's precision (the DSL rounds after every
/// operation on f16/bf16 values, like the reference interpreter).
std::string round_to(DType t, const std::string& x) {
  if (t == DType::F16) return str("tj::round_f16(", x, ")");
  if (t == DType::BF16) return str("tj::round_bf16(", x, ")");
  return x;
}

} // namespace

std::string Emitter::scalar(const ir::Expr& e) {
  return elem(e, nullptr, "0");
}

std::string Emitter::elem(const ir::Expr& e, const ir::Layout* loop, const std::string& idx) {
  auto mat = materialized_.find(&e);
  if (mat != materialized_.end()) {
    const Value& v = mat->second;
    if (v.kind == Value::Kind::Array) {
      if (!loop || ir::equivalent(v.layout, loop))
        return read_as_compute(str(v.name, "[", idx, "]"), v.dtype);
      if (loop->rank() == 2 && v.layout->kind == LayoutKind::Slice &&
          ir::equivalent(v.layout, k_.layouts.slice(loop, v.layout->slice_axis)))
        return read_as_compute(str(v.name, "[", layout_name(loop), "::slice_index<",
                                   v.layout->slice_axis, ">(", idx, ")]"),
                               v.dtype);
      TJ_ICHECK(false, "value in layout ", v.layout->str(), " read in loop ", loop->str());
    }
    if (v.kind == Value::Kind::Shared && loop) {
      // A staged tile broadcast into the loop (assign_layouts): read at the loop's
      // coordinates, 0 along its unit axes.
      if (v.rank == 1) // aligned with the loop's last axis
        return read_as_compute(
            str(v.name, "[", e.type.shape[0] == 1 ? "0" : coord(e, loop, idx, loop->rank() - 1),
                "]"),
            v.dtype);
      return read_as_compute(str(v.name, "[", coord(e, loop, idx, 0), " * ", v.row_stride, " + ",
                                 coord(e, loop, idx, 1), "]"),
                             v.dtype);
    }
  }
  auto st = scalar_temps_.find(&e);
  if (st != scalar_temps_.end()) return st->second;
  const DType t = e.type.dtype;
  switch (e.kind) {
  case ExprKind::Const:
    return literal(e);
  case ExprKind::VarRef: {
    const ir::Var* v = e.var;
    if (v->type.space == Space::Scalar) return var_name(v);
    if (v->type.space == Space::Frag) {
      if (!loop) TJ_ICHECK(false, "tile '", v->name, "' used as a scalar");
      if (ir::equivalent(v->layout, loop))
        return read_as_compute(str(var_name(v), "[", idx, "]"), t);
      if (loop->rank() == 2 && v->layout->kind == LayoutKind::Slice &&
          ir::equivalent(v->layout, k_.layouts.slice(loop, v->layout->slice_axis)))
        return read_as_compute(str(var_name(v), "[", layout_name(loop), "::slice_index<",
                                   v->layout->slice_axis, ">(", idx, ")]"),
                               t);
      TJ_ICHECK(false, "tile '", v->name, "' in layout ", v->layout->str(), " read in loop ",
                loop->str());
    }
    // A shared tile read in place at the loop's coordinates. An element of the loop's padding
    // (a 96-row accumulator over 4 warps covers 128) reads the tile's first element instead of
    // past its end: valid() is a constant true where the layout has no padding.
    TJ_ICHECK(loop, "shared tile '", v->name, "' used as a scalar");
    TJ_ICHECK(!v->smem_swizzle, "swizzled tile '", v->name, "' read element by element");
    std::string ptr = shared_ptr(v);
    const std::string pad = loop->padded() ? str(layout_name(loop), "::valid(", idx, ") ? ") : "";
    const std::string end = loop->padded() ? " : 0" : "";
    if (v->type.rank() == 1)
      return read_as_compute(str(ptr, "[", pad, coord(e, loop, idx, 0), end, "]"), t);
    return read_as_compute(str(ptr, "[", pad, coord(e, loop, idx, 0), " * ", v->smem_row_stride,
                               " + ", coord(e, loop, idx, 1), end, "]"),
                           t);
  }
  case ExprKind::SharedSlice: {
    const ir::Var* v = e.a->var;
    TJ_ICHECK(loop && e.a->kind == ExprKind::VarRef, "shared slice outside a tile loop");
    std::string start = scalar(*e.b);
    std::string ptr = shared_ptr(v);
    if (!e.axes.empty()) // one row, s[start, :]
      return read_as_compute(
          str(ptr, "[(", start, ") * ", v->smem_row_stride, " + ", coord(e, loop, idx, 0), "]"), t);
    if (v->type.rank() == 1)
      return read_as_compute(str(ptr, "[", start, " + ", coord(e, loop, idx, 0), "]"), t);
    return read_as_compute(str(ptr, "[(", start, " + ", coord(e, loop, idx, 0), ") * ",
                               v->smem_row_stride, " + ", coord(e, loop, idx, 1), "]"),
                           t);
  }
  case ExprKind::ParamRef:
    return read_as_compute(param_name(e.param), t);
  case ExprKind::DimRef:
    return str("static_cast<int>(", param_name(e.param), ".shape[", e.axis, "])");
  case ExprKind::ProgramId:
    return str("static_cast<int>(blockIdx.", "xyz"[e.axis], ")");
  case ExprKind::NumPrograms:
    return str("static_cast<int>(gridDim.", "xyz"[e.axis], ")");
  case ExprKind::Iota:
    return coord(e, loop, idx, 0);
  case ExprKind::Expand: {
    if (!loop) return elem(*e.a, nullptr, idx);
    if (loop->rank() == 2 && e.a->type.rank() == 1) {
      int axis = e.axes.size() == 1 ? e.axes[0] : 0;
      const ir::Layout* slice = k_.layouts.slice(loop, axis);
      return elem(*e.a, slice, str(layout_name(loop), "::slice_index<", axis, ">(", idx, ")"));
    }
    return elem(*e.a, loop, idx);
  }
  case ExprKind::Unary: {
    std::string a = elem(*e.a, loop, idx);
    switch (e.unary_op) {
    case dsl::UnaryOp::Neg:
      return round_to(t, str("(-", a, ")"));
    case dsl::UnaryOp::Not:
      return str("(!", a, ")");
    case dsl::UnaryOp::BitNot:
      return str("(~", a, ")");
    }
    return a;
  }
  case ExprKind::Binary: {
    std::string a = elem(*e.a, loop, idx), b = elem(*e.b, loop, idx);
    DType ot = e.a->type.dtype;
    if (e.binary_op == dsl::BinaryOp::Mod && dtype_is_float(ot))
      return round_to(t, str(ot == DType::F64 ? "fmod(" : "fmodf(", a, ", ", b, ")"));
    std::string s = str("(", a, " ", dsl::binary_op_spelling(e.binary_op), " ", b, ")");
    bool arith = e.binary_op == dsl::BinaryOp::Add || e.binary_op == dsl::BinaryOp::Sub ||
                 e.binary_op == dsl::BinaryOp::Mul || e.binary_op == dsl::BinaryOp::Div;
    return arith ? round_to(t, s) : s;
  }
  case ExprKind::Select:
    return str("(", elem(*e.a, loop, idx), " ? ", elem(*e.b, loop, idx), " : ",
               elem(*e.c, loop, idx), ")");
  case ExprKind::Math: {
    std::string a = elem(*e.a, loop, idx);
    std::string b = e.b ? elem(*e.b, loop, idx) : "";
    if (!dtype_is_float(t)) {
      switch (e.math) {
      case ir::MathFn::Min:
        return str("min(", a, ", ", b, ")");
      case ir::MathFn::Max:
        return str("max(", a, ", ", b, ")");
      case ir::MathFn::Abs:
        return t == DType::I64 ? str("llabs(", a, ")") : str("abs(", a, ")");
      default:
        TJ_ICHECK(false, "integer ", ir::math_fn_name(e.math));
      }
    }
    const char* fn = t == DType::F64 ? double_fn(e.math) : float_fn(e.math);
    return round_to(t, e.b ? str(fn, "(", a, ", ", b, ")") : str(fn, "(", a, ")"));
  }
  case ExprKind::Cast: {
    std::string a = elem(*e.a, loop, idx);
    DType from = e.a->type.dtype;
    if (t == DType::F16 || t == DType::BF16) return round_to(t, str("static_cast<float>(", a, ")"));
    if (dtype_is_float(from) && dtype_is_int(t))
      return str("tj::float_to_int<", storage_type(t), ">(", a, ")");
    return str("static_cast<", compute_type(t), ">(", a, ")");
  }
  default:
    break;
  }
  TJ_ICHECK(false, "expression kind ", static_cast<int>(e.kind),
            " was not materialised: ", ir::print_expr(e));
  return "";
}

void Emitter::prepare_dot_operands(const ir::Expr& dot) {
  if (is_q4_dot(dot)) {
    // dot_q4 reads the words from shared memory itself; only the zero point and the scale
    // are values.
    const Q4Operand q4 = q4_operand(*dot.a);
    if (q4.unpack->b) prepare(*q4.unpack->b);
    if (q4.scale) prepare(*q4.scale);
  } else {
    prepare(*dot.a);
  }
  prepare(*dot.b);
}

void Emitter::prepare(const ir::Expr& e) {
  if (materialized_.count(&e) || scalar_temps_.count(&e)) return;
  switch (e.kind) {
  case ExprKind::Load:
    if (e.b) prepare(*e.b);
    if (e.c) prepare(*e.c);
    for (const auto& ix : e.access->indices) prepare(*ix.index);
    if (e.type.is_scalar()) {
      std::string name = fresh("t");
      emit_load(e, name);
      scalar_temps_[&e] = read_as_compute(name, e.type.dtype);
    } else {
      std::string name = fresh("t");
      line(str(storage_type(e.type.dtype), " ", name, "[", layout_name(e.layout), "::N];"));
      emit_load(e, name);
      materialized_[&e] = Value{Value::Kind::Array, name, e.layout, e.type.dtype};
    }
    return;
  case ExprKind::Copy:
    TJ_ICHECK(false, "copy outside a shared declaration");
  case ExprKind::Dot: {
    prepare_dot_operands(e);
    if (e.c) prepare(*e.c);
    std::string name = fresh("t");
    line(str("float ", name, "[", layout_name(e.layout), "::N];"));
    emit_dot(e, name, false);
    materialized_[&e] = Value{Value::Kind::Array, name, e.layout, DType::F32};
    return;
  }
  case ExprKind::Reduce: {
    prepare(*e.a);
    if (e.axis < 0) {
      scalar_temps_[&e] = emit_full_reduce(e);
      return;
    }
    std::string name = fresh("t");
    emit_reduce(e, name);
    const ir::Layout* slice = k_.layouts.slice(e.a->layout, e.axis);
    materialized_[&e] = Value{Value::Kind::Array, name, slice, e.type.dtype};
    return;
  }
  case ExprKind::Scan: {
    prepare(*e.a);
    std::string name = fresh("t");
    emit_scan(e, name);
    materialized_[&e] = Value{Value::Kind::Array, name, e.a->layout, e.type.dtype};
    return;
  }
  case ExprKind::SolveTril: {
    prepare(*e.a);
    std::string name = fresh("t");
    emit_solve_tril(e, name);
    materialized_[&e] = Value{Value::Kind::Array, name, e.a->layout, DType::F32};
    return;
  }
  case ExprKind::ClusterSum: {
    prepare(*e.a);
    std::string name = fresh("t");
    emit_cluster_sum(e, name);
    if (e.type.is_scalar())
      scalar_temps_[&e] = name;
    else
      materialized_[&e] = Value{Value::Kind::Array, name, e.a->layout, e.type.dtype};
    return;
  }
  case ExprKind::Convert: {
    prepare(*e.a);
    if (e.type.space == Space::Shared) {
      emit_stage(e);
      return;
    }
    std::string name = fresh("t");
    emit_convert(e, name);
    materialized_[&e] = Value{Value::Kind::Array, name, e.layout, e.type.dtype};
    return;
  }
  case ExprKind::Unpack: {
    // Each thread unpacks the words it holds into the values it holds (assign_layouts gives
    // the values the words' threads, 8 consecutive values per word): no data moves.
    const ir::Layout* wl = e.a->layout;
    TJ_ICHECK(wl && e.layout && e.layout->vec == wl->vec * 8 && e.layout->tc == wl->tc,
              "unpack4 layouts ", wl ? wl->str() : "none", " -> ",
              e.layout ? e.layout->str() : "none");
    std::string words = materialize(*e.a, wl);
    if (e.b) prepare(*e.b);
    std::string zero = !e.b                    ? std::string()
                       : e.b->type.is_scalar() ? str(", ", scalar(*e.b))
                                               : str(", ", elem(*e.b, wl, "tj_e"));
    std::string name = fresh("t");
    line(str(storage_type(e.type.dtype), " ", name, "[", layout_name(e.layout), "::N];"));
    line(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", layout_name(wl), "::N; ++tj_e) tj::unpack4",
             e.int_value ? "<true>" : "", "(", words, "[tj_e]", zero, ", &", name, "[8 * tj_e]);"));
    materialized_[&e] = Value{Value::Kind::Array, name, e.layout, e.type.dtype};
    return;
  }
  case ExprKind::AtomicAdd:
    prepare(*e.a);
    if (e.b) prepare(*e.b);
    for (const auto& ix : e.access->indices) prepare(*ix.index);
    scalar_temps_[&e] = emit_scalar_atomic(e);
    return;
  case ExprKind::Fence:
    if (bulk_atomics_) line("tj::bulk_wait_all();");
    line("tj::fence();");
    return;
  case ExprKind::Prefetch:
    emit_prefetch(e);
    return;
  default:
    break;
  }
  for (const ir::Expr* op : {e.a.get(), e.b.get(), e.c.get()})
    if (op) prepare(*op);
}

void Emitter::emit_fill(const std::string& dst, DType t, const ir::Expr& value,
                        const ir::Layout* l) {
  std::string L = layout_name(l);
  if (t == DType::F16 || t == DType::BF16) {
    // A 16-bit tile copied as it is (an unpacked or loaded tile into a variable): no round
    // trip through f32, which costs two conversions per element.
    // cast<f16|bf16> of an 8-bit integer tile in the same threads, four per word: packed
    // conversions (tj::cast_bytes4), not one per element through f32.
    if (value.kind == ExprKind::Cast && value.type.dtype == t && l->kind == LayoutKind::Blocked &&
        l->vec % 4 == 0) {
      const DType from = value.a->type.dtype;
      if (from == DType::I8 || from == DType::U8) {
        std::string bytes = raw_array(*value.a, from, l);
        if (!bytes.empty()) {
          line(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; tj_e += 4) tj::cast_bytes4(&",
                   bytes, "[tj_e], &", dst, "[tj_e]);"));
          return;
        }
      }
    }
    std::string src = raw_array(value, t, l);
    if (!src.empty()) {
      line(str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e) ", dst, "[tj_e] = ", src,
               "[tj_e];"));
      return;
    }
  }
  std::string v = elem(value, value.type.is_scalar() ? nullptr : l, "tj_e");
  std::string conv =
      (t == DType::F16 || t == DType::BF16) ? str("tj::cvt<", storage_type(t), ">(", v, ")") : v;
  line(
      str("TJ_UNROLL for (int tj_e = 0; tj_e < ", L, "::N; ++tj_e) ", dst, "[tj_e] = ", conv, ";"));
}

std::string Emitter::raw_array(const ir::Expr& value, DType t, const ir::Layout* l) {
  if (value.type.dtype != t || value.type.is_scalar()) return "";
  auto mat = materialized_.find(&value);
  if (mat != materialized_.end())
    return mat->second.kind == Value::Kind::Array && ir::equivalent(mat->second.layout, l)
               ? mat->second.name
               : "";
  if (value.kind == ExprKind::VarRef && value.var->type.space == Space::Frag &&
      ir::equivalent(value.var->layout, l))
    return var_name(value.var);
  return "";
}

std::string Emitter::materialize(const ir::Expr& e, const ir::Layout* l) {
  prepare(e);
  auto it = materialized_.find(&e);
  if (it != materialized_.end() && it->second.kind == Value::Kind::Array &&
      ir::equivalent(it->second.layout, l))
    return it->second.name;
  std::string name = fresh("t");
  line(str(storage_type(e.type.dtype), " ", name, "[", layout_name(l), "::N];"));
  emit_fill(name, e.type.dtype, e, l);
  return name;
}

} // namespace tilejit::cuda
