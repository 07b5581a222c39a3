// The DSL's built-in functions: arity and keyword arguments, shared by the checker and the
// compiler's lowering, so a call is validated in one place.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tilejit::dsl {

enum class BuiltinKind {
  ProgramId,
  NumPrograms,
  Iota,
  Load,
  Copy,
  Store,
  AtomicAdd,
  Fence,
  Prefetch,
  Dot,
  Trans,
  ReduceSum,
  ReduceMax,
  ReduceMin,
  CumSum,
  CumProd,
  SolveTril, ///< solve_tril(a): (I + A)^-1 for a square tile's strictly lower part A
  SumTo,     ///< sum_to(x, like): x summed over the axes `like` broadcasts along (reverse mode)
  ClusterSum,
  Where,
  Min,
  Max,
  Clamp,
  Abs,
  Exp,
  Exp2,
  Log,
  Log2,
  Sqrt,
  Rsqrt,
  Floor,
  Ceil,
  Pow,
  Tanh,
  Sigmoid,
  Cast,
  Unpack4, ///< unpack4<T>(words): eight 4-bit fields per 32-bit word, as T values
  Cdiv,
  Zip, ///< zip(i, j, ...): index tiles paired element by element, only as a tensor subscript
};

struct BuiltinInfo {
  std::string_view name;
  BuiltinKind kind;
  int min_args;
  int max_args;
  std::vector<std::string_view> keywords; ///< allowed keyword arguments
  std::string_view signature;             ///< shown in diagnostics
};

/// The built-in called `name` (`gather` is `load`), or nullptr.
const BuiltinInfo* find_builtin(std::string_view name);
const std::vector<BuiltinInfo>& all_builtins();

/// Whether `name` is a dtype spelling: f16 bf16 f32 f64 i8 u8 i16 i32 u32 i64 bool.
bool is_dtype_name(std::string_view name);

} // namespace tilejit::dsl
