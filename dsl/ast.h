// The AST of a .tile file: exactly what was written, with source locations; no types yet.
#pragma once

#include "dsl/source.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tilejit::dsl {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;

enum class UnaryOp { Neg, Not, BitNot };
enum class BinaryOp {
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  And,
  Or,
  BitAnd,
  BitOr,
  BitXor,
  Shl,
  Shr,
};
const char* unary_op_spelling(UnaryOp op);
const char* binary_op_spelling(BinaryOp op);

/// One subscript of `x[...]`: an expression, a slice `a : b`, a full `:`, or `None` (new axis).
struct IndexItem {
  enum class Kind { Expr, Slice, Full, NewAxis } kind = Kind::Expr;
  ExprPtr expr;  ///< Kind::Expr
  ExprPtr start; ///< Kind::Slice
  ExprPtr stop;  ///< Kind::Slice
  SourceLoc loc;
};

/// `name = value` argument of a call (mask = ..., axis = ..., stages = ...).
struct KeywordArg {
  std::string name;
  ExprPtr value;
  SourceLoc loc;
};

/// A type as written: `f32`, `T`, `f16[BM, BK]`, `T[B, HQ, D]`, `u8[1|B, 1|HQ, NB, NB]`.
struct TypeExpr {
  std::string dtype; ///< a dtype name or a generic dtype parameter
  bool has_dims = false;
  std::vector<ExprPtr> dims;
  SourceLoc loc;
};

enum class ExprKind { IntLit, FloatLit, BoolLit, Name, Unary, Binary, Call, Index };

struct Expr {
  ExprKind kind = ExprKind::IntLit;
  SourceLoc loc;
  int64_t int_value = 0;              ///< IntLit
  double float_value = 0;             ///< FloatLit
  bool bool_value = false;            ///< BoolLit
  std::string name;                   ///< Name; Call: callee
  UnaryOp unary_op{};                 ///< Unary
  BinaryOp binary_op{};               ///< Binary
  ExprPtr lhs, rhs;                   ///< Unary (lhs), Binary; Index: the indexed expression (lhs)
  std::unique_ptr<TypeExpr> type_arg; ///< Call: cast<T>(x)
  std::vector<ExprPtr> args;          ///< Call: positional arguments
  std::vector<KeywordArg> kwargs;     ///< Call: keyword arguments
  std::vector<IndexItem> index;       ///< Index
};

enum class StmtKind { Let, Assign, ExprStmt, For, If, Return, Block };
enum class LetKind { Let, Frag, Shared };

struct Stmt {
  StmtKind kind;
  SourceLoc loc;
  // Let
  LetKind let_kind = LetKind::Let;
  std::string name;               ///< Let / Assign target / For variable
  std::unique_ptr<TypeExpr> type; ///< Let: optional declared type
  ExprPtr value;                  ///< Let init; Assign value; ExprStmt; If condition
  // Assign: `x = v`, or `x op= v` with assign_op set
  bool compound = false;
  BinaryOp assign_op{};
  // For
  std::string range_kind; ///< range | serial | pipelined
  std::vector<ExprPtr> range_args;
  std::vector<KeywordArg> range_kwargs;
  SourceLoc range_loc;
  // For body / If then / Block
  std::vector<StmtPtr> body;
  std::vector<StmtPtr> else_body; ///< If
  bool has_else = false;
};

/// A candidate set: `f16|bf16`, `16|32|64`, `1..8` (inclusive), with an optional `= default`.
struct Choice {
  std::vector<std::string> names; ///< dtype choices
  std::vector<int64_t> ints;      ///< integer choices (a range is expanded)
  bool is_dtype = false;
  bool has_default = false;
  std::string default_name;
  int64_t default_int = 0;
  SourceLoc loc;
};

/// `T: f16|bf16` or `D: 64|128` in the kernel's `<...>`: each value compiles its own variant.
struct GenericParam {
  std::string name;
  Choice choice;
  SourceLoc loc;
};

/// A tensor or scalar parameter. Scratch tensors are allocated by the runtime, not the caller.
struct Param {
  std::string name;
  TypeExpr type;
  bool is_scratch = false;
  bool zero_init = false; ///< `scratch c: i32[..] = 0`: zeroed once at allocation
  SourceLoc loc;
};

/// `tune BN: 16|32|64 = 32`: a value the tuner chooses per shape.
struct Tunable {
  std::string name;
  Choice choice;
  SourceLoc loc;
};

struct Kernel {
  std::string name;
  SourceLoc loc;
  std::vector<GenericParam> generics;
  std::vector<Param> params;
  std::vector<Tunable> tunables;
  std::vector<ExprPtr> where;   ///< compile-time constraints on generics and tunables
  std::vector<ExprPtr> require; ///< launch-time checks on runtime sizes and scalars
  std::vector<ExprPtr> grid;    ///< 1 to 3 host-evaluated extents
  ExprPtr threads;              ///< threads per block; default 128
  /// Blocks the compiler should fit on one multiprocessor at once (`blocks_per_sm N`, compile
  /// time): registers per thread are capped so that N blocks fit (__launch_bounds__' second
  /// argument). Null: the compiler's choice.
  ExprPtr blocks_per_sm;
  /// Thread block clusters (sm_90): programs per cluster along each grid axis, compile time;
  /// empty = no clusters (each program alone).
  std::vector<ExprPtr> cluster;
  SourceLoc grid_loc, cluster_loc;
  std::vector<StmtPtr> body;
};

struct Module {
  std::shared_ptr<const SourceFile> file;
  std::vector<std::unique_ptr<Kernel>> kernels;
};

/// A tensor dimension written `1|X` (the checker allows it in a caller's tensor, X a size name,
/// generic, tunable or integer): the argument may have size X, or size 1, which then broadcasts
/// to X. Returns X's expression for such a dimension, nullptr for any other.
inline const Expr* broadcast_dim_target(const Expr& dim) {
  if (dim.kind != ExprKind::Binary || dim.binary_op != BinaryOp::BitOr) return nullptr;
  if (dim.lhs->kind != ExprKind::IntLit || dim.lhs->int_value != 1) return nullptr;
  if (dim.rhs->kind != ExprKind::Name && dim.rhs->kind != ExprKind::IntLit) return nullptr;
  return dim.rhs.get();
}

} // namespace tilejit::dsl
