// Source-to-source reverse mode (reverse_mode.h). The kernel is read as
//   PRE (declarations) ; for t in serial(LO, HI) { BODY } ; POST (declarations and stores)
// or as one straight-line block with no loop. Each block is split into operations on named
// values (adjoint_ops.h), in SSA form where a variable is assigned again, and the derived kernel
// replays them forward and undoes them in reverse.
#include "compiler/autodiff/reverse_mode.h"

#include "compiler/autodiff/adjoint_ops.h"
#include "dsl/ast_printer.h"
#include "dsl/diagnostics.h"
#include "support/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

namespace tilejit::autodiff {

using namespace dsl;

std::string gradient_param_name(const std::string& tensor) {
  return "d_" + tensor;
}

namespace {

bool is_float_dtype(const std::string& d) {
  return d == "f32" || d == "f16" || d == "bf16" || d == "f64";
}

// --- printing with renamed variables ---------------------------------------------------------

using Renames = std::map<std::string, std::string>;

std::string renamed(const std::string& name, const Renames& r) {
  auto it = r.find(name);
  return it == r.end() ? name : it->second;
}

std::string text(const Expr& e, const Renames& r);

std::string index_text(const std::vector<IndexItem>& items, const Renames& r) {
  std::vector<std::string> parts;
  for (const IndexItem& it : items) {
    switch (it.kind) {
    case IndexItem::Kind::Expr:
      parts.push_back(text(*it.expr, r));
      break;
    case IndexItem::Kind::Slice:
      parts.push_back(text(*it.start, r) + " : " + text(*it.stop, r));
      break;
    case IndexItem::Kind::Full:
      parts.push_back(":");
      break;
    case IndexItem::Kind::NewAxis:
      parts.push_back("None");
      break;
    }
  }
  return join(parts, ", ");
}

std::string text(const Expr& e, const Renames& r) {
  switch (e.kind) {
  case ExprKind::Name:
    return renamed(e.name, r);
  case ExprKind::Unary:
    return std::string(unary_op_spelling(e.unary_op)) + text(*e.lhs, r);
  case ExprKind::Binary:
    return "(" + text(*e.lhs, r) + " " + binary_op_spelling(e.binary_op) + " " + text(*e.rhs, r) +
           ")";
  case ExprKind::Call: {
    std::vector<std::string> parts;
    for (const auto& a : e.args) parts.push_back(text(*a, r));
    for (const auto& k : e.kwargs) parts.push_back(k.name + " = " + text(*k.value, r));
    return e.name + (e.type_arg ? "<" + type_to_string(*e.type_arg) + ">" : "") + "(" +
           join(parts, ", ") + ")";
  }
  case ExprKind::Index:
    return text(*e.lhs, r) + "[" + index_text(e.index, r) + "]";
  default:
    return expr_to_string(e); // literals
  }
}

const Expr* kwarg(const Expr& call, const std::string& name) {
  for (const auto& k : call.kwargs)
    if (k.name == name) return k.value.get();
  return nullptr;
}

/// Every name an expression reads.
void names_in(const Expr& e, std::set<std::string>& out) {
  if (e.kind == ExprKind::Name) out.insert(e.name);
  if (e.lhs) names_in(*e.lhs, out);
  if (e.rhs) names_in(*e.rhs, out);
  for (const auto& a : e.args) names_in(*a, out);
  for (const auto& k : e.kwargs) names_in(*k.value, out);
  for (const auto& it : e.index) {
    if (it.expr) names_in(*it.expr, out);
    if (it.start) names_in(*it.start, out);
    if (it.stop) names_in(*it.stop, out);
  }
}

// --- what is differentiated ------------------------------------------------------------------

class Activity {
public:
  explicit Activity(std::set<std::string> wrt) : wrt_(std::move(wrt)) {}

  /// Whether `e`'s value depends on a differentiated input (through the active variables).
  bool active(const Expr& e) const {
    switch (e.kind) {
    case ExprKind::Name:
      return vars_.count(e.name) > 0;
    case ExprKind::Unary:
      return e.unary_op == UnaryOp::Neg && active(*e.lhs);
    case ExprKind::Binary:
      switch (e.binary_op) {
      case BinaryOp::Add:
      case BinaryOp::Sub:
      case BinaryOp::Mul:
      case BinaryOp::Div:
        return active(*e.lhs) || active(*e.rhs);
      case BinaryOp::Mod:
        if (active(*e.lhs) || active(*e.rhs))
          fail_at(e.loc, "cannot differentiate '%' (not supported by reverse mode yet)");
        return false;
      default:
        return false; // comparisons, logic, bits: no gradient flows through them
      }
    case ExprKind::Call: {
      OpKind kind;
      if (op_kind_of_call(e.name, &kind) && kind == OpKind::Load) {
        const Expr* access = e.args.empty() ? nullptr : e.args[0].get();
        return access && access->kind == ExprKind::Index && access->lhs->kind == ExprKind::Name &&
               wrt_.count(access->lhs->name);
      }
      if (e.name == "where")
        return e.args.size() == 3 && (active(*e.args[1]) || active(*e.args[2]));
      if (e.name == "cast")
        return e.type_arg && is_float_dtype(e.type_arg->dtype) && active(*e.args.at(0));
      bool any = false;
      for (const auto& a : e.args) any = any || active(*a);
      if (e.name == "floor" || e.name == "ceil" || !any) return false; // piecewise constant
      if (!op_kind_of_call(e.name, &kind))
        fail_at(e.loc, fmt::format("cannot differentiate '{}' (reverse mode supports elementwise "
                                   "math, where, min, max, clamp, pow, cast, reduce_sum, new "
                                   "axes, load and store)",
                                   e.name));
      return true;
    }
    case ExprKind::Index:
      if (!active(*e.lhs)) return false;
      // New axes (x[:, None]) broadcast: their adjoint sums over them. Any other subscript
      // picks elements, which reverse mode does not do.
      for (const auto& it : e.index)
        if (it.kind != IndexItem::Kind::Full && it.kind != IndexItem::Kind::NewAxis)
          fail_at(e.loc, "cannot differentiate an indexed tile (x[...] of a differentiated "
                         "value); only new axes (x[:, None], x[None, :]) are supported");
      return true;
    default:
      return false;
    }
  }

  void mark(const std::string& var) { vars_.insert(var); }
  bool is_active_var(const std::string& var) const { return vars_.count(var) > 0; }
  bool is_wrt(const std::string& tensor) const { return wrt_.count(tensor) > 0; }

private:
  std::set<std::string> wrt_;
  std::set<std::string> vars_;
};

// --- one block in operation form ---------------------------------------------------------------

/// A straight-line block turned into operations: `code` replays it forward (the SSA names, one
/// temporary per operation, stores left out), `ops` are undone in reverse.
struct Block {
  std::vector<std::string> code;
  std::vector<Op> ops;
};

/// `name` declared with `value`: `frag` for a tile type, `let` where the type is a scalar's or
/// not written (a `let` takes a tile's shape or a scalar's, whichever its value has).
std::string declaration(const std::string& name, const std::string& type,
                        const std::string& value) {
  if (type.empty()) return fmt::format("let {} = {};", name, value);
  const bool tile = type.find('[') != std::string::npos;
  return fmt::format("{} {}: {} = {};", tile ? "frag" : "let", name, type, value);
}

class Flattener {
public:
  Flattener(const Activity& act, Renames& names, int& temps, Block& out)
      : act_(act), names_(names), temps_(temps), out_(out) {}

