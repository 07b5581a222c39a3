#include "compiler/ref/interpreter.h"

#include "compiler/ir_printer.h"
#include "compiler/ref/float_formats.h"
#include "compiler/ref/value.h"
#include "support/error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

namespace tilejit::ref {

std::vector<int64_t> dense_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

namespace {

using dsl::BinaryOp;
using ir::Expr;
using ir::ExprKind;

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

/// NumPy broadcast of two shapes; the checks were done by infer_types, so a mismatch here is a
/// broken invariant.
std::vector<int64_t> broadcast_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    TJ_ICHECK(x == y || x == 1 || y == 1, "shapes ", shape_text(a), " and ", shape_text(b),
              " do not broadcast (infer_types should have rejected this)");
    out[i] = std::max(x, y);
  }
  return out;
}

bool is_comparison(BinaryOp op) {
  return op == BinaryOp::Lt || op == BinaryOp::Le || op == BinaryOp::Gt || op == BinaryOp::Ge ||
         op == BinaryOp::Eq || op == BinaryOp::Ne;
}

/// A float operation in dtype `t`: f64 in double, every other float dtype in f32 and then rounded
/// to `t` (so f16 and bf16 arithmetic is f32 arithmetic rounded once per operation).
template <typename F> double float_op(DType t, double x, double y, F op) {
  if (t == DType::F64) return op(x, y);
  return round_float(t, static_cast<double>(op(static_cast<float>(x), static_cast<float>(y))));
}

int64_t int_add(DType t, int64_t x, int64_t y) {
  return wrap_int(t, static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y)));
}
int64_t int_sub(DType t, int64_t x, int64_t y) {
  return wrap_int(t, static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y)));
}
int64_t int_mul(DType t, int64_t x, int64_t y) {
  return wrap_int(t, static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)));
}

/// Shifts as PTX does them: the operand is promoted to 32 bits (64 for i64); amounts outside
/// [0, width) shift everything out (0, or the sign for an arithmetic right shift).
int64_t int_shift(DType t, BinaryOp op, int64_t x, int64_t y) {
  int width = dtype_size(t) <= 4 ? 32 : 64;
  bool out_of_range = y < 0 || y >= width;
  if (op == BinaryOp::Shl) {
    if (out_of_range) return 0;
    return wrap_int(t, static_cast<int64_t>(static_cast<uint64_t>(x) << y));
  }
  if (out_of_range) return dtype_is_signed(t) && x < 0 ? wrap_int(t, -1) : 0;
  return wrap_int(t, x >> y); // x is sign-extended for signed dtypes, zero-extended otherwise
}

double math_float(ir::MathFn fn, DType t, double x, double y) {
  using ir::MathFn;
  if (t == DType::F64) {
    switch (fn) {
    case MathFn::Exp:
      return std::exp(x);
    case MathFn::Exp2:
      return std::exp2(x);
    case MathFn::Log:
      return std::log(x);
    case MathFn::Log2:
      return std::log2(x);
    case MathFn::Sqrt:
      return std::sqrt(x);
    case MathFn::Rsqrt:
      return 1.0 / std::sqrt(x);
    case MathFn::Abs:
      return std::fabs(x);
    case MathFn::Floor:
      return std::floor(x);
    case MathFn::Ceil:
      return std::ceil(x);
    case MathFn::Tanh:
      return std::tanh(x);
    case MathFn::Sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case MathFn::Pow:
      return std::pow(x, y);
    case MathFn::Min:
      return std::fmin(x, y);
    case MathFn::Max:
      return std::fmax(x, y);
    }
    return x;
  }
  float a = static_cast<float>(x), b = static_cast<float>(y), r = a;
  switch (fn) {
  case MathFn::Exp:
    r = std::exp(a);
    break;
  case MathFn::Exp2:
    r = std::exp2(a);
    break;
  case MathFn::Log:
    r = std::log(a);
    break;
  case MathFn::Log2:
    r = std::log2(a);
    break;
  case MathFn::Sqrt:
    r = std::sqrt(a);
    break;
  case MathFn::Rsqrt:
    r = 1.0f / std::sqrt(a);
    break;
  case MathFn::Abs:
    r = std::fabs(a);
    break;
  case MathFn::Floor:
    r = std::floor(a);
    break;
  case MathFn::Ceil:
    r = std::ceil(a);
    break;
  case MathFn::Tanh:
    r = std::tanh(a);
    break;
  case MathFn::Sigmoid:
    r = 1.0f / (1.0f + std::exp(-a));
    break;
  case MathFn::Pow:
    r = std::pow(a, b);
    break;
  case MathFn::Min:
    r = std::fmin(a, b);
    break;
  case MathFn::Max:
    r = std::fmax(a, b);
    break;
  }
  return round_float(t, static_cast<double>(r));
}

/// One step of a reduction or scan in dtype `t`.
double combine_float(ir::ReduceOp op, DType t, double acc, double x) {
  switch (op) {
  case ir::ReduceOp::Sum:
    return float_op(t, acc, x, [](auto p, auto q) { return p + q; });
  case ir::ReduceOp::Prod:
    return float_op(t, acc, x, [](auto p, auto q) { return p * q; });
  case ir::ReduceOp::Max:
    return std::fmax(acc, x);
  case ir::ReduceOp::Min:
    return std::fmin(acc, x);
  }
  return acc;
}

int64_t combine_int(ir::ReduceOp op, DType t, int64_t acc, int64_t x) {
  switch (op) {
  case ir::ReduceOp::Sum:
    return int_add(t, acc, x);
  case ir::ReduceOp::Prod:
    return int_mul(t, acc, x);
  case ir::ReduceOp::Max:
    return std::max(acc, x);
  case ir::ReduceOp::Min:
    return std::min(acc, x);
  }
  return acc;
}

