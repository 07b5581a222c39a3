// Constant folding (compiler/fold.cpp) and host evaluation (compiler/host_eval.cpp) against the
// reference interpreter: integer overflow corners (INT_MIN / -1, INT_MIN % -1) and shifts by
// amounts outside [0, width) must give what the same operation on runtime values gives, and
// must not trap.
#include "compiler/fold.h"
#include "compiler/host_eval.h"
#include "compiler/kernel_library.h"
#include "compiler/ref/run_tile.h"
#include "dsl/diagnostics.h"
#include "dsl/parser.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace tilejit {
namespace {

using ref::HostBuffer;

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();

/// fold(x op y) on two constants of dtype t; the folded constant's value.
int64_t fold_int(dsl::BinaryOp op, int64_t x, int64_t y, DType t) {
  ir::ExprPtr e = fold(ir::make_binary(op, ir::make_int(x, t), ir::make_int(y, t)));
  EXPECT_EQ(e->kind, ir::ExprKind::Const) << "not folded";
  EXPECT_EQ(e->type.dtype, t);
  return e->int_value;
}

/// host_eval of `a OP b` with a and b bound to x and y.
int64_t host_int(const char* op, int64_t x, int64_t y) {
  auto m = dsl::parse_text("h.tile", std::string("kernel k() where a ") + op + " b grid (1) {}");
  HostEnv env{{"a", HostValue::of_int(x)}, {"b", HostValue::of_int(y)}};
  auto v = host_eval(*m->kernels[0]->where[0], env);
  EXPECT_TRUE(v && v->kind == HostValue::Kind::Int);
  return v ? v->i : 0;
}

HostBuffer ints(DType t, const std::vector<int64_t>& values) {
  HostBuffer b(t, {static_cast<int64_t>(values.size())});
  for (size_t k = 0; k < values.size(); ++k) b.set_int(static_cast<int64_t>(k), values[k]);
  return b;
}

const char* kShifts = R"(kernel shifts(A: i32[16], B: i32[16], L: i32[16], R: i32[16],
                 U: u32[16], UL: u32[16], UR: u32[16],
                 A64: i64[16], B64: i64[16], L64: i64[16], R64: i64[16]) grid (1) {
  frag a = load(A);
  frag b = load(B);
  store(L, a << b);
  store(R, a >> b);
  frag u = load(U);
  frag ub = cast<u32>(b);
  store(UL, u << ub);
  store(UR, u >> ub);
  frag a64 = load(A64);
  frag b64 = load(B64);
  store(L64, a64 << b64);
  store(R64, a64 >> b64);
}
)";

TEST(Fold, ShiftsOutsideTheWidthMatchTheInterpreter) {
  // Amounts below 0, at and past the width (32 for i32/u32, 64 for i64), of positive and
  // negative values: 0, or the sign for an arithmetic right shift (PTX).
  const std::vector<int64_t> av = {1, -1, 5, -8, kI32Min, kI32Max, 1,  -1,
                                   3, -3, 7, -7, 1,       -5,      12, -12};
  const std::vector<int64_t> bv = {-1, -1, 0, 3, 31, 31, 32, 32, 33, 33, 63, 63, 64, 64, 100, -100};
  std::vector<int64_t> uv;
  for (int64_t x : av) uv.push_back(static_cast<uint32_t>(x));
  HostBuffer a = ints(DType::I32, av), b = ints(DType::I32, bv), u = ints(DType::U32, uv);
  HostBuffer a64 = ints(DType::I64, av), b64 = ints(DType::I64, bv);
  HostBuffer l(DType::I32, {16}), r(DType::I32, {16}), ul(DType::U32, {16}), ur(DType::U32, {16}),
      l64(DType::I64, {16}), r64(DType::I64, {16});
  LoadedModule m = load_tile_text("shifts.tile", kShifts);
  ref::run_tile(m.kernel(), {},
                {a.arg(), b.arg(), l.arg(), r.arg(), u.arg(), ul.arg(), ur.arg(), a64.arg(),
                 b64.arg(), l64.arg(), r64.arg()});
  using dsl::BinaryOp;
  for (int k = 0; k < 16; ++k) {
    SCOPED_TRACE(str("element ", k, ": ", av[k], " shifted by ", bv[k]));
    EXPECT_EQ(fold_int(BinaryOp::Shl, av[k], bv[k], DType::I32), l.get_int(k));
    EXPECT_EQ(fold_int(BinaryOp::Shr, av[k], bv[k], DType::I32), r.get_int(k));
    EXPECT_EQ(fold_int(BinaryOp::Shl, uv[k], bv[k], DType::U32), ul.get_int(k));
    EXPECT_EQ(fold_int(BinaryOp::Shr, uv[k], bv[k], DType::U32), ur.get_int(k));
    EXPECT_EQ(fold_int(BinaryOp::Shl, av[k], bv[k], DType::I64), l64.get_int(k));
    EXPECT_EQ(fold_int(BinaryOp::Shr, av[k], bv[k], DType::I64), r64.get_int(k));
    // Host integers are 64-bit.
    EXPECT_EQ(host_int("<<", av[k], bv[k]), l64.get_int(k));
    EXPECT_EQ(host_int(">>", av[k], bv[k]), r64.get_int(k));
  }
  // A few by hand, so the interpreter is not the only witness.
  EXPECT_EQ(fold_int(BinaryOp::Shl, 1, 32, DType::I32), 0);
  EXPECT_EQ(fold_int(BinaryOp::Shr, -8, 40, DType::I32), -1);
  EXPECT_EQ(fold_int(BinaryOp::Shr, 8, -1, DType::I32), 0);
  EXPECT_EQ(fold_int(BinaryOp::Shl, 1, 31, DType::I32), kI32Min);
  EXPECT_EQ(fold_int(BinaryOp::Shr, 0xFFFFFFFF, 40, DType::U32), 0);
  EXPECT_EQ(fold_int(BinaryOp::Shl, 1, 63, DType::I64), kI64Min);
  EXPECT_EQ(host_int("<<", 1, 64), 0);
  EXPECT_EQ(host_int(">>", -1, 64), -1);
  EXPECT_EQ(host_int(">>", 1, -3), 0);
}