  /// The operand for `e`; the last operation is named `hint` (declared with `type` when given).
  Operand flatten(const Expr& e, const std::string& hint = "", const std::string& type = "") {
    if (!act_.active(e)) return {text(e, names_), false};
    if (e.kind == ExprKind::Name) return {renamed(e.name, names_), true};
    Op op;
    std::string value;
    if (e.kind == ExprKind::Unary) {
      op.kind = OpKind::Neg;
      op.args = {flatten(*e.lhs)};
      value = "-" + op.args[0].text;
    } else if (e.kind == ExprKind::Binary) {
      static const std::map<BinaryOp, OpKind> kinds = {{BinaryOp::Add, OpKind::Add},
                                                       {BinaryOp::Sub, OpKind::Sub},
                                                       {BinaryOp::Mul, OpKind::Mul},
                                                       {BinaryOp::Div, OpKind::Div}};
      op.kind = kinds.at(e.binary_op);
      op.args = {flatten(*e.lhs), flatten(*e.rhs)};
      value = fmt::format("({} {} {})", op.args[0].text, binary_op_spelling(e.binary_op),
                          op.args[1].text);
    } else if (e.kind == ExprKind::Index) {
      op.kind = OpKind::NewAxes;
      op.args = {flatten(*e.lhs)};
      std::vector<std::string> items;
      for (size_t i = 0; i < e.index.size(); ++i) {
        const bool added = e.index[i].kind == IndexItem::Kind::NewAxis;
        if (added) op.axes.push_back(static_cast<int>(i));
        items.push_back(added ? "None" : ":");
      }
      value = fmt::format("{}[{}]", op.args[0].text, join(items, ", "));
    } else if (e.kind == ExprKind::Call) {
      op_kind_of_call(e.name, &op.kind);
      if (op.kind == OpKind::ReduceSum) {
        op.args = {flatten(*e.args.at(0))};
        if (const Expr* ax = kwarg(e, "axis")) {
          if (ax->kind != ExprKind::IntLit)
            fail_at(ax->loc, "cannot differentiate reduce_sum with an axis that is not a number "
                             "(write axis = 0 or axis = 1)");
          op.axis = static_cast<int>(ax->int_value);
        }
        value = op.axis < 0 ? fmt::format("reduce_sum({})", op.args[0].text)
                            : fmt::format("reduce_sum({}, axis = {})", op.args[0].text, op.axis);
      } else if (op.kind == OpKind::Load) {
        const Expr& access = *e.args[0];
        op.tensor = access.lhs->name;
        op.access = index_text(access.index, names_);
        if (const Expr* m = kwarg(e, "mask")) op.mask = text(*m, names_);
        value = text(e, names_);
      } else {
        for (const auto& a : e.args) op.args.push_back(flatten(*a));
        std::vector<std::string> parts;
        for (const Operand& o : op.args) parts.push_back(o.text);
        value = e.name + (e.type_arg ? "<" + type_to_string(*e.type_arg) + ">" : "") + "(" +
                join(parts, ", ") + ")";
      }
    }
    op.result = hint.empty() ? fmt::format("tmp__{}", ++temps_) : hint;
    out_.code.push_back(declaration(op.result, type, value));
    out_.ops.push_back(std::move(op));
    return {out_.ops.back().result, true};
  }

  /// `store(X[...], v, mask = m)`: an operation whose adjoint reads d_X.
  void store(const Expr& call) {
    const Expr& access = *call.args.at(0);
    Op op;
    op.kind = OpKind::Store;
    op.tensor = access.lhs->name;
    op.access = index_text(access.index, names_);
    if (const Expr* m = kwarg(call, "mask")) op.mask = text(*m, names_);
    op.args = {flatten(*call.args.at(1))};
    out_.ops.push_back(std::move(op));
  }

private:
  const Activity& act_;
  Renames& names_;
  int& temps_;
  Block& out_;
};

bool is_store(const Stmt& s) {
  return s.kind == StmtKind::ExprStmt && s.value->kind == ExprKind::Call &&
         s.value->name == "store" && s.value->args.size() >= 2 &&
         s.value->args[0]->kind == ExprKind::Index && s.value->args[0]->lhs &&
         s.value->args[0]->lhs->kind == ExprKind::Name;
}

ExprPtr clone(const Expr& e);

std::unique_ptr<TypeExpr> clone_type(const TypeExpr& t) {
  auto c = std::make_unique<TypeExpr>();
  c->dtype = t.dtype;
  c->has_dims = t.has_dims;
  c->loc = t.loc;
  for (const auto& d : t.dims) c->dims.push_back(clone(*d));
  return c;
}

ExprPtr clone(const Expr& e) {
  auto c = std::make_unique<Expr>();
  c->kind = e.kind;
  c->loc = e.loc;
  c->int_value = e.int_value;
  c->float_value = e.float_value;
  c->bool_value = e.bool_value;
  c->name = e.name;
  c->unary_op = e.unary_op;
  c->binary_op = e.binary_op;
  if (e.lhs) c->lhs = clone(*e.lhs);
  if (e.rhs) c->rhs = clone(*e.rhs);
  if (e.type_arg) c->type_arg = clone_type(*e.type_arg);
  for (const auto& a : e.args) c->args.push_back(clone(*a));
  for (const auto& k : e.kwargs) c->kwargs.push_back({k.name, clone(*k.value), k.loc});
  for (const auto& it : e.index) {
    IndexItem i;
    i.kind = it.kind;
    i.loc = it.loc;
    if (it.expr) i.expr = clone(*it.expr);
    if (it.start) i.start = clone(*it.start);
    if (it.stop) i.stop = clone(*it.stop);
    c->index.push_back(std::move(i));
  }
  return c;
}

/// `x op= e` as the expression `x op e`.
ExprPtr compound_value(const Stmt& s) {
  auto bin = std::make_unique<Expr>();
  bin->kind = ExprKind::Binary;
  bin->loc = s.loc;
  bin->binary_op = s.assign_op;
  bin->lhs = std::make_unique<Expr>();
  bin->lhs->kind = ExprKind::Name;
  bin->lhs->name = s.name;
  bin->lhs->loc = s.loc;
  bin->rhs = clone(*s.value);
  return bin;
}

// --- the kernel --------------------------------------------------------------------------------

class Deriver {
public:
  Deriver(const Kernel& k, const GradientOptions& o) : k_(k), o_(o) {}

  GradientKernel run() {
    check_kernel();
    choose_wrt();
    split_body();
    group_carried();
    analyse_activity();
    collect_outputs();
    GradientKernel g;
    static const char* const suffix[] = {"_grad", "_grad_fwd", "_grad_lin", "_grad_seg",
                                         "_grad_ck"};
    g.name = o_.name.empty() ? k_.name + suffix[static_cast<int>(o_.form)] : o_.name;
    g.wrt = wrt_;
    g.outputs = outputs_;
    std::vector<std::string> body;
    if (o_.form == GradientForm::whole) {
      body = loop_ ? loop_body() : straight_body();
    } else if (o_.form == GradientForm::segments_checkpointed) {
      // The whole form's walk over checkpoints, SEG apart, read from the training forward's
      // starts (same layout: [program, k, value, lanes]); its tape stays one segment's scratch.
      check_segment_form();
      interval_ = "SEG";
      body = loop_body(/*checkpoints_given=*/true);
    } else {
      check_segment_form();
      segment_ = "k__";
      body = o_.form == GradientForm::segments_forward     ? forward_body()
             : o_.form == GradientForm::segments_linearize ? linearize_body()
                                                           : finish_body();
    }
    g.source = header(g.name) + "{\n" + indent(body, 1) + "}\n";
    return g;
  }

private:
  const Kernel& k_;
  const GradientOptions& o_;
  std::vector<std::string> wrt_, outputs_;
  std::map<std::string, const Param*> params_;
  std::vector<const Stmt*> pre_, post_;
  const Stmt* loop_ = nullptr;
  std::map<std::string, const TypeExpr*> declared_; ///< top-level variables' declared types
  std::vector<std::string> carried_;                ///< PRE variables the loop assigns
  struct StateGroup {
    std::string name;              ///< ck__NAME, tp__NAME
    std::vector<std::string> vars; ///< in their order within a step's row
  };
  std::vector<StateGroup> groups_;
  std::map<std::string, std::pair<size_t, int>> group_of_; ///< var -> (group, place)
  std::optional<Activity> act_;
  int temps_ = 0;
  std::string segment_; ///< the segment form's segment index in tape subscripts ("k__"), or ""
  std::string interval_ = "CK"; ///< steps between checkpoints: CK, or the training forward's SEG
  std::vector<std::string> active_carried_; ///< segment form: the carried values with adjoints