/// The elements of a global tensor an access touches: the access's shape and, per element in
/// row-major order, its offset in the tensor (in elements), or -1 when it is out of bounds or
/// masked off. A point or gather subscript out of range is recorded apart (an error unless
/// the element is masked off); a range running past the end only masks its elements.
struct AccessElements {
  std::vector<int64_t> shape;
  std::vector<int64_t> offsets;
  bool scalar = false;
  std::vector<bool> masked; ///< per element: masked off by `mask` (set by apply_mask)
  struct Violation {
    int64_t element = -1; ///< in row-major order of the access
    int dim = 0;
    int64_t index = 0;
    bool gather = false;
  };
  std::vector<Violation> violations; ///< in element order
};
class Interpreter {
public:
  Interpreter(const ir::Kernel& k, const std::vector<HostArg>& args, std::array<int64_t, 3> grid)
      : k_(k), args_(args), grid_(grid), vars_(k.vars.size()), defined_(k.vars.size(), false) {}

  void run() {
    if (k_.cluster_size() > 1) {
      run_clusters();
      return;
    }
    for (int64_t z = 0; z < grid_[2]; ++z)
      for (int64_t y = 0; y < grid_[1]; ++y)
        for (int64_t x = 0; x < grid_[0]; ++x) {
          pid_ = {x, y, z};
          std::fill(defined_.begin(), defined_.end(), false);
          ring_.clear();
          pending_error_.clear();
          exec_block(k_.body);
        }
  }

private:
  enum class Flow { Next, Return };

  /// One program's state, swapped in while it runs (clusters interleave their programs).
  struct ProgramState {
    std::array<int64_t, 3> pid = {0, 0, 0};
    std::vector<Value> vars;
    std::vector<bool> defined;
    std::map<std::pair<int, int64_t>, Value> ring;
    std::map<int, std::pair<dsl::SourceLoc, std::string>> pending_error;
    bool returned = false;
  };
  void swap_state(ProgramState& s) {
    std::swap(pid_, s.pid);
    std::swap(vars_, s.vars);
    std::swap(defined_, s.defined);
    std::swap(ring_, s.ring);
    std::swap(pending_error_, s.pending_error);
  }

  /// Clusters: the programs of one cluster run their top-level statements in lockstep, each
  /// statement program by program in rank order (x fastest, as the GPU numbers them), so
  /// that a cluster_sum (only ever the whole value of a top-level statement) sees every
  /// program's value: the operand is evaluated in each program, added in rank order, and
  /// the sum assigned in each. Clusters run one after another.
  void run_clusters() {
    const std::array<int, 3>& c = k_.cluster;
    for (int d = 0; d < 3; ++d)
      if (grid_[d] % c[d] != 0)
        throw Error(str("kernel '", k_.name, "': grid extent ", d, " = ", grid_[d],
                        " is not a multiple of the cluster's ", c[d],
                        " (the 'cluster' clause): the launch would fail"));
    const int programs = k_.cluster_size();
    for (int64_t z0 = 0; z0 < grid_[2]; z0 += c[2])
      for (int64_t y0 = 0; y0 < grid_[1]; y0 += c[1])
        for (int64_t x0 = 0; x0 < grid_[0]; x0 += c[0]) {
          std::vector<ProgramState> states(programs);
          for (int r = 0; r < programs; ++r) {
            states[r].pid = {x0 + r % c[0], y0 + r / c[0] % c[1], z0 + r / (c[0] * c[1])};
            states[r].vars.resize(k_.vars.size());
            states[r].defined.assign(k_.vars.size(), false);
          }
          for (const auto& s : k_.body) {
            const bool sum = (s->kind == ir::StmtKind::Decl || s->kind == ir::StmtKind::Assign) &&
                             !s->slot && s->value->kind == ExprKind::ClusterSum;
            if (!sum) {
              for (ProgramState& st : states) {
                if (st.returned) continue;
                swap_state(st);
                const Flow f = exec(*s);
                swap_state(st);
                st.returned = f == Flow::Return;
              }
              continue;
            }
            Value total;
            for (int r = 0; r < programs; ++r) {
              swap_state(states[r]);
              if (states[r].returned)
                runtime_error(s->loc, "this program returned before the cluster_sum the "
                                      "other programs of its cluster wait in");
              Value v = eval(*s->value->a);
              swap_state(states[r]);
              total = r == 0 ? std::move(v) : add_values(total, v);
            }
            for (ProgramState& st : states) {
              swap_state(st);
              set_var(*s->var, total);
              swap_state(st);
            }
          }
        }
  }

  /// a + b element by element in their dtype (f32 rounded at each addition, as on the GPU;
  /// integers wrapped).
  static Value add_values(const Value& a, const Value& b) {
    Value out = a;
    if (out.is_float()) {
      for (size_t k = 0; k < out.f.size(); ++k) out.f[k] = round_float(out.dtype, a.f[k] + b.f[k]);
    } else {
      for (size_t k = 0; k < out.i.size(); ++k) out.i[k] = wrap_int(out.dtype, a.i[k] + b.i[k]);
    }
    return out;
  }

  /// Throws "file:line:col: runtime error in kernel K, program (x,y,z): msg" followed, like a
  /// compile diagnostic, by the source line and a caret under the column.
  [[noreturn]] void runtime_error(const dsl::SourceLoc& loc, const std::string& msg) const {
    std::string text = str(loc.path(), ":", loc.line, ":", loc.col, ": runtime error in kernel ",
                           k_.name, ", program (", pid_[0], ",", pid_[1], ",", pid_[2], "): ", msg);
    if (loc.known() && !loc.file->line_text(loc.line).empty())
      text += str("\n    ", loc.file->line_text(loc.line), "\n    ",
                  std::string(std::max(loc.col - 1, 0), ' '), "^");
    throw Error(text);
  }

  // ---- statements ------------------------------------------------------------------------
  Flow exec_block(const ir::Block& b) {
    for (const auto& s : b)
      if (exec(*s) == Flow::Return) return Flow::Return;
    return Flow::Next;
  }

