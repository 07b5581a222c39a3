// The straight-line form reverse mode works on: every differentiated expression split into
// operations on named values (a temporary per operation), each with its adjoint rule.
#pragma once

#include "dsl/ast.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace tilejit::autodiff {

enum class OpKind {
  Copy,
  Add,
  Sub,
  Mul,
  Div,
  Neg,
  Where,
  Min,
  Max,
  Clamp,
  Pow,
  Exp,
  Exp2,
  Log,
  Log2,
  Sqrt,
  Rsqrt,
  Tanh,
  Sigmoid,
  Abs,
  Cast,
  ReduceSum, ///< reduce_sum(x, axis = `axis`) (-1: every axis): its adjoint is broadcast back
  NewAxes,   ///< x[:, None] / x[None, :] (unit axes at `axes`): its adjoint is summed over them
  Load,      ///< a read of a differentiated input: its adjoint is added to d_<tensor>
  Store,     ///< a write of an output: d_<tensor> is the adjoint of the value stored
};

/// An operand: a value's name when it is differentiated, else its text (a constant, an index).
struct Operand {
  std::string text;
  bool active = false;
};

struct Op {
  OpKind kind = OpKind::Copy;
  std::string result; ///< the value's name (empty for Store)
  std::vector<Operand> args;
  std::string tensor, access, mask; ///< Load / Store: `tensor[access]`, the mask's text or ""
  int axis = -1;                    ///< ReduceSum
  std::vector<int> axes;            ///< NewAxes: the new axes' positions in the result
};

/// The call names that map to an OpKind (min, max, clamp, pow, exp, ...), with Load for load
/// and gather; false for any other call.
bool op_kind_of_call(const std::string& callee, OpKind* kind);

/// Adjoint variables of one block: a value's adjoint is `d__<value>`, declared at its first
/// contribution, unless the value has an accumulator declared outside the block (`outer`).
class Adjoints {
public:
  /// `prefix` names the adjoints (`d__x`); another prefix keeps a second set of adjoints of the
  /// same values apart (the segment form's seeds: `d0__x`, `d1__x`, ...).
  explicit Adjoints(std::string prefix = "d__") : prefix_(std::move(prefix)) {}
  void set_outer(const std::string& value, const std::string& adjoint) { outer_[value] = adjoint; }
  bool has(const std::string& value) const;
  std::string of(const std::string& value) const;
  /// Emits `adjoint(value) += contribution` (declaring it at the first contribution).
  void add(std::vector<std::string>& out, const std::string& value, const std::string& c);

private:
  std::string prefix_;
  std::map<std::string, std::string> outer_;
  std::set<std::string> defined_;
};

/// Emits the adjoint statements of `op` (those of its active operands); nothing for an op whose
/// result has no adjoint (its value reaches no output). Loads add into `d_<tensor>` with
/// atomic_add; stores read `d_<tensor>`. An operand of an operation with several operands (or
/// of a store) may have been broadcast to the result's shape: its contribution is written
/// `sum_to(c, operand)`, summed back to the operand's shape (free where the shapes are equal).
void emit_adjoint(const Op& op, Adjoints& adjoints, std::vector<std::string>& out);

} // namespace tilejit::autodiff