  // -- checks ------------------------------------------------------------------------------------

  void check_kernel() {
    if (!k_.cluster.empty())
      fail_at(k_.cluster_loc, "cannot differentiate a kernel with a cluster clause");
    std::set<std::string> taken;
    for (const auto& p : k_.params) {
      if (p.is_scratch)
        fail_at(p.loc,
                fmt::format("cannot differentiate a kernel with scratch tensors ('{}')", p.name));
      params_[p.name] = &p;
      taken.insert(p.name);
    }
    for (const auto& g : k_.generics) taken.insert(g.name);
    for (const auto& t : k_.tunables) taken.insert(t.name);
    for (const char* own : {"CK"})
      if (taken.count(own))
        fail_at(k_.loc, fmt::format("the derived kernel has a tunable called {}: rename the "
                                    "kernel's own '{}'",
                                    own, own));
    for (const auto& p : k_.params)
      if (p.type.has_dims && taken.count(gradient_param_name(p.name)))
        fail_at(p.loc, fmt::format("the derived kernel names the gradient of '{}' '{}', which is "
                                   "already a name of the kernel",
                                   p.name, gradient_param_name(p.name)));
  }

  /// A floating-point dtype, or a dtype generic whose every choice is one (T: f16|bf16|f32).
  bool float_dtype(const std::string& dtype) const {
    for (const auto& g : k_.generics)
      if (g.name == dtype && g.choice.is_dtype)
        return std::all_of(g.choice.names.begin(), g.choice.names.end(), is_float_dtype);
    return is_float_dtype(dtype);
  }

  void choose_wrt() {
    std::set<std::string> written;
    std::function<void(const std::vector<StmtPtr>&)> scan = [&](const std::vector<StmtPtr>& b) {
      for (const auto& s : b) {
        if (s->kind == StmtKind::ExprStmt && s->value->kind == ExprKind::Call &&
            (s->value->name == "store" || s->value->name == "atomic_add") &&
            !s->value->args.empty() && s->value->args[0]->kind == ExprKind::Index)
          written.insert(s->value->args[0]->lhs->name);
        scan(s->body);
        scan(s->else_body);
      }
    };
    scan(k_.body);
    if (o_.wrt.empty()) {
      for (const auto& p : k_.params)
        if (p.type.has_dims && float_dtype(p.type.dtype) && !written.count(p.name))
          wrt_.push_back(p.name);
    } else {
      for (const std::string& name : o_.wrt) {
        auto it = params_.find(name);
        if (it == params_.end() || !it->second->type.has_dims)
          fail_at(k_.loc, fmt::format("cannot differentiate with respect to '{}': kernel '{}' has "
                                      "no tensor parameter of that name",
                                      name, k_.name));
        if (!float_dtype(it->second->type.dtype))
          fail_at(it->second->loc, fmt::format("cannot differentiate with respect to '{}': its "
                                               "dtype {} is not a floating-point type",
                                               name, it->second->type.dtype));
        if (written.count(name))
          fail_at(it->second->loc, fmt::format("cannot differentiate with respect to '{}': the "
                                               "kernel writes it",
                                               name));
        wrt_.push_back(name);
      }
    }
    if (wrt_.empty())
      fail_at(k_.loc,
              fmt::format("kernel '{}' reads no floating-point tensor to differentiate", k_.name));
  }

  void check_names(const Stmt& s) {
    auto bad = [&](const std::string& n) {
      if (n.find("__") != std::string::npos)
        fail_at(s.loc, fmt::format("names with '__' are the derived kernel's: rename '{}'", n));
    };
    if (!s.name.empty()) bad(s.name);
  }

  /// The body as PRE, one serial loop, POST (or one straight-line block).
  void split_body() {
    for (const auto& sp : k_.body) {
      const Stmt& s = *sp;
      check_names(s);
      switch (s.kind) {
      case StmtKind::For:
        if (loop_) fail_at(s.loc, "cannot differentiate a kernel with more than one loop yet");
        if (s.range_kind == "pipelined")
          fail_at(s.loc, "cannot differentiate a pipelined loop: write `serial` (the derived "
                         "kernel pipelines nothing)");
        if (s.range_args.size() != 2)
          fail_at(s.range_loc, "a differentiated loop runs with step 1: serial(LO, HI)");
        loop_ = &s;
        for (const auto& b : s.body) {
          check_names(*b);
          if (b->kind == StmtKind::For || b->kind == StmtKind::If || b->kind == StmtKind::Return ||
              b->kind == StmtKind::Block ||
              (b->kind == StmtKind::Let && b->let_kind == LetKind::Shared))
            fail_at(b->loc, "a differentiated loop's body holds declarations, assignments and "
                            "stores only (no loops, ifs, blocks, returns or shared tiles)");
          check_call_statement(*b);
        }
        break;
      case StmtKind::Let:
        if (s.let_kind == LetKind::Shared)
          fail_at(s.loc, "cannot differentiate a kernel with shared tiles");
        if (s.type) declared_[s.name] = s.type.get();
        (loop_ ? post_ : pre_).push_back(&s);
        break;
      case StmtKind::Assign:
        if (loop_)
          fail_at(s.loc, "after the loop, a differentiated kernel declares and stores only");
        pre_.push_back(&s);
        break;
      case StmtKind::ExprStmt:
        check_call_statement(s);
        (loop_ ? post_ : pre_).push_back(&s);
        break;
      default:
        fail_at(s.loc, "a differentiated kernel holds declarations, assignments, stores and one "
                       "serial loop (no ifs, blocks or returns)");
      }
    }
    if (!loop_) return;
    // PRE only declares (its values are read by every step: they cannot change meanwhile).
    std::set<std::string> assigned;
    for (const auto& b : loop_->body)
      if (b->kind == StmtKind::Assign) assigned.insert(b->name);
    std::set<std::string> pre_names;
    for (const Stmt* s : pre_) {
      if (s->kind == StmtKind::Assign)
        fail_at(s->loc, "before a differentiated loop, declare each value once (no assignments)");
      if (is_store(*s)) fail_at(s->loc, "store after the loop, or in it, not before it");
      if (s->kind == StmtKind::Let) pre_names.insert(s->name);
    }
    for (const std::string& v : assigned) {
      if (!pre_names.count(v)) continue; // a body-local variable assigned again
      carried_.push_back(v);
      auto it = declared_.find(v);
      if (it == declared_.end())
        fail_at(loop_->loc, fmt::format("the loop carries '{}': declare it with its type "
                                        "(frag {}: f32[...] = ...) so it can be checkpointed",
                                        v, v));
    }
    // A carried value is read before the loop only where it is declared.
    for (const Stmt* s : pre_) {
      std::set<std::string> read;
      if (s->value) names_in(*s->value, read);
      for (const std::string& v : carried_)
        if (read.count(v))
          fail_at(s->loc, fmt::format("'{}' is carried by the loop: read it in the loop or after "
                                      "it, not before",
                                      v));
    }
    for (const Stmt* s : post_)
      if (s->kind == StmtKind::Assign)
        fail_at(s->loc, "after the loop, a differentiated kernel declares and stores only");
  }