  Flow exec(const ir::Stmt& s) {
    switch (s.kind) {
    case ir::StmtKind::Decl:
    case ir::StmtKind::Assign: {
      speculative_error_.reset();
      if (s.slot) {
        // A pipeline's producer (after expand-pipelines) fills one slot of a ring buffer.
        int64_t slot = scalar_int(*s.slot);
        Value x = eval(*s.value);
        set_var(*s.var, std::move(x));
        ring_[{s.var->id, slot}] = vars_[s.var->id];
        return Flow::Next;
      }
      Value v = eval(*s.value);
      set_var(*s.var, std::move(v));
      // A speculative load out of range: an error only if the variable is ever read.
      if (speculative_error_) pending_error_[s.var->id] = std::move(*speculative_error_);
      speculative_error_.reset();
      return Flow::Next;
    }
    case ir::StmtKind::Store:
      store(s);
      return Flow::Next;
    case ir::StmtKind::Eval:
      if (s.value->kind != ExprKind::Prefetch) eval(*s.value); // a prefetch is only a hint
      return Flow::Next;
    case ir::StmtKind::For: {
      int64_t lo = scalar_int(*s.lo), hi = scalar_int(*s.hi), step = scalar_int(*s.step);
      TJ_ICHECK(step != 0, "loop step 0 at line ", s.loc.line);
      for (int64_t v = lo; step > 0 ? v < hi : v > hi; v += step) {
        set_var(*s.var, Value::scalar_int(s.var->type.dtype, v));
        if (exec_block(s.body) == Flow::Return) return Flow::Return;
      }
      return Flow::Next;
    }
    case ir::StmtKind::If: {
      // The producer warps and the other threads run at once, in step through mbarriers that
      // this program-at-a-time interpreter does not model.
      if (s.warp_role != ir::WarpRole::None)
        throw Error("the interpreter does not run producer warps (pipelined(..., producer = 1) "
                    "after expand-pipelines): run the kernel as an earlier pass leaves it");
      Value c = eval(*s.value);
      TJ_ICHECK(c.dtype == DType::Bool && c.shape.empty(), "'if' condition is not a bool scalar");
      return exec_block(c.i[0] ? s.body : s.else_body);
    }
    case ir::StmtKind::Return:
      return Flow::Return;
    case ir::StmtKind::Barrier:
    case ir::StmtKind::AsyncCommit:
    case ir::StmtKind::AsyncWait:
    case ir::StmtKind::WgmmaWait:
    case ir::StmtKind::MbarrierInit:
    case ir::StmtKind::MbarrierWait:
    case ir::StmtKind::MbarrierArrive:
      return Flow::Next; // one program runs as a whole: nothing to wait for
    }
    return Flow::Next;
  }

  /// Ring buffers' slots (after expand-pipelines), by (variable id, slot).
  std::map<std::pair<int, int64_t>, Value> ring_;

  void set_var(const ir::Var& v, Value x) {
    if (x.dtype != v.type.dtype) x = cast_value(x, v.type.dtype);
    if (x.shape != v.type.shape) x = broadcast_to(x, v.type.shape);
    vars_[v.id] = std::move(x);
    defined_[v.id] = true;
    pending_error_.erase(v.id);
  }

  int64_t scalar_int(const Expr& e) {
    Value v = eval(e);
    TJ_ICHECK(v.shape.empty() && !v.is_float(), "expected an integer scalar: ", ir::print_expr(e));
    return v.i[0];
  }

  // ---- global memory ---------------------------------------------------------------------
  const HostTensor& tensor(int param) const {
    TJ_ICHECK(param >= 0 && param < static_cast<int>(args_.size()) && args_[param].is_tensor,
              "parameter ", param, " is not a tensor");
    return args_[param].tensor;
  }

  AccessElements plan_access(const ir::Access& a) {
    const HostTensor& t = tensor(a.param);
    AccessElements out;
    int rank = static_cast<int>(a.indices.size());
    TJ_ICHECK(rank == static_cast<int>(t.shape.size()), "access rank ", rank, " vs tensor rank ",
              t.shape.size());
    std::vector<int64_t> point(rank, 0);
    std::vector<std::vector<int64_t>> gather(rank);
    const std::vector<int> axis = a.tile_axes(); // per subscript: its tile axis, -1 for points
    for (int d = 0; d < rank; ++d) {
      const ir::AccessIndex& ix = a.indices[d];
      Value v = eval(*ix.index);
      TJ_ICHECK(!v.is_float() && v.dtype != DType::Bool, "subscript ", d, " is not an integer");
      if (ix.kind == ir::AccessIndex::Kind::Gather) {
        TJ_ICHECK(v.shape.size() == 1, "gather subscript ", d, " is not rank 1");
        gather[d] = std::move(v.i);
      } else {
        TJ_ICHECK(v.shape.empty(), "point or range subscript ", d, " is not a scalar");
        point[d] = v.i[0];
      }
    }
    out.shape = a.shape();
    out.scalar = out.shape.empty();
    int64_t n = shape_numel(out.shape);
    out.offsets.assign(n, -1);
    out.masked.assign(n, false);
    std::vector<int64_t> mi(out.shape.size(), 0); // multi-index of element k
    for (int64_t k = 0; k < n; ++k) {
      bool in_bounds = true, recorded = false;
      int64_t offset = 0;
      for (int d = 0; d < rank; ++d) {
        const auto kind = a.indices[d].kind;
        int64_t c = kind == ir::AccessIndex::Kind::Point   ? point[d]
                    : kind == ir::AccessIndex::Kind::Range ? point[d] + mi[axis[d]]
                                                           : gather[d][mi[axis[d]]];
        if (c < 0 || c >= t.shape[d]) {
          if (!recorded && kind != ir::AccessIndex::Kind::Range) {
            out.violations.push_back({k, d, c, kind == ir::AccessIndex::Kind::Gather});
            recorded = true;
          }
          in_bounds = false;
          continue;
        }
        offset += c * t.strides[d];
      }
      if (in_bounds) out.offsets[k] = offset;
      for (size_t ax = mi.size(); ax-- > 0;) {
        if (++mi[ax] < out.shape[ax]) break;
        mi[ax] = 0;
      }
    }
    return out;
  }

