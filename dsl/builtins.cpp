#include "dsl/builtins.h"

namespace tilejit::dsl {

const std::vector<BuiltinInfo>& all_builtins() {
  static const std::vector<BuiltinInfo> table = {
      {"program_id", BuiltinKind::ProgramId, 1, 1, {}, "program_id(axis)"},
      {"num_programs", BuiltinKind::NumPrograms, 1, 1, {}, "num_programs(axis)"},
      {"iota", BuiltinKind::Iota, 1, 1, {}, "iota(N)"},
      {"load", BuiltinKind::Load, 1, 1, {"mask", "other"}, "load(tensor[...], mask=, other=)"},
      {"gather",
       BuiltinKind::Load,
       1,
       1,
       {"mask", "other"},
       "gather(tensor[idx, ...], mask=, other=)"},
      {"copy",
       BuiltinKind::Copy,
       1,
       1,
       {"mask", "other", "reuse"},
       "copy(tensor[...], mask=, other=, reuse=)"},
      {"store", BuiltinKind::Store, 2, 2, {"mask"}, "store(tensor[...], value, mask=)"},
      {"atomic_add",
       BuiltinKind::AtomicAdd,
       2,
       2,
       {"mask", "bulk"},
       "atomic_add(tensor[...], value, mask=, bulk=)"},
      {"fence", BuiltinKind::Fence, 0, 0, {}, "fence()"},
      {"prefetch", BuiltinKind::Prefetch, 1, 1, {}, "prefetch(tensor[...])"},
      {"dot",
       BuiltinKind::Dot,
       2,
       3,
       {"exact", "wgmma", "issue", "shared_a"},
       "dot(a, b) or dot(a, b, acc), exact=, wgmma=, issue=, shared_a="},
      {"trans", BuiltinKind::Trans, 1, 1, {}, "trans(x)"},
      {"reduce_sum", BuiltinKind::ReduceSum, 1, 1, {"axis"}, "reduce_sum(x, axis=)"},
      {"reduce_max", BuiltinKind::ReduceMax, 1, 1, {"axis"}, "reduce_max(x, axis=)"},
      {"reduce_min", BuiltinKind::ReduceMin, 1, 1, {"axis"}, "reduce_min(x, axis=)"},
      {"cumsum", BuiltinKind::CumSum, 1, 1, {"axis"}, "cumsum(x, axis=)"},
      {"cumprod", BuiltinKind::CumProd, 1, 1, {"axis"}, "cumprod(x, axis=)"},
      {"solve_tril", BuiltinKind::SolveTril, 1, 1, {}, "solve_tril(a)"},
      {"sum_to", BuiltinKind::SumTo, 2, 2, {}, "sum_to(x, like)"},
      {"cluster_sum", BuiltinKind::ClusterSum, 1, 1, {}, "cluster_sum(x)"},
      {"where", BuiltinKind::Where, 3, 3, {}, "where(cond, a, b)"},
      {"min", BuiltinKind::Min, 2, 2, {}, "min(a, b)"},
      {"max", BuiltinKind::Max, 2, 2, {}, "max(a, b)"},
      {"clamp", BuiltinKind::Clamp, 3, 3, {}, "clamp(x, lo, hi)"},
      {"abs", BuiltinKind::Abs, 1, 1, {}, "abs(x)"},
      {"exp", BuiltinKind::Exp, 1, 1, {}, "exp(x)"},
      {"exp2", BuiltinKind::Exp2, 1, 1, {}, "exp2(x)"},
      {"log", BuiltinKind::Log, 1, 1, {}, "log(x)"},
      {"log2", BuiltinKind::Log2, 1, 1, {}, "log2(x)"},
      {"sqrt", BuiltinKind::Sqrt, 1, 1, {}, "sqrt(x)"},
      {"rsqrt", BuiltinKind::Rsqrt, 1, 1, {}, "rsqrt(x)"},
      {"floor", BuiltinKind::Floor, 1, 1, {}, "floor(x)"},
      {"ceil", BuiltinKind::Ceil, 1, 1, {}, "ceil(x)"},
      {"pow", BuiltinKind::Pow, 2, 2, {}, "pow(x, y)"},
      {"tanh", BuiltinKind::Tanh, 1, 1, {}, "tanh(x)"},
      {"sigmoid", BuiltinKind::Sigmoid, 1, 1, {}, "sigmoid(x)"},
      {"cast", BuiltinKind::Cast, 1, 1, {}, "cast<dtype>(x)"},
      {"unpack4",
       BuiltinKind::Unpack4,
       1,
       2,
       {"interleaved"},
       "unpack4<f16|bf16|f32>(words) or unpack4<T>(words, zero), interleaved=0|1"},
      {"cdiv", BuiltinKind::Cdiv, 2, 2, {}, "cdiv(a, b)"},
      {"zip", BuiltinKind::Zip, 2, 8, {}, "zip(index_tile, index_tile, ...)"},
  };
  return table;
}

const BuiltinInfo* find_builtin(std::string_view name) {
  for (const BuiltinInfo& b : all_builtins())
    if (b.name == name) return &b;
  return nullptr;
}

bool is_dtype_name(std::string_view name) {
  static const char* names[] = {"f16", "bf16", "f32", "f64", "i8",  "u8",
                                "i16", "i32",  "u32", "i64", "bool"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

} // namespace tilejit::dsl