  void check_call_statement(const Stmt& s) {
    if (s.kind != StmtKind::ExprStmt) return;
    const Expr& c = *s.value;
    if (c.kind == ExprKind::Call && c.name == "atomic_add")
      fail_at(s.loc, "cannot differentiate atomic_add (its result depends on the order of the "
                     "programs)");
  }

  void analyse_activity() {
    std::set<std::string> wrt(wrt_.begin(), wrt_.end());
    act_.emplace(wrt);
    auto visit = [&](const Stmt& s) {
      if ((s.kind == StmtKind::Let || s.kind == StmtKind::Assign) && act_->active(*s.value))
        act_->mark(s.name);
    };
    for (const Stmt* s : pre_) visit(*s);
    if (loop_) {
      // Loop-carried values: active once any step's assignment is, so iterate to a fixpoint.
      for (size_t round = 0; round <= loop_->body.size() + 1; ++round)
        for (const auto& b : loop_->body) visit(*b);
    }
    for (const Stmt* s : post_) visit(*s);
  }

  void collect_outputs() {
    std::set<std::string> seen;
    auto visit = [&](const Stmt& s) {
      if (!is_store(s)) return;
      const std::string& t = s.value->args.at(0)->lhs->name;
      if (act_->is_wrt(t)) fail_at(s.loc, fmt::format("'{}' is read and written", t));
      if (act_->active(*s.value->args.at(1)) && seen.insert(t).second) outputs_.push_back(t);
    };
    for (const Stmt* s : pre_) visit(*s);
    if (loop_)
      for (const auto& b : loop_->body) visit(*b);
    for (const Stmt* s : post_) visit(*s);
    if (outputs_.empty())
      fail_at(k_.loc, fmt::format("nothing to differentiate: no stored value of kernel '{}' "
                                  "depends on {}",
                                  k_.name, join(wrt_, ", ")));
  }

  // -- text ---------------------------------------------------------------------------------------

  static std::string choice_text(const Choice& c) {
    std::vector<std::string> parts;
    if (c.is_dtype)
      parts = c.names;
    else
      for (int64_t v : c.ints) parts.push_back(std::to_string(v));
    std::string s = join(parts, "|");
    if (c.has_default) s += " = " + (c.is_dtype ? c.default_name : std::to_string(c.default_int));
    return s;
  }

  static std::string exprs_text(const std::vector<ExprPtr>& v) {
    std::vector<std::string> parts;
    for (const auto& e : v) parts.push_back(expr_to_string(*e));
    return join(parts, ", ");
  }

  static std::string indent(const std::vector<std::string>& lines, int level) {
    std::string out;
    int depth = level;
    for (const std::string& l : lines) {
      if (!l.empty() && l[0] == '}') --depth;
      out += std::string(2 * depth, ' ') + l + "\n";
      if (!l.empty() && l.back() == '{') ++depth;
    }
    return out;
  }

  std::string header(const std::string& name) const {
    static const char* const what[] = {
        "",
        "the segment form's forward:\n// the kernel as written, the carried state stored at "
        "each segment's start, for its kernels that\n// ",
        "the segment form's first kernel:\n// each segment's affine map of the carried values' "
        "adjoints, toward ",
        "the segment form's second kernel:\n// each segment undone with its maps, toward ",
        "the checkpointed reverse on the training\n// forward's segment starts (no forward "
        "pass of its own); it"};
    std::string s = fmt::format(
        "// Derived by tilejit's reverse mode from kernel '{}' ({}): {}{} "
        "the gradients of\n// sum({}) into {}.\n",
        k_.name, k_.loc.path(), what[static_cast<int>(o_.form)],
        o_.form == GradientForm::segments_forward ? "add" : "adds",
        [&] {
          std::vector<std::string> terms;
          for (const auto& o : outputs_) terms.push_back(gradient_param_name(o) + " * " + o);
          return join(terms, " + ");
        }(),
        [&] {
          std::vector<std::string> d;
          for (const auto& w : wrt_) d.push_back(gradient_param_name(w));
          return join(d, ", ");
        }());
    s += "kernel " + name;
    const bool segments = o_.form != GradientForm::whole;
    std::vector<std::string> generics;
    for (const auto& gp : k_.generics) generics.push_back(gp.name + ": " + choice_text(gp.choice));
    // The segment form's two kernels share their tapes' layout, so the forward's tunables are
    // generics there (the caller gives both kernels the same values), and so is SEG.
    if (segments) {
      for (const auto& t : k_.tunables) generics.push_back(t.name + ": " + choice_text(t.choice));
      generics.push_back("SEG: 8|16|32|64|128|256|512|1024 = 64");
    }
    if (!generics.empty()) s += "<" + join(generics, ", ") + ">";
    std::vector<std::string> params;
    for (const auto& p : k_.params) params.push_back(p.name + ": " + type_to_string(p.type));
    const bool forward = o_.form == GradientForm::segments_forward;
    if (!forward)
      for (const std::string& o : outputs_)
        params.push_back(gradient_param_name(o) + ": " + type_to_string(params_.at(o)->type));
    if (o_.form == GradientForm::whole || o_.form == GradientForm::segments_finish ||
        o_.form == GradientForm::segments_checkpointed)
      for (const std::string& w : wrt_) {
        std::string t = type_to_string(params_.at(w)->type);
        params.push_back(gradient_param_name(w) + ": f32" + t.substr(t.find('[')));
      }
    if (segments) {
      // The caller's tensors passed from the first kernel to the second: the tape (the state
      // before every step of every segment) and each segment's affine map per lane.
      const TypeExpr& t = *declared_.at(carried_[0]);
      std::vector<std::string> lead;
      for (size_t i = 0; i < k_.grid.size(); ++i) lead.push_back(fmt::format("NP{}__", i));
      lead.push_back("NS__");
      std::vector<std::string> start = lead, tape = lead, map = lead;
      start.push_back(std::to_string(carried_.size()));
      tape.push_back("SEG");
      tape.push_back(std::to_string(carried_.size()));
      const size_t na = active_carried_.size();
      map.push_back(std::to_string(na * (na + 1)));
      for (const auto& d : t.dims) {
        start.push_back(expr_to_string(*d));
        tape.push_back(expr_to_string(*d));
        map.push_back(expr_to_string(*d));
      }
      if (o_.form != GradientForm::segments_finish)
        params.push_back(
            fmt::format("ck__{}: {}[{}]", groups_[0].name, t.dtype, join(start, ", ")));
      if (o_.form == GradientForm::segments_checkpointed) {
        // One segment's tape per program, as the whole form's.
        std::vector<std::string> own = grid_dims();
        own.push_back("SEG");
        own.push_back(std::to_string(carried_.size()));
        for (const auto& d : t.dims) own.push_back(expr_to_string(*d));
        params.push_back(
            fmt::format("scratch tp__{}: {}[{}]", groups_[0].name, t.dtype, join(own, ", ")));
      } else if (!forward) {
        params.push_back(fmt::format("tp__{}: {}[{}]", groups_[0].name, t.dtype, join(tape, ", ")));
        params.push_back(fmt::format("ln__{}: {}[{}]", groups_[0].name, t.dtype, join(map, ", ")));
      }
    }
    if (loop_ && !segments) {
      // One checkpoint and one tape tensor per type of carried value, the values side by side
      // in each step's row: one base address and one index per step for all of them (a tensor
      // per value cost hbv's derived backward, then carrying 8, ~60 address instructions a step).
      const std::string steps = fmt::format("cdiv({} - {}, CK)", hi(), lo());
      for (const StateGroup& g : groups_) {
        const TypeExpr& t = *declared_.at(g.vars[0]);
        std::vector<std::string> dims = grid_dims();
        std::vector<std::string> tape = grid_dims();
        dims.push_back(steps);
        tape.push_back("CK");
        dims.push_back(std::to_string(g.vars.size()));
        tape.push_back(std::to_string(g.vars.size()));
        for (const auto& d : t.dims) {
          dims.push_back(expr_to_string(*d));
          tape.push_back(expr_to_string(*d));
        }
        params.push_back(fmt::format("scratch ck__{}: {}[{}]", g.name, t.dtype, join(dims, ", ")));
        params.push_back(fmt::format("scratch tp__{}: {}[{}]", g.name, t.dtype, join(tape, ", ")));
      }
    }
    s += "(\n    " + join(params, ",\n    ") + ")\n";
    std::vector<std::string> tunes;
    if (!segments)
      for (const auto& t : k_.tunables) tunes.push_back(t.name + ": " + choice_text(t.choice));
    // 64 by default: hbv's derived backward on the H100 (2026-11-25, column streams in place)
    // took 2.09 / 2.32 ms at B = 1024 / 16384 with CK 64 against 2.26 / 2.43 with 32: fewer
    // segments, each starting its loops' windows with a copy nothing prefetched.
    if (loop_ && !segments) tunes.push_back("CK: 4|8|16|32|64|128|256 = 64");
    if (!tunes.empty()) s += "  tune " + join(tunes, ", ") + "\n";
    if (!k_.where.empty()) s += "  where " + exprs_text(k_.where) + "\n";
    std::vector<std::string> require;
    for (const auto& r : k_.require) require.push_back(expr_to_string(*r));
    if (segments) {
      for (size_t i = 0; i < k_.grid.size(); ++i)
        require.push_back(fmt::format("NP{}__ == {}", i, expr_to_string(*k_.grid[i])));
      require.push_back("NS__ == " + segment_count());
    }
    if (!require.empty()) s += "  require " + join(require, ", ") + "\n";
    if (segments && o_.form != GradientForm::segments_forward &&
        o_.form != GradientForm::segments_checkpointed)
      s += "  grid (" + exprs_text(k_.grid) + ", " + segment_count() + ")\n";
    else if (!k_.grid.empty())
      s += "  grid (" + exprs_text(k_.grid) + ")\n";
    if (k_.threads) s += "  threads " + expr_to_string(*k_.threads) + "\n";
    return s;
  }