  void apply_mask(AccessElements& acc, const Expr* mask) {
    if (!mask) return;
    Value m = eval(*mask);
    TJ_ICHECK(m.dtype == DType::Bool, "mask is not bool");
    std::vector<int64_t> map = broadcast_map(m.shape, acc.shape);
    for (size_t k = 0; k < acc.offsets.size(); ++k)
      if (!m.i[map[k]]) {
        acc.offsets[k] = -1;
        acc.masked[k] = true;
      }
  }

  /// A point or gather subscript out of range at an element that is not masked off is an
  /// error (ranges past the end are not: partial tiles are masked). A speculative load (moved
  /// ahead by unroll-loops) defers it to the first read of what it loaded.
  void check_subscripts(const AccessElements& acc, const ir::Access& a) {
    for (const auto& v : acc.violations) {
      if (acc.masked[v.element]) continue;
      const ir::Param& p = k_.params[a.param];
      const HostTensor& t = tensor(a.param);
      int64_t size = t.shape[v.dim];
      const std::string& dim = p.dim_names[v.dim];
      bool named = dim.find_first_not_of("0123456789") != std::string::npos; // not a literal
      std::string hint = size == 1 ? str("; a dimension of size 1 broadcasts only when declared 1|",
                                         named ? dim : "NAME")
                                   : std::string();
      std::string msg =
          str(v.gather ? "gathered index " : "index ", v.index, " is out of bounds for dimension ",
              v.dim, named ? str(" ('", dim, "')") : std::string(), " of '", p.name, "' of size ",
              size, v.gather ? str(" (at element ", v.element, " of the access)") : std::string(),
              hint, "; mask it off with mask= if it is expected");
      if (a.speculative) {
        if (!speculative_error_) speculative_error_ = {a.loc, msg};
        return;
      }
      runtime_error(a.loc, msg);
    }
  }
  /// `v` converted to the tensor's dtype (infer_types already inserted the cast) and broadcast
  /// to the access shape.
  Value fit_to_access(Value v, DType dtype, const std::vector<int64_t>& shape) {
    if (v.dtype != dtype) v = cast_value(v, dtype);
    if (v.shape != shape) v = broadcast_to(v, shape);
    return v;
  }

  Value load(const Expr& e) {
    AccessElements acc = plan_access(*e.access);
    apply_mask(acc, e.b.get());
    check_subscripts(acc, *e.access);
    const HostTensor& t = tensor(e.access->param);
    Value other = Value::zeros(t.dtype, {});
    if (e.c) other = fit_to_access(eval(*e.c), t.dtype, {});
    Value out = Value::zeros(t.dtype, acc.shape);
    for (size_t k = 0; k < acc.offsets.size(); ++k) {
      if (acc.offsets[k] >= 0)
        load_element(t.dtype, t.data, acc.offsets[k], out, static_cast<int64_t>(k));
      else if (out.is_float())
        out.f[k] = other.f[0];
      else
        out.i[k] = other.i[0];
    }
    return out;
  }

  void store(const ir::Stmt& s) {
    AccessElements acc = plan_access(*s.access);
    const HostTensor& t = tensor(s.access->param);
    Value v = fit_to_access(eval(*s.value), t.dtype, acc.shape);
    apply_mask(acc, s.mask.get());
    check_subscripts(acc, *s.access);
    for (size_t k = 0; k < acc.offsets.size(); ++k)
      if (acc.offsets[k] >= 0)
        store_element(t.dtype, t.data, acc.offsets[k], v, static_cast<int64_t>(k));
  }

  Value atomic_add(const Expr& e) {
    AccessElements acc = plan_access(*e.access);
    const HostTensor& t = tensor(e.access->param);
    Value v = fit_to_access(eval(*e.a), t.dtype, acc.shape);
    apply_mask(acc, e.b.get());
    check_subscripts(acc, *e.access);
    Value old = Value::zeros(t.dtype, acc.shape);
    Value sum = Value::zeros(t.dtype, {});
    for (size_t k = 0; k < acc.offsets.size(); ++k) {
      if (acc.offsets[k] < 0) continue;
      int64_t kk = static_cast<int64_t>(k);
      load_element(t.dtype, t.data, acc.offsets[k], old, kk);
      if (sum.is_float())
        sum.f[0] = float_op(t.dtype, old.f[k], v.f[k], [](auto p, auto q) { return p + q; });
      else
        sum.i[0] = int_add(t.dtype, old.i[k], v.i[k]);
      store_element(t.dtype, t.data, acc.offsets[k], sum, 0);
    }
    return old;
  }

  // ---- expressions -----------------------------------------------------------------------
  Value eval(const Expr& e) {
    Value v = eval_node(e);
    TJ_ICHECK(v.dtype == e.type.dtype && v.shape == e.type.shape, "the interpreter computed ",
              dtype_name(v.dtype), shape_text(v.shape), " for '", ir::print_expr(e), "' (line ",
              e.loc.line, ") typed ", e.type.str(), " (the interpreter runs IR after infer-types)");
    return v;
  }