TEST(Fold, MinDividedByMinusOneWrapsInsteadOfTrapping) {
  using dsl::BinaryOp;
  EXPECT_EQ(fold_int(BinaryOp::Div, kI64Min, -1, DType::I64), kI64Min);
  EXPECT_EQ(fold_int(BinaryOp::Mod, kI64Min, -1, DType::I64), 0);
  EXPECT_EQ(fold_int(BinaryOp::Div, kI32Min, -1, DType::I32), kI32Min);
  EXPECT_EQ(fold_int(BinaryOp::Mod, kI32Min, -1, DType::I32), 0);
  EXPECT_EQ(fold_int(BinaryOp::Div, 7, -1, DType::I32), -7);
  EXPECT_EQ(fold_int(BinaryOp::Mod, 7, -1, DType::I32), 0);
  EXPECT_EQ(host_int("/", kI64Min, -1), kI64Min);
  EXPECT_EQ(host_int("%", kI64Min, -1), 0);
  EXPECT_EQ(host_int("/", 9, -1), -9);
  // Division by zero is still an error.
  EXPECT_THROW(fold_int(BinaryOp::Div, 1, 0, DType::I32), dsl::CompileError);
  EXPECT_THROW(host_int("%", 1, 0), dsl::CompileError);
}

TEST(Fold, MinDividedByMinusOneInAKernelAndAWhereClause) {
  // The reproducers: folded in the body (specialise) and in `where` (host_eval), then run.
  const char* text = R"(kernel k(Y: i64[4])
  where (-9223372036854775807 - 1) / -1 < 0, (-9223372036854775807 - 1) % -1 == 0
  grid (1) {
  let a = (-9223372036854775807 - 1) / -1;
  let r = (-9223372036854775807 - 1) % -1;
  store(Y[0], a);
  store(Y[1], r);
  store(Y[2], -2147483648 / -1);
  store(Y[3], 1 << 64);
}
)";
  HostBuffer y(DType::I64, {4});
  LoadedModule m = load_tile_text("min.tile", text);
  ref::run_tile(m.kernel(), {}, {y.arg()});
  EXPECT_EQ(y.get_int(0), kI64Min);
  EXPECT_EQ(y.get_int(1), 0);
  EXPECT_EQ(y.get_int(2), 2147483648); // an i64 literal: no wrap
  EXPECT_EQ(y.get_int(3), 0);          // 1 is an i32: shifted out
}

TEST(Fold, ArithmeticOnABoolIsLeftForTypeInference) {
  // `1 + true` must not fold to 2: infer_types reports it, as it does for `n + true`.
  ir::ExprPtr e = fold(ir::make_binary(dsl::BinaryOp::Add, ir::make_int(1), ir::make_bool(true)));
  EXPECT_EQ(e->kind, ir::ExprKind::Binary);
  e = fold(ir::make_binary(dsl::BinaryOp::Shl, ir::make_bool(true), ir::make_int(1)));
  EXPECT_EQ(e->kind, ir::ExprKind::Binary);
  // Bitwise operations on bools and comparisons still fold.
  e = fold(ir::make_binary(dsl::BinaryOp::BitAnd, ir::make_bool(true), ir::make_bool(false)));
  EXPECT_EQ(e->kind, ir::ExprKind::Const);
}

// where() with a constant condition (a generic's test, say) keeps its broadcast shape: the
// scalar branch taken is spread over the tile the other branch gives.
TEST(Fold, WhereOfAConstantConditionKeepsItsShape) {
  const char* text = R"(kernel k<ONE: 0|1 = 1>(X: f32[8], Y: f32[8], Z: f32[8])
  grid (1) {
  frag x = load(X[0 : 8]);
  frag ones = where(ONE == 1, 1.0, x);
  store(Y[0 : 8], ones + x);
  store(Z[0 : 8], where(true, x, 0.0) * 2.0);
}
)";
  HostBuffer x(DType::F32, {8}), y(DType::F32, {8}), z(DType::F32, {8});
  for (int i = 0; i < 8; ++i) x.set(i, 0.25 * i - 1);
  LoadedModule m = load_tile_text("where.tile", text);
  for (const char* one : {"1", "0"}) {
    y.poison();
    z.poison();
    ref::run_tile(m.kernel(), {{"ONE", one}}, {x.arg(), y.arg(), z.arg()});
    for (int i = 0; i < 8; ++i) {
      const double xi = 0.25 * i - 1;
      EXPECT_EQ(y.get(i), (one[0] == '1' ? 1.0 : xi) + xi) << i << " ONE=" << one;
      EXPECT_EQ(z.get(i), 2 * xi) << i;
    }
  }
}

} // namespace
} // namespace tilejit