  std::vector<std::string> grid_dims() const {
    std::vector<std::string> d;
    for (const auto& g : k_.grid) d.push_back(expr_to_string(*g));
    if (d.empty()) d.push_back("1");
    return d;
  }
  std::string program_index() const {
    std::vector<std::string> p;
    for (size_t i = 0; i < std::max<size_t>(k_.grid.size(), 1); ++i)
      p.push_back(k_.grid.empty() ? "0" : fmt::format("program_id({})", i));
    return join(p, ", ");
  }
  std::string segment_count() const { return fmt::format("cdiv({} - {}, SEG)", hi(), lo()); }
  std::string lo() const { return expr_to_string(*loop_->range_args[0]); }
  std::string hi() const { return expr_to_string(*loop_->range_args[1]); }

  /// `ck__G` / `tp__G`: the checkpoint and tape tensors of carried value `v`'s type.
  std::string ck(const std::string& v) const {
    return "ck__" + groups_[group_of_.at(v).first].name;
  }
  std::string tp(const std::string& v) const {
    return "tp__" + groups_[group_of_.at(v).first].name;
  }

  /// `[pid..., i, j, 0 : d0, 0 : d1...]` for a carried variable's step `i` (j: its place among
  /// the values of its type).
  std::string slot(const std::string& v, const std::string& i) const {
    std::vector<std::string> parts = {program_index(), i, std::to_string(group_of_.at(v).second)};
    if (!segment_.empty()) parts.insert(parts.begin() + 1, segment_);
    for (const auto& d : declared_.at(v)->dims) parts.push_back("0 : " + expr_to_string(*d));
    return "[" + join(parts, ", ") + "]";
  }

  /// The carried values grouped by type (dtype and dims as written), in order of appearance;
  /// each group is named by its dtype, with a number when two groups share one.
  void group_carried() {
    std::map<std::string, size_t> by_type;
    std::map<std::string, int> dtype_uses;
    for (const std::string& v : carried_) {
      const std::string type = type_to_string(*declared_.at(v));
      auto [it, added] = by_type.emplace(type, groups_.size());
      if (added) {
        const std::string dtype = declared_.at(v)->dtype;
        const int n = ++dtype_uses[dtype];
        groups_.push_back({n == 1 ? dtype : fmt::format("{}_{}", dtype, n), {}});
      }
      group_of_[v] = {it->second, static_cast<int>(groups_[it->second].vars.size())};
      groups_[it->second].vars.push_back(v);
    }
  }

  std::string source_note(const Stmt& s) const { return fmt::format("// line {}", s.loc.line); }

  /// The statement as written (stores left out: the derived kernel writes only gradients,
  /// unless `stores`).
  std::vector<std::string> replay(const Stmt& s, bool stores = false) const {
    if (is_store(s) && !stores) return {};
    const Renames none;
    switch (s.kind) {
    case StmtKind::Let: {
      const char* kw = s.let_kind == LetKind::Let ? "let" : "frag";
      return {fmt::format("{} {}{} = {};", kw, s.name,
                          s.type ? ": " + type_to_string(*s.type) : std::string(),
                          text(*s.value, none))};
    }
    case StmtKind::Assign:
      return {fmt::format("{} {}= {};", s.name, s.compound ? binary_op_spelling(s.assign_op) : "",
                          text(*s.value, none))};
    case StmtKind::ExprStmt:
      return {text(*s.value, none) + ";"};
    default:
      return {};
    }
  }

  /// A block of statements in operation form, variables renamed per assignment (SSA). `names`
  /// holds each variable's current name (in: at the block's start; out: at its end).
  Block flatten(const std::vector<const Stmt*>& stmts, Renames& names,
                std::map<std::string, int>& versions) {
    Block b;
    Flattener f(*act_, names, temps_, b);
    for (const Stmt* s : stmts) {
      b.code.push_back(source_note(*s));
      if (is_store(*s)) {
        if (act_->active(*s->value->args.at(1))) f.store(*s->value);
        continue;
      }
      if (s->kind == StmtKind::ExprStmt) {
        b.code.push_back(text(*s->value, names) + ";");
        continue;
      }
      // The value, read with the names before this statement.
      const Expr* value = s->value.get();
      ExprPtr compound;
      if (s->kind == StmtKind::Assign && s->compound) {
        compound = compound_value(*s);
        value = compound.get();
      }
      std::string name = s->name;
      if (versions.count(s->name) || names.count(s->name))
        name = fmt::format("{}__{}", s->name, ++versions[s->name]);
      else
        versions[s->name] = 0;
      auto typed = declared_.find(s->name);
      std::string type = typed != declared_.end() ? type_to_string(*typed->second) : "";
      if (s->kind == StmtKind::Let && s->type) type = type_to_string(*s->type);
      const bool is_let = s->kind == StmtKind::Let && s->let_kind == LetKind::Let;
      if (act_->active(*value)) {
        Operand o = f.flatten(*value, name, type);
        if (o.text != name) { // a bare name: copy it
          b.code.push_back(declaration(name, type, o.text));
          Op copy;
          copy.kind = OpKind::Copy;
          copy.result = name;
          copy.args = {o};
          b.ops.push_back(copy);
        }
      } else {
        b.code.push_back(fmt::format("{} {}{} = {};", is_let ? "let" : "frag", name,
                                     type.empty() ? "" : ": " + type, text(*value, names)));
      }
      names[s->name] = name;
    }
    return b;
  }