  Value eval_node(const Expr& e) {
    switch (e.kind) {
    case ExprKind::Const:
      if (dtype_is_float(e.type.dtype)) return Value::scalar_float(e.type.dtype, e.float_value);
      return Value::scalar_int(e.type.dtype, e.int_value);
    case ExprKind::VarRef:
      if (e.var->read_slot) {
        // A ring buffer is read at this iteration's slot: what the producer that ran
        // STAGES-1 iterations ago left there.
        int64_t slot = vars_[e.var->read_slot->id].i.at(0);
        auto it = ring_.find({e.var->id, slot});
        if (it == ring_.end())
          runtime_error(e.loc, str("slot ", slot, " of ring buffer '", e.var->name,
                                   "' is read before a copy filled it"));
        return it->second;
      }
      if (!defined_[e.var->id])
        runtime_error(e.loc, str("'", e.var->name, "' is read before it has a value"));
      if (auto it = pending_error_.find(e.var->id); it != pending_error_.end())
        runtime_error(it->second.first, it->second.second);
      return vars_[e.var->id];
    case ExprKind::ParamRef:
      return scalar_param(e.param);
    case ExprKind::DimRef: {
      const HostTensor& t = tensor(e.param);
      TJ_ICHECK(e.axis >= 0 && e.axis < static_cast<int>(t.shape.size()), "dim axis out of range");
      return Value::scalar_int(DType::I32, t.shape[e.axis]);
    }
    case ExprKind::ProgramId:
    case ExprKind::NumPrograms:
      TJ_ICHECK(e.axis >= 0 && e.axis < 3, "grid axis ", e.axis);
      return Value::scalar_int(DType::I32,
                               e.kind == ExprKind::ProgramId ? pid_[e.axis] : grid_[e.axis]);
    case ExprKind::Unary:
      return unary(e);
    case ExprKind::Binary:
      return binary(e);
    case ExprKind::Select:
      return select(e);
    case ExprKind::Math:
      return math(e);
    case ExprKind::Cast:
      return cast_value(eval(*e.a), e.type.dtype);
    case ExprKind::Unpack: {
      Value v = unpack(eval(*e.a), e.type.dtype, static_cast<int>(e.extent), e.int_value != 0);
      if (e.b) subtract_zero(v, eval(*e.b));
      return v;
    }
    case ExprKind::Iota: {
      Value v = Value::zeros(DType::I32, {e.extent});
      for (int64_t k = 0; k < e.extent; ++k) v.i[k] = k;
      return v;
    }
    case ExprKind::Expand: {
      Value v = eval(*e.a);
      std::vector<int64_t> shape = v.shape;
      for (int ax : e.axes) shape.insert(shape.begin() + ax, 1);
      v.shape = std::move(shape);
      return v;
    }
    case ExprKind::Trans:
      return transpose(eval(*e.a));
    case ExprKind::Load:
    case ExprKind::Copy:
      return load(e);
    case ExprKind::SharedSlice:
      return shared_slice(e);
    case ExprKind::Dot:
      return dot(e);
    case ExprKind::Reduce:
      return reduce(e);
    case ExprKind::Scan:
      return scan(e);
    case ExprKind::SolveTril:
      return solve_tril(e);
    case ExprKind::AtomicAdd:
      return atomic_add(e);
    case ExprKind::Fence:
      return Value::scalar_int(DType::I32, 0); // programs run one at a time
    case ExprKind::ClusterSum:
      // A cluster of one program: its own value. Larger clusters: run_clusters adds them.
      TJ_ICHECK(k_.cluster_size() == 1, "cluster_sum below a top-level statement");
      return eval(*e.a);
    case ExprKind::Prefetch:
      TJ_ICHECK(false, "prefetch is a statement (run skips it)");
    case ExprKind::Convert:
      return eval(*e.a); // a layout or space change: same values
    }
    TJ_ICHECK(false, "unknown expression kind");
    return {};
  }

  Value scalar_param(int param) const {
    TJ_ICHECK(param >= 0 && param < static_cast<int>(args_.size()) && !args_[param].is_tensor,
              "parameter ", param, " is not a scalar");
    DType t = k_.params[param].dtype;
    const HostValue& h = args_[param].scalar;
    if (dtype_is_float(t)) return Value::scalar_float(t, h.as_double());
    if (t == DType::Bool)
      return Value::scalar_int(t, h.kind == HostValue::Kind::Float ? h.f != 0 : h.b || h.i);
    if (h.kind == HostValue::Kind::Float) return Value::scalar_float(t, h.f);
    return Value::scalar_int(t, h.i);
  }

  Value unary(const Expr& e) {
    Value v = eval(*e.a);
    int64_t n = v.numel();
    switch (e.unary_op) {
    case dsl::UnaryOp::Neg:
      TJ_ICHECK(v.dtype != DType::Bool, "'-' on bool");
      if (v.is_float())
        for (auto& x : v.f) x = -x;
      else
        for (int64_t k = 0; k < n; ++k) v.i[k] = int_sub(v.dtype, 0, v.i[k]);
      return v;
    case dsl::UnaryOp::Not:
      TJ_ICHECK(v.dtype == DType::Bool, "'!' on ", dtype_name(v.dtype));
      for (auto& x : v.i) x = !x;
      return v;
    case dsl::UnaryOp::BitNot:
      TJ_ICHECK(dtype_is_int(v.dtype), "'~' on ", dtype_name(v.dtype));
      for (auto& x : v.i) x = wrap_int(v.dtype, ~x);
      return v;
    }
    return v;
  }

