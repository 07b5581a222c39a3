// Adjoint rules, one per operation, as DSL text. `g` is the adjoint of the result `r`.
#include "compiler/autodiff/adjoint_ops.h"

#include "compiler/autodiff/reverse_mode.h"
#include "dsl/builtins.h"
#include "support/error.h"

#include <fmt/format.h>

namespace tilejit::autodiff {

bool op_kind_of_call(const std::string& callee, OpKind* kind) {
  // By the checker's own table (dsl/builtins.h), so spellings such as `gather` for `load`
  // are the language's, not a second list here.
  const dsl::BuiltinInfo* b = dsl::find_builtin(callee);
  if (!b) return false;
  using K = dsl::BuiltinKind;
  switch (b->kind) {
  case K::Where:
    *kind = OpKind::Where;
    return true;
  case K::Min:
    *kind = OpKind::Min;
    return true;
  case K::Max:
    *kind = OpKind::Max;
    return true;
  case K::Clamp:
    *kind = OpKind::Clamp;
    return true;
  case K::Pow:
    *kind = OpKind::Pow;
    return true;
  case K::Exp:
    *kind = OpKind::Exp;
    return true;
  case K::Exp2:
    *kind = OpKind::Exp2;
    return true;
  case K::Log:
    *kind = OpKind::Log;
    return true;
  case K::Log2:
    *kind = OpKind::Log2;
    return true;
  case K::Sqrt:
    *kind = OpKind::Sqrt;
    return true;
  case K::Rsqrt:
    *kind = OpKind::Rsqrt;
    return true;
  case K::Tanh:
    *kind = OpKind::Tanh;
    return true;
  case K::Sigmoid:
    *kind = OpKind::Sigmoid;
    return true;
  case K::Abs:
    *kind = OpKind::Abs;
    return true;
  case K::Cast:
    *kind = OpKind::Cast;
    return true;
  case K::Load:
    *kind = OpKind::Load;
    return true;
  case K::ReduceSum:
    *kind = OpKind::ReduceSum;
    return true;
  default:
    return false; // no adjoint rule (reductions, dot, floor/ceil, indices...)
  }
}

bool Adjoints::has(const std::string& value) const {
  return outer_.count(value) || defined_.count(value);
}

std::string Adjoints::of(const std::string& value) const {
  auto it = outer_.find(value);
  return it != outer_.end() ? it->second : prefix_ + value;
}

void Adjoints::add(std::vector<std::string>& out, const std::string& value, const std::string& c) {
  const std::string a = of(value);
  if (has(value)) {
    out.push_back(fmt::format("{} = {} + {};", a, a, c));
  } else {
    // `let`: an adjoint has its value's shape, a tile's or a scalar's (sum_to gives it).
    out.push_back(fmt::format("let {} = {};", a, c));
    defined_.insert(value);
  }
}

namespace {

// ln 2, for exp2 and log2.
constexpr const char* kLn2 = "0.6931471805599453";

std::string masked(const Op& op) {
  return op.mask.empty() ? "" : ", mask = " + op.mask;
}

} // namespace

void emit_adjoint(const Op& op, Adjoints& adj, std::vector<std::string>& out) {
  const std::vector<Operand>& a = op.args;
  auto add = [&](size_t i, const std::string& c) {
    if (i < a.size() && a[i].active) adj.add(out, a[i].text, "(" + c + ")");
  };
  auto add_to = [&](size_t i, const std::string& c) {
    if (i < a.size() && a[i].active)
      adj.add(out, a[i].text, fmt::format("sum_to({}, {})", c, a[i].text));
  };
  if (op.kind == OpKind::Store) {
    add_to(0, fmt::format("load({}[{}]{})", gradient_param_name(op.tensor), op.access, masked(op)));
    return;
  }
  if (!adj.has(op.result)) return; // the value reaches no output
  const std::string g = adj.of(op.result), r = op.result;
  auto t = [&](size_t i) { return a[i].text; };
  switch (op.kind) {
  case OpKind::Copy:
  case OpKind::Cast:
    add(0, g);
    break;
  case OpKind::Add:
    add_to(0, g);
    add_to(1, g);
    break;
  case OpKind::Sub:
    add_to(0, g);
    add_to(1, "-" + g);
    break;
  case OpKind::Mul:
    add_to(0, fmt::format("{} * {}", g, t(1)));
    add_to(1, fmt::format("{} * {}", g, t(0)));
    break;
  case OpKind::Div: // d(a/b)/db = -(a/b)/b
    add_to(0, fmt::format("{} / {}", g, t(1)));
    add_to(1, fmt::format("-({} * {}) / {}", g, r, t(1)));
    break;
  case OpKind::Neg:
    add(0, "-" + g);
    break;
  case OpKind::Where: // the branch taken gets it
    add_to(1, fmt::format("where({}, {}, 0.0)", t(0), g));
    add_to(2, fmt::format("where({}, 0.0, {})", t(0), g));
    break;
  case OpKind::Min: // a tie goes to the first argument
    add_to(0, fmt::format("where({} <= {}, {}, 0.0)", t(0), t(1), g));
    add_to(1, fmt::format("where({} <= {}, 0.0, {})", t(0), t(1), g));
    break;
  case OpKind::Max:
    add_to(0, fmt::format("where({} >= {}, {}, 0.0)", t(0), t(1), g));
    add_to(1, fmt::format("where({} >= {}, 0.0, {})", t(0), t(1), g));
    break;
  case OpKind::Clamp: // x keeps it at its bounds, as PyTorch's clamp
    add_to(0, fmt::format("where({} >= {} && {} <= {}, {}, 0.0)", t(0), t(1), t(0), t(2), g));
    add_to(1, fmt::format("where({} < {}, {}, 0.0)", t(0), t(1), g));
    add_to(2, fmt::format("where({} > {} && {} >= {}, {}, 0.0)", t(0), t(2), t(0), t(1), g));
    break;
  case OpKind::Pow: // x^y at x = 0: gradient 0 in x and in y
    add_to(0, fmt::format("where({} == 0.0, 0.0, {} * {} * pow({}, {} - 1.0))", t(0), g, t(1), t(0),
                          t(1)));
    add_to(1, fmt::format("where({} > 0.0, {} * {} * log({}), 0.0)", t(0), g, r, t(0)));
    break;
  case OpKind::Exp:
    add(0, fmt::format("{} * {}", g, r));
    break;
  case OpKind::Exp2:
    add(0, fmt::format("{} * {} * {}", g, r, kLn2));
    break;
  case OpKind::Log:
    add(0, fmt::format("{} / {}", g, t(0)));
    break;
  case OpKind::Log2:
    add(0, fmt::format("{} / ({} * {})", g, t(0), kLn2));
    break;
  case OpKind::Sqrt:
    add(0, fmt::format("{} * 0.5 / {}", g, r));
    break;
  case OpKind::Rsqrt:
    add(0, fmt::format("-0.5 * {} * {} * {} * {}", g, r, r, r));
    break;
  case OpKind::Tanh:
    add(0, fmt::format("{} * (1.0 - {} * {})", g, r, r));
    break;
  case OpKind::Sigmoid:
    add(0, fmt::format("{} * {} * (1.0 - {})", g, r, r));
    break;
  case OpKind::Abs:
    add(0, fmt::format("where({} > 0.0, {}, where({} < 0.0, -{}, 0.0))", t(0), g, t(0), g));
    break;
  case OpKind::ReduceSum:
    // g broadcast back over the reduced axis: g[:, None] for axis 1 (a [M] along [M, N]'s rows);
    // along axis 0 or every axis, g broadcasts as it is (NumPy aligns the last axes).
    add_to(0, op.axis == 1 ? g + "[:, None]" : g);
    break;
  case OpKind::NewAxes: {
    // Summed over the unit axes added, last first: back to the operand's shape exactly.
    std::string c = g;
    for (auto it = op.axes.rbegin(); it != op.axes.rend(); ++it)
      c = fmt::format("reduce_sum({}, axis = {})", c, *it);
    add(0, c);
    break;
  }
  case OpKind::Load:
    // Gradients are f32 tensors (atomic_add's widest float), whatever the value's dtype.
    out.push_back(fmt::format("atomic_add({}[{}], cast<f32>({}){});",
                              gradient_param_name(op.tensor), op.access, g, masked(op)));
    break;
  case OpKind::Store:
    break;
  }
}

} // namespace tilejit::autodiff