  /// Which adjoints a reverse pass takes: all of them; or, for the segment form's linear maps,
  /// no gradients written (loads' adjoints left out), with the loss (`loss`) or without it
  /// (`unit`: stores' adjoints left out too, the part linear in the state's adjoint).
  enum class Seed { all, loss, unit };

  /// Emits the adjoints of `b`'s operations in reverse order.
  static void undo(const Block& b, Adjoints& adj, std::vector<std::string>& out,
                   Seed seed = Seed::all) {
    for (auto it = b.ops.rbegin(); it != b.ops.rend(); ++it) {
      if (seed != Seed::all && it->kind == OpKind::Load) continue;
      if (seed == Seed::unit && it->kind == OpKind::Store) continue;
      emit_adjoint(*it, adj, out);
    }
  }

  /// A zero of `v`'s shape and dtype (v - v where v is finite: inf - inf would be NaN).
  std::string zero_like(const std::string& v) const {
    return fmt::format("where(abs({}) < inf, {} - {}, 0.0)", v, v, v);
  }

  /// Adjoints keep f64 values in f64; every other float is accumulated in f32.
  static std::string adjoint_dtype(const TypeExpr& t) { return t.dtype == "f64" ? "f64" : "f32"; }

  // -- a kernel with no loop ------------------------------------------------------------------

  std::vector<std::string> straight_body() {
    Renames names;
    std::map<std::string, int> versions;
    Block b = flatten(pre_, names, versions);
    std::vector<std::string> out = {"// the forward, one operation per line"};
    out.insert(out.end(), b.code.begin(), b.code.end());
    out.push_back("// the adjoints, in reverse");
    Adjoints adj;
    undo(b, adj, out);
    return out;
  }

  // -- a kernel with one loop -----------------------------------------------------------------

  /// The step's operations with the state before it named v__0 and the loop variable read as
  /// `t_name`: the same SSA names on every call (the temporaries are numbered from `temps`).
  Block step_block(const std::string& t_name, int temps, Renames* names_out = nullptr) {
    Renames names;
    std::map<std::string, int> versions;
    for (const std::string& v : carried_) {
      names[v] = v + "__0";
      versions[v] = 0;
    }
    if (t_name != loop_->name) names[loop_->name] = t_name;
    temps_ = temps;
    std::vector<const Stmt*> body;
    for (const auto& s : loop_->body) body.push_back(s.get());
    Block b = flatten(body, names, versions);
    if (names_out) *names_out = names;
    return b;
  }

  /// The adjoints of one step (its values already computed), then the carried adjoints moved
  /// to the state before it.
  /// (A seed other than `all` adds nothing into the accumulators of the values before the loop:
  /// their adjoints are the step's own, and dead.) `prefix` names this set of adjoints.
  std::vector<std::string> step_adjoints(const Block& pre, const Block& step, const Renames& names,
                                         Seed seed = Seed::all, const std::string& prefix = "d__") {
    Adjoints adj(prefix);
    if (seed == Seed::all)
      for (const Op& op : pre.ops)
        if (!op.result.empty()) adj.set_outer(op.result, "d__" + op.result);
    for (const std::string& v : carried_)
      if (act_->is_active_var(v)) adj.set_outer(names.at(v), prefix + v);
    std::vector<std::string> rev;
    undo(step, adj, rev, seed);
    for (const std::string& v : carried_) {
      if (!act_->is_active_var(v)) continue;
      const std::string v0 = v + "__0";
      rev.push_back(adj.has(v0) ? fmt::format("{}{} = {};", prefix, v, adj.of(v0))
                                : fmt::format("{}{} = {};", prefix, v, zero_like(prefix + v)));
    }
    return rev;
  }

  /// `frag nx__v: T = load(tape row `row`)` for every carried value: the state before the first
  /// step a segment undoes, read before its loop.
  std::vector<std::string> first_taped_state(const std::string& row) const {
    std::vector<std::string> out;
    for (const std::string& v : carried_)
      out.push_back(fmt::format("frag nx__{}: {} = load({}{});", v,
                                type_to_string(*declared_.at(v)), tp(v), slot(v, row)));
    return out;
  }

  /// Undoes step `t` of the segment [s0__, s1__): its state is the one read an iteration
  /// earlier (nx__), the state before it is read now, then its values are recomputed and its
  /// adjoints taken.
  /// `seeds`: the sets of adjoints taken through the step, each (prefix, which); one by default.
  using Seeds = std::vector<std::pair<std::string, Seed>>;
  std::vector<std::string> undo_step(const Block& pre, const std::string& t,
                                     const Seeds& seeds = {{"d__", Seed::all}}) {
    std::vector<std::string> out;
    for (const std::string& v : carried_) {
      out.push_back(
          fmt::format("frag {}__0: {} = nx__{};", v, type_to_string(*declared_.at(v)), v));
      out.push_back(fmt::format("nx__{} = load({}{});", v, tp(v),
                                slot(v, fmt::format("max({} - 1 - s0__, 0)", t))));
    }
    Renames names;
    Block step = step_block(t, temps_, &names);
    out.insert(out.end(), step.code.begin(), step.code.end());
    for (const auto& [prefix, seed] : seeds) {
      const std::vector<std::string> rev = step_adjoints(pre, step, names, seed, prefix);
      out.insert(out.end(), rev.begin(), rev.end());
    }
    return out;
  }

  /// The forward's step `t` (the loop's own variable name) with the state before it taped in
  /// row `row`.
  std::vector<std::string> taped_step(const std::vector<std::string>& body_replay,
                                      const std::string& row) const {
    std::vector<std::string> out;
    for (const std::string& v : carried_)
      out.push_back(fmt::format("store({}{}, {});", tp(v), slot(v, row), v));
    out.insert(out.end(), body_replay.begin(), body_replay.end());
    return out;
  }

  /// Per segment, last first: recompute it from its checkpoint (taping the state before each
  /// step), then undo its steps. (Undoing segment k while k - 1 is recomputed in the same loop,
  /// two chains for the scheduler to interleave, was measured on the H100 on 2026-11-25: never
  /// faster, 8-11% slower at B = 16384, so it is not kept.)
  void undo_segments(const Block& pre, const std::vector<std::string>& body_replay,
                     std::vector<std::string>& out) {
    const std::string L = lo(), H = hi(), t = loop_->name;
    out.push_back("for kk__ in serial(0, nck__) {");
    out.push_back("let k__ = nck__ - 1 - kk__;");
    out.push_back(fmt::format("let s0__ = {} + k__ * {};", L, interval_));
    out.push_back(fmt::format("let s1__ = min(s0__ + {}, {});", interval_, H));
    for (const std::string& v : carried_)
      out.push_back(fmt::format("{} = load({}{});", v, ck(v), slot(v, "k__")));
    out.push_back("// recompute the segment, taping the state before each step");
    out.push_back(fmt::format("for {} in serial(s0__, s1__) {{", t));
    const std::vector<std::string> taped = taped_step(body_replay, t + " - s0__");
    out.insert(out.end(), taped.begin(), taped.end());
    out.push_back("}");
    out.push_back("// undo its steps, last first; each step's taped state is read a step ahead");
    const std::vector<std::string> first = first_taped_state("s1__ - 1 - s0__");
    out.insert(out.end(), first.begin(), first.end());
    out.push_back("for tt__ in serial(0, s1__ - s0__) {");
    out.push_back(fmt::format("let {} = s1__ - 1 - tt__;", t));
    const std::vector<std::string> undo = undo_step(pre, t);
    out.insert(out.end(), undo.begin(), undo.end());
    out.push_back("}");
    out.push_back("}");
  }

