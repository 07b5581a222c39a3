// Evaluates DSL expressions on the host: `where` constraints at specialisation, and at launch
// the grid, `require` checks and scratch shapes, from sizes, scalars, generics and tunables.
#pragma once

#include "dsl/ast.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace tilejit {

/// A host-side value: an integer, a float or a bool (comparisons).
struct HostValue {
  enum class Kind { Int, Float, Bool } kind = Kind::Int;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  static HostValue of_int(int64_t v) { return {Kind::Int, v, static_cast<double>(v), v != 0}; }
  static HostValue of_float(double v) { return {Kind::Float, static_cast<int64_t>(v), v, v != 0}; }
  static HostValue of_bool(bool v) { return {Kind::Bool, v ? 1 : 0, v ? 1.0 : 0.0, v}; }
  double as_double() const { return kind == Kind::Float ? f : static_cast<double>(i); }
};

using HostEnv = std::map<std::string, HostValue>;

/// Evaluates `e` with names taken from `env`. Returns nullopt if a name is missing (and then
/// sets *missing to it when given); throws CompileError on a division by zero or a call that
/// has no host meaning.
std::optional<HostValue> host_eval(const dsl::Expr& e, const HostEnv& env,
                                   std::string* missing = nullptr);

/// host_eval that must succeed and produce an integer; errors name `what`.
int64_t host_eval_int(const dsl::Expr& e, const HostEnv& env, const std::string& what);

} // namespace tilejit