  Value binary(const Expr& e) {
    Value a = eval(*e.a);
    Value b = eval(*e.b);
    TJ_ICHECK(a.dtype == b.dtype, "binary '", dsl::binary_op_spelling(e.binary_op), "' on ",
              dtype_name(a.dtype), " and ", dtype_name(b.dtype), " (infer_types inserts casts)");
    BinaryOp op = e.binary_op;
    DType t = a.dtype;
    std::vector<int64_t> shape = broadcast_shape(a.shape, b.shape);
    std::vector<int64_t> ma = broadcast_map(a.shape, shape), mb = broadcast_map(b.shape, shape);
    Value out = Value::zeros(is_comparison(op) ? DType::Bool : t, shape);
    int64_t n = shape_numel(shape);
    if (a.is_float()) {
      for (int64_t k = 0; k < n; ++k) {
        double x = a.f[ma[k]], y = b.f[mb[k]];
        switch (op) {
        case BinaryOp::Add:
          out.f[k] = float_op(t, x, y, [](auto p, auto q) { return p + q; });
          break;
        case BinaryOp::Sub:
          out.f[k] = float_op(t, x, y, [](auto p, auto q) { return p - q; });
          break;
        case BinaryOp::Mul:
          out.f[k] = float_op(t, x, y, [](auto p, auto q) { return p * q; });
          break;
        case BinaryOp::Div:
          out.f[k] = float_op(t, x, y, [](auto p, auto q) { return p / q; });
          break;
        case BinaryOp::Mod:
          out.f[k] = float_op(t, x, y, [](auto p, auto q) { return std::fmod(p, q); });
          break;
        case BinaryOp::Lt:
          out.i[k] = x < y;
          break;
        case BinaryOp::Le:
          out.i[k] = x <= y;
          break;
        case BinaryOp::Gt:
          out.i[k] = x > y;
          break;
        case BinaryOp::Ge:
          out.i[k] = x >= y;
          break;
        case BinaryOp::Eq:
          out.i[k] = x == y;
          break;
        case BinaryOp::Ne:
          out.i[k] = x != y;
          break;
        default:
          TJ_ICHECK(false, "'", dsl::binary_op_spelling(op), "' on ", dtype_name(t));
        }
      }
      return out;
    }
    for (int64_t k = 0; k < n; ++k) {
      int64_t x = a.i[ma[k]], y = b.i[mb[k]];
      int64_t& r = out.i[k];
      switch (op) {
      case BinaryOp::Add:
        r = int_add(t, x, y);
        break;
      case BinaryOp::Sub:
        r = int_sub(t, x, y);
        break;
      case BinaryOp::Mul:
        r = int_mul(t, x, y);
        break;
      case BinaryOp::Div:
      case BinaryOp::Mod:
        if (y == 0)
          runtime_error(
              e.loc,
              str("integer ", op == BinaryOp::Div ? "division" : "modulo", " by zero",
                  b.shape.empty() ? std::string() : str(" (divisor element ", mb[k], " is 0)")));
        if (x == std::numeric_limits<int64_t>::min() && y == -1)
          r = op == BinaryOp::Div ? x : 0; // wraps, like every other integer overflow
        else
          r = wrap_int(t, op == BinaryOp::Div ? x / y : x % y);
        break;
      case BinaryOp::Lt:
        r = x < y;
        break;
      case BinaryOp::Le:
        r = x <= y;
        break;
      case BinaryOp::Gt:
        r = x > y;
        break;
      case BinaryOp::Ge:
        r = x >= y;
        break;
      case BinaryOp::Eq:
        r = x == y;
        break;
      case BinaryOp::Ne:
        r = x != y;
        break;
      case BinaryOp::And:
        r = x && y;
        break;
      case BinaryOp::Or:
        r = x || y;
        break;
      case BinaryOp::BitAnd:
        r = wrap_int(t, x & y);
        break;
      case BinaryOp::BitOr:
        r = wrap_int(t, x | y);
        break;
      case BinaryOp::BitXor:
        r = wrap_int(t, x ^ y);
        break;
      case BinaryOp::Shl:
      case BinaryOp::Shr:
        r = int_shift(t, op, x, y);
        break;
      }
    }
    return out;
  }

  Value select(const Expr& e) {
    Value c = eval(*e.a);
    Value x = eval(*e.b);
    Value y = eval(*e.c);
    TJ_ICHECK(c.dtype == DType::Bool && x.dtype == y.dtype, "where(...) operand dtypes");
    std::vector<int64_t> shape = broadcast_shape(broadcast_shape(c.shape, x.shape), y.shape);
    std::vector<int64_t> mc = broadcast_map(c.shape, shape), mx = broadcast_map(x.shape, shape),
                         my = broadcast_map(y.shape, shape);
    Value out = Value::zeros(x.dtype, shape);
    for (size_t k = 0; k < mc.size(); ++k) {
      bool pick = c.i[mc[k]] != 0;
      if (out.is_float())
        out.f[k] = pick ? x.f[mx[k]] : y.f[my[k]];
      else
        out.i[k] = pick ? x.i[mx[k]] : y.i[my[k]];
    }
    return out;
  }

  Value math(const Expr& e) {
    using ir::MathFn;
    Value a = eval(*e.a);
    Value b = e.b ? eval(*e.b) : Value();
    if (e.b) TJ_ICHECK(a.dtype == b.dtype, "math operands have different dtypes");
    DType t = a.dtype;
    std::vector<int64_t> shape = e.b ? broadcast_shape(a.shape, b.shape) : a.shape;
    std::vector<int64_t> ma = broadcast_map(a.shape, shape);
    std::vector<int64_t> mb = e.b ? broadcast_map(b.shape, shape) : std::vector<int64_t>();
    Value out = Value::zeros(t, shape);
    int64_t n = shape_numel(shape);
    if (a.is_float()) {
      for (int64_t k = 0; k < n; ++k)
        out.f[k] = math_float(e.math, t, a.f[ma[k]], e.b ? b.f[mb[k]] : 0.0);
      return out;
    }
    TJ_ICHECK(e.math == MathFn::Min || e.math == MathFn::Max || e.math == MathFn::Abs,
              ir::math_fn_name(e.math), " of an integer (infer_types casts to f32)");
    for (int64_t k = 0; k < n; ++k) {
      int64_t x = a.i[ma[k]];
      if (e.math == MathFn::Abs)
        out.i[k] = x < 0 ? int_sub(t, 0, x) : x;
      else
        out.i[k] = e.math == MathFn::Min ? std::min(x, b.i[mb[k]]) : std::max(x, b.i[mb[k]]);
    }
    return out;
  }