  /// Accumulators: the adjoint of every differentiated value before the loop, added to by
  /// every step (carried values: the adjoint of the state after the current step), set as
  /// `top`'s outer adjoints.
  std::vector<std::string> accumulators(const Block& pre, Adjoints& top) const {
    std::vector<std::string> out;
    auto accumulate = [&](const std::string& v, const TypeExpr* type) {
      const std::string a = "d__" + v;
      if (type && type->has_dims) {
        std::vector<std::string> dims;
        for (const auto& d : type->dims) dims.push_back(expr_to_string(*d));
        out.push_back(
            fmt::format("frag {}: {}[{}] = 0;", a, adjoint_dtype(*type), join(dims, ", ")));
      } else if (type) {
        out.push_back(fmt::format("let {}: {} = 0.0;", a, adjoint_dtype(*type)));
      } else {
        out.push_back(fmt::format("let {} = {};", a, zero_like(v))); // a scalar's or a tile's
      }
      top.set_outer(v, a);
    };
    for (const Op& op : pre.ops)
      if (!op.result.empty()) {
        auto it = declared_.find(op.result);
        accumulate(op.result, it == declared_.end() ? nullptr : it->second);
      }
    for (const std::string& v : carried_)
      if (act_->is_active_var(v) && !top.has(v)) accumulate(v, declared_.at(v));
    return out;
  }

  /// `checkpoints_given`: the training forward stored them (segments_checkpointed), so the
  /// forward pass that stores them here is left out.
  std::vector<std::string> loop_body(bool checkpoints_given = false) {
    std::vector<std::string> out;
    const std::string L = lo(), H = hi(), t = loop_->name;
    // Before the loop: as written (no assignments there), one operation per line.
    Renames pre_names;
    std::map<std::string, int> pre_versions;
    Block pre = flatten(pre_, pre_names, pre_versions);
    out.push_back("// before the loop");
    out.insert(out.end(), pre.code.begin(), pre.code.end());
    Adjoints top;
    out.push_back("// their adjoints, added to by every step");
    const std::vector<std::string> acc = accumulators(pre, top);
    out.insert(out.end(), acc.begin(), acc.end());
    std::vector<std::string> body_replay;
    for (const auto& s : loop_->body) {
      std::vector<std::string> r = replay(*s);
      if (!r.empty()) body_replay.push_back(source_note(*s));
      body_replay.insert(body_replay.end(), r.begin(), r.end());
    }
    out.push_back(fmt::format("let nck__ = cdiv({} - {}, {});", H, L, interval_));
    if (checkpoints_given) {
      out.push_back("// 1. the checkpoints: the training forward's segment starts (ck__)");
    } else {
      // 1. The forward, the carried state stored every CK steps.
      out.push_back("// 1. the forward, the carried state stored every CK steps");
      out.push_back(fmt::format("for {} in serial({}, {}) {{", t, L, H));
      out.push_back(fmt::format("if ({} - {}) % CK == 0 {{", t, L));
      for (const std::string& v : carried_)
        out.push_back(fmt::format("store({}{}, {});", ck(v),
                                  slot(v, fmt::format("({} - {}) / CK", t, L)), v));
      out.push_back("}");
      out.insert(out.end(), body_replay.begin(), body_replay.end());
      out.push_back("}");
    }
    // After the loop: forward, then its adjoints (the stores' weights reach the final state).
    Renames post_names;
    std::map<std::string, int> post_versions;
    Block post = flatten(post_, post_names, post_versions);
    if (!post_.empty()) {
      out.push_back("// after the loop, and its adjoints");
      out.insert(out.end(), post.code.begin(), post.code.end());
      undo(post, top, out);
    }
    // 2. The segments backwards.
    out.push_back("// 2. the segments between checkpoints, last first");
    undo_segments(pre, body_replay, out);
    // Before the loop, undone last.
    out.push_back("// before the loop, undone");
    undo(pre, top, out);
    return out;
  }

  // -- the segment form (reverse_mode.h: GradientForm) -----------------------------------------

  /// What the segment form asks of the kernel, each refusal saying why.
  void check_segment_form() {
    if (!loop_)
      fail_at(k_.loc, "the segment form differentiates a kernel with a serial loop; this one has "
                      "none (derive the whole gradient)");
    if (k_.grid.empty() || k_.grid.size() > 2)
      fail_at(k_.grid_loc, "the segment form adds a grid axis for the segments: the kernel's grid "
                           "may have 1 or 2 axes");
    for (const std::string& v : carried_) {
      const TypeExpr& t = *declared_.at(v);
      if ((t.dtype != "f32" && t.dtype != "f64") || !t.has_dims || t.dims.empty())
        fail_at(loop_->loc, fmt::format("the segment form carries f32 or f64 tiles of "
                                        "independent lanes; '{}' is {}",
                                        v, type_to_string(t)));
      if (type_to_string(t) != type_to_string(*declared_.at(carried_[0])))
        fail_at(loop_->loc, fmt::format("the segment form carries values of one type; '{}' is {} "
                                        "and '{}' {}",
                                        carried_[0], type_to_string(*declared_.at(carried_[0])), v,
                                        type_to_string(t)));
      for (const auto& d : t.dims)
        if (d->kind != ExprKind::Name && d->kind != ExprKind::IntLit)
          fail_at(d->loc, "the segment form's tapes take the carried tiles' dims as tensor dims: "
                          "write each as a generic, tunable or integer");
      if (act_->is_active_var(v)) active_carried_.push_back(v);
    }
    if (carried_.empty() || active_carried_.empty())
      fail_at(loop_->loc, "the segment form needs a loop that carries a differentiated value");
    Renames names;
    std::map<std::string, int> versions;
    if (!flatten(post_, names, versions).ops.empty())
      fail_at(post_.front()->loc, "the segment form needs every output stored in the loop, not "
                                  "after it");
  }

  /// `ck__G[program, k, j, 0 : dims]`: carried value `v`'s state at the start of segment `k`.
  std::string start_slot(const std::string& v, const std::string& k) const {
    std::vector<std::string> parts = {program_index(), k, std::to_string(group_of_.at(v).second)};
    for (const auto& d : declared_.at(v)->dims) parts.push_back("0 : " + expr_to_string(*d));
    return "ck__" + groups_[0].name + "[" + join(parts, ", ") + "]";
  }

  std::vector<std::string> replayed(const std::vector<const Stmt*>& stmts, bool stores) const {
    std::vector<std::string> out;
    for (const Stmt* s : stmts) {
      std::vector<std::string> r = replay(*s, stores);
      if (!r.empty()) out.push_back(source_note(*s));
      out.insert(out.end(), r.begin(), r.end());
    }
    return out;
  }
  std::vector<std::string> replayed_body(bool stores = false) const {
    std::vector<const Stmt*> body;
    for (const auto& s : loop_->body) body.push_back(s.get());
    return replayed(body, stores);
  }

  /// `<kernel>_grad_fwd`: the kernel as written, the carried state stored every SEG steps.
  std::vector<std::string> forward_body() const {
    std::vector<std::string> out = {"// before the loop"};
    const std::vector<std::string> pre = replayed(pre_, true);
    out.insert(out.end(), pre.begin(), pre.end());
    const std::string t = loop_->name;
    out.push_back("// the loop, the state stored at the start of every segment");
    out.push_back(fmt::format("for {} in serial({}, {}) {{", t, lo(), hi()));
    out.push_back(fmt::format("if ({} - {}) % SEG == 0 {{", t, lo()));
    for (const std::string& v : carried_)
      out.push_back(
          fmt::format("store({}, {});", start_slot(v, fmt::format("({} - {}) / SEG", t, lo())), v));
    out.push_back("}");
    const std::vector<std::string> body = replayed_body(true);
    out.insert(out.end(), body.begin(), body.end());
    out.push_back("}");
    const std::vector<std::string> post = replayed(post_, true);
    if (!post.empty()) out.push_back("// after the loop");
    out.insert(out.end(), post.begin(), post.end());
    return out;
  }

  /// `ln__G[program, segment, row, 0 : dims]`.
  std::string map_slot(const std::string& segment, const std::string& row) const {
    std::vector<std::string> parts = {program_index(), segment, row};
    for (const auto& d : declared_.at(carried_[0])->dims)
      parts.push_back("0 : " + expr_to_string(*d));
    return "ln__" + groups_[0].name + "[" + join(parts, ", ") + "]";
  }

  /// `<kernel>_grad_lin`: the segment's taped forward, then its reverse for every unit seed and
  /// for the loss, stored as the map lambda_start = A lambda_end + b (A's column m: seed m).
  std::vector<std::string> linearize_body() {
    std::vector<std::string> out;
    Renames pre_names;
    std::map<std::string, int> pre_versions;
    Block pre = flatten(pre_, pre_names, pre_versions);
    out.push_back("// before the loop");
    out.insert(out.end(), pre.code.begin(), pre.code.end());
    const std::vector<std::string> body_replay = replayed_body();
    out.push_back(fmt::format("let k__ = program_id({});", k_.grid.size()));
    out.push_back(fmt::format("let s0__ = {} + k__ * SEG;", lo()));
    out.push_back(fmt::format("let s1__ = min(s0__ + SEG, {});", hi()));
    out.push_back("// the state at the segment's start, as the forward stored it");
    for (const std::string& v : carried_)
      out.push_back(fmt::format("{} = load({});", v, start_slot(v, "k__")));
    out.push_back("// the segment, the state before each step taped");
    out.push_back(fmt::format("for {} in serial(s0__, s1__) {{", loop_->name));
    const std::vector<std::string> taped = taped_step(body_replay, loop_->name + " - s0__");
    out.insert(out.end(), taped.begin(), taped.end());
    out.push_back("}");
    const size_t na = active_carried_.size();
    Seeds seeds;
    out.push_back(fmt::format("// the adjoints after the segment: seed m < {} is unit vector m "
                              "(no loss), seed {} is zero (with the loss)",
                              na, na));
    for (size_t m = 0; m <= na; ++m) {
      const std::string prefix = fmt::format("d{}__", m);
      seeds.push_back({prefix, m < na ? Seed::unit : Seed::loss});
      for (size_t i = 0; i < na; ++i)
        out.push_back(fmt::format("frag {}{}: {} = {};", prefix, active_carried_[i],
                                  type_to_string(*declared_.at(active_carried_[i])),
                                  m == i ? "1.0" : "0.0"));
    }
    out.push_back("// undo the segment's steps, last first, for every seed");
    const std::vector<std::string> first = first_taped_state("s1__ - 1 - s0__");
    out.insert(out.end(), first.begin(), first.end());
    out.push_back("for tt__ in serial(0, s1__ - s0__) {");
    out.push_back(fmt::format("let {} = s1__ - 1 - tt__;", loop_->name));
    const std::vector<std::string> undo = undo_step(pre, loop_->name, seeds);
    out.insert(out.end(), undo.begin(), undo.end());
    out.push_back("}");
    out.push_back(
        fmt::format("// the map: row m * {} + i is seed m's adjoint of carried value i", na));
    for (size_t m = 0; m <= na; ++m)
      for (size_t i = 0; i < na; ++i)
        out.push_back(fmt::format("store({}, d{}__{});",
                                  map_slot("k__", std::to_string(m * na + i)), m,
                                  active_carried_[i]));
    return out;
  }

  /// `<kernel>_grad_seg`: the adjoint after the segment from the later segments' maps, then the
  /// segment undone from the tape, every gradient added.
  std::vector<std::string> finish_body() {
    std::vector<std::string> out;
    Renames pre_names;
    std::map<std::string, int> pre_versions;
    Block pre = flatten(pre_, pre_names, pre_versions);
    out.push_back("// before the loop");
    out.insert(out.end(), pre.code.begin(), pre.code.end());
    Adjoints top;
    out.push_back("// their adjoints, added to by every step of this segment");
    const std::vector<std::string> acc = accumulators(pre, top);
    out.insert(out.end(), acc.begin(), acc.end());
    const size_t na = active_carried_.size();
    out.push_back(fmt::format("let k__ = program_id({});", k_.grid.size()));
    out.push_back(fmt::format("let s0__ = {} + k__ * SEG;", lo()));
    out.push_back(fmt::format("let s1__ = min(s0__ + SEG, {});", hi()));
    out.push_back("// the adjoint of the state after this segment: the later segments' maps "
                  "applied, last first, to the zero after the loop");
    out.push_back(fmt::format("let nseg__ = {};", segment_count()));
    out.push_back("for jj__ in serial(0, nseg__ - 1 - k__) {");
    out.push_back("let j__ = nseg__ - 1 - jj__;");
    for (size_t i = 0; i < na; ++i) {
      const std::string& v = active_carried_[i];
      std::string sum = fmt::format("load({})", map_slot("j__", std::to_string(na * na + i)));
      for (size_t m = 0; m < na; ++m)
        sum += fmt::format(" + load({}) * d__{}", map_slot("j__", std::to_string(m * na + i)),
                           active_carried_[m]);
      out.push_back(fmt::format("frag nl__{}: {} = {};", v, type_to_string(*declared_.at(v)), sum));
    }
    for (const std::string& v : active_carried_)
      out.push_back(fmt::format("d__{} = nl__{};", v, v));
    out.push_back("}");
    out.push_back("// undo the segment's steps, last first, from the tape");
    const std::vector<std::string> first = first_taped_state("s1__ - 1 - s0__");
    out.insert(out.end(), first.begin(), first.end());
    out.push_back("for tt__ in serial(0, s1__ - s0__) {");
    out.push_back(fmt::format("let {} = s1__ - 1 - tt__;", loop_->name));
    const std::vector<std::string> undo_lines = undo_step(pre, loop_->name);
    out.insert(out.end(), undo_lines.begin(), undo_lines.end());
    out.push_back("}");
    out.push_back("// the adjoint of the state before this segment is the previous segment's; the "
                  "first segment's reaches the values before the loop");
    for (const std::string& v : active_carried_)
      out.push_back(fmt::format("d__{} = where(k__ == 0, d__{}, 0.0);", v, v));
    out.push_back("// before the loop, undone (every segment adds its share)");
    undo(pre, top, out);
    return out;
  }
};

} // namespace

GradientKernel derive_gradient(const Kernel& kernel, const GradientOptions& options) {
  return Deriver(kernel, options).run();
}

} // namespace tilejit::autodiff