  static Value transpose(const Value& v) {
    TJ_ICHECK(v.shape.size() == 2, "trans of a rank-", v.shape.size(), " value");
    int64_t r = v.shape[0], c = v.shape[1];
    Value out = Value::zeros(v.dtype, {c, r});
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) {
        if (v.is_float())
          out.f[j * r + i] = v.f[i * c + j];
        else
          out.i[j * r + i] = v.i[i * c + j];
      }
    return out;
  }

  Value shared_slice(const Expr& e) {
    Value a = eval(*e.a);
    int64_t start = scalar_int(*e.b);
    TJ_ICHECK(!a.shape.empty(), "slice of a scalar");
    int64_t rows = a.shape[0];
    if (start < 0 || start + e.extent > rows)
      runtime_error(e.loc, str("shared slice",
                               e.a->kind == ExprKind::VarRef ? " of '" + e.a->var->name + "'" : "",
                               " reads rows [", start, ", ", start + e.extent, ") of a tile with ",
                               rows, " rows"));
    int64_t row = shape_numel(a.shape) / rows;
    Value out;
    out.dtype = a.dtype;
    out.shape = a.shape;
    out.shape[0] = e.extent;
    if (!e.axes.empty()) out.shape.erase(out.shape.begin()); // s[i, :]: one row, axis dropped
    if (a.is_float())
      out.f.assign(a.f.begin() + start * row, a.f.begin() + (start + e.extent) * row);
    else
      out.i.assign(a.i.begin() + start * row, a.i.begin() + (start + e.extent) * row);
    return out;
  }

  Value dot(const Expr& e) {
    Value a = eval(*e.a);
    Value b = eval(*e.b);
    TJ_ICHECK(a.shape.size() == 2 && b.shape.size() == 2 && a.shape[1] == b.shape[0] &&
                  a.is_float() && b.is_float(),
              "dot operands ", dtype_name(a.dtype), shape_text(a.shape), " and ",
              dtype_name(b.dtype), shape_text(b.shape));
    int64_t m = a.shape[0], kk = a.shape[1], n = b.shape[1];
    Value out = Value::zeros(DType::F32, {m, n});
    if (e.c) {
      Value c = eval(*e.c);
      TJ_ICHECK(c.dtype == DType::F32 && c.shape == out.shape, "dot accumulator type");
      out.f = std::move(c.f);
    }
    // Each output element accumulates its K products in order, in f32, one rounding per step.
    // f32 operands go through the tensor cores as TF32 unless the dot is exact: each is
    // rounded to 10 mantissa bits first (to nearest, ties away from zero, as cvt.rna.tf32).
    const bool tf32 = a.dtype == DType::F32 && e.int_value == 0;
    auto operand = [&](double v) {
      const float f = static_cast<float>(v);
      return tf32 ? round_to_tf32(f) : f;
    };
    std::vector<float> acc(n), bf(kk * n);
    for (int64_t x = 0; x < kk * n; ++x) bf[x] = operand(b.f[x]);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) acc[j] = static_cast<float>(out.f[i * n + j]);
      for (int64_t p = 0; p < kk; ++p) {
        float ap = operand(a.f[i * kk + p]);
        const float* brow = &bf[p * n];
        for (int64_t j = 0; j < n; ++j) acc[j] = std::fma(ap, brow[j], acc[j]);
      }
      for (int64_t j = 0; j < n; ++j) out.f[i * n + j] = acc[j];
    }
    return out;
  }

  /// Splits `shape` around `axis` into (outer, length, inner) extents.
  static void split_axis(const std::vector<int64_t>& shape, int axis, int64_t& outer, int64_t& len,
                         int64_t& inner) {
    outer = inner = 1;
    for (int d = 0; d < axis; ++d) outer *= shape[d];
    len = shape[axis];
    for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  }

  Value reduce(const Expr& e) {
    Value a = eval(*e.a);
    TJ_ICHECK(!a.shape.empty() && a.dtype != DType::Bool, "reduce operand");
    int64_t outer, len, inner;
    std::vector<int64_t> shape;
    if (e.axis < 0) {
      outer = inner = 1;
      len = a.numel();
    } else {
      split_axis(a.shape, e.axis, outer, len, inner);
      shape = a.shape;
      shape.erase(shape.begin() + e.axis);
    }
    Value out = Value::zeros(a.dtype, shape);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        int64_t base = o * len * inner + in;
        if (a.is_float()) {
          double acc = a.f[base];
          for (int64_t j = 1; j < len; ++j)
            acc = combine_float(e.reduce_op, a.dtype, acc, a.f[base + j * inner]);
          out.f[o * inner + in] = acc;
        } else {
          int64_t acc = a.i[base];
          for (int64_t j = 1; j < len; ++j)
            acc = combine_int(e.reduce_op, a.dtype, acc, a.i[base + j * inner]);
          out.i[o * inner + in] = acc;
        }
      }
    return out;
  }

  /// unpack4<T>(words): field j of word c (bits j*bits.. of its 32) is element c*(32/bits) + j
  /// along the last axis, an unsigned value (exact in f16, bf16 and f32). Interleaved (4-bit
  /// fields): element 8c + m is field m / 2 + 4 * (m % 2), so fields (0, 4), (1, 5), (2, 6),
  /// (3, 7) are adjacent pairs.
  static Value unpack(const Value& words, DType t, int bits, bool interleaved) {
    const int per_word = 32 / bits;
    std::vector<int64_t> shape = words.shape;
    shape.back() *= per_word;
    Value out = Value::zeros(t, shape);
    const uint32_t field_mask = (1u << bits) - 1;
    for (int64_t c = 0; c < words.numel(); ++c) {
      const uint32_t w = static_cast<uint32_t>(words.i[c]);
      for (int m = 0; m < per_word; ++m) {
        const int j = interleaved ? m / 2 + (per_word / 2) * (m % 2) : m;
        out.f[c * per_word + m] = static_cast<double>((w >> (j * bits)) & field_mask);
      }
    }
    return out;
  }

  /// unpack4's zero point: its low 4 bits, one per row (or one for all), subtracted exactly.
  static void subtract_zero(Value& v, const Value& zero) {
    const int64_t cols = v.shape.back(), n = v.numel();
    for (int64_t k = 0; k < n; ++k) {
      const int64_t z = zero.i[zero.shape.empty() ? 0 : k / cols] & 15;
      v.f[k] = round_float(v.dtype, v.f[k] - static_cast<double>(z));
    }
  }

  Value scan(const Expr& e) {
    Value a = eval(*e.a);
    TJ_ICHECK(e.axis >= 0 && e.axis < static_cast<int>(a.shape.size()) && a.dtype != DType::Bool,
              "scan operand");
    int64_t outer, len, inner;
    split_axis(a.shape, e.axis, outer, len, inner);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        int64_t base = o * len * inner + in;
        for (int64_t j = 1; j < len; ++j) {
          int64_t prev = base + (j - 1) * inner, cur = base + j * inner;
          if (a.is_float())
            a.f[cur] = combine_float(e.reduce_op, a.dtype, a.f[prev], a.f[cur]);
          else
            a.i[cur] = combine_int(e.reduce_op, a.dtype, a.i[prev], a.i[cur]);
        }
      }
    return a;
  }

  /// X = (I + A)^-1 for A the strictly lower part of a [C, C] f32 tile, by forward
  /// substitution as the GPU does it: X[i][j] = -sum_{k=j..i-1} A[i][k] X[k][j] (X[j][j] = 1),
  /// an f32 sum in ascending k.
  Value solve_tril(const Expr& e) {
    Value a = eval(*e.a);
    TJ_ICHECK(a.shape.size() == 2 && a.shape[0] == a.shape[1] && a.dtype == DType::F32,
              "solve_tril operand");
    const int64_t c = a.shape[0];
    Value x = a;
    for (int64_t i = 0; i < c; ++i)
      for (int64_t j = 0; j < c; ++j) {
        if (j >= i) {
          x.f[i * c + j] = j == i ? 1.0 : 0.0;
          continue;
        }
        double acc = 0;
        for (int64_t k = j; k < i; ++k)
          acc = round_float(DType::F32,
                            acc + round_float(DType::F32, a.f[i * c + k] * x.f[k * c + j]));
        x.f[i * c + j] = -acc;
      }
    return x;
  }

  const ir::Kernel& k_;
  const std::vector<HostArg>& args_;
  std::array<int64_t, 3> grid_;
  std::array<int64_t, 3> pid_ = {0, 0, 0};
  std::vector<Value> vars_;
  std::vector<bool> defined_;
  /// The first out-of-range subscript of a speculative load in the statement being executed.
  std::optional<std::pair<dsl::SourceLoc, std::string>> speculative_error_;
  /// Variables holding such a load's value: reading one reports the error (loc, message).
  std::map<int, std::pair<dsl::SourceLoc, std::string>> pending_error_;
};

/// Checks the arguments against the kernel's parameters (errors name the parameter and kernel)
/// and fills in dense strides where the caller left them empty.
std::vector<HostArg> checked_args(const ir::Kernel& k, const std::vector<HostArg>& args) {
  if (args.size() != k.params.size())
    throw Error(str("kernel '", k.name, "' takes ", k.params.size(),
                    " arguments (scratch tensors included), got ", args.size()));
  std::vector<HostArg> out = args;
  for (size_t i = 0; i < k.params.size(); ++i) {
    const ir::Param& p = k.params[i];
    HostArg& a = out[i];
    if (p.is_tensor != a.is_tensor)
      throw Error(str("kernel '", k.name, "': '", p.name, "' must be a ",
                      p.is_tensor ? "tensor" : "scalar"));
    if (!a.is_tensor) continue;
    HostTensor& t = a.tensor;
    if (t.dtype != p.dtype)
      throw Error(str("kernel '", k.name, "': tensor '", p.name, "' must be ", dtype_name(p.dtype),
                      ", got ", dtype_name(t.dtype), shape_text(t.shape)));
    if (static_cast<int>(t.shape.size()) != p.rank())
      throw Error(str("kernel '", k.name, "': tensor '", p.name, "' must have rank ", p.rank(),
                      ", got shape ", shape_text(t.shape)));
    if (t.strides.empty()) t.strides = dense_strides(t.shape);
    if (t.strides.size() != t.shape.size())
      throw Error(str("kernel '", k.name, "': tensor '", p.name, "' has ", t.strides.size(),
                      " strides for rank ", t.shape.size()));
    for (int d = 0; d < p.rank(); ++d) {
      if (t.shape[d] < 0)
        throw Error(str("kernel '", k.name, "': tensor '", p.name,
                        "' has a negative dimension: ", shape_text(t.shape)));
      if (!p.broadcast_to[d].empty()) continue; // 1|X: below, once every size is known
      if (p.dim_values[d] >= 0 && t.shape[d] != p.dim_values[d])
        throw Error(str("kernel '", k.name, "': tensor '", p.name, "' must have ", p.dim_names[d],
                        " = ", p.dim_values[d], " in dimension ", d, ", got shape ",
                        shape_text(t.shape)));
    }
    if (!t.data && shape_numel(t.shape) > 0)
      throw Error(str("kernel '", k.name, "': tensor '", p.name, "' has no data"));
  }
  // A dimension declared 1|X given size 1 is read as size X with stride 0 (PyTorch's expand).
  for (size_t i = 0; i < k.params.size(); ++i) {
    const ir::Param& p = k.params[i];
    if (!p.is_tensor) continue;
    HostTensor& t = out[i].tensor;
    for (int d = 0; d < p.rank(); ++d) {
      const std::string& to = p.broadcast_to[d];
      if (to.empty()) continue;
      int64_t size = p.dim_values[d];
      for (size_t j = 0; size < 0 && j < k.params.size(); ++j)
        for (int e = 0; size < 0 && e < k.params[j].rank(); ++e)
          if (k.params[j].broadcast_to[e].empty() && k.params[j].dim_names[e] == to &&
              out[j].is_tensor)
            size = out[j].tensor.shape[e];
      TJ_ICHECK(size >= 0, "broadcast size '", to, "' of '", p.name, "' has no value");
      if (t.shape[d] != 1 && t.shape[d] != size)
        throw Error(str("kernel '", k.name, "': tensor '", p.name, "' must have 1 or ", to, " = ",
                        size, " in dimension ", d, ", got shape ", shape_text(t.shape)));
      if (t.shape[d] == 1) {
        t.shape[d] = size;
        t.strides[d] = 0;
      }
    }
  }
  return out;
}

} // namespace

void run_kernel(const ir::Kernel& k, const std::vector<HostArg>& args,
                std::array<int64_t, 3> grid) {
  for (int g = 0; g < 3; ++g)
    if (grid[g] < 0)
      throw Error(str("kernel '", k.name, "': grid extent ", g, " is negative (", grid[g], ")"));
  std::vector<HostArg> checked = checked_args(k, args);
  Interpreter(k, checked, grid).run();
}

} // namespace tilejit::ref
