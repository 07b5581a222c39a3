// Semantics of the reference interpreter on small hand-written kernels: gathers, masks and
// bounds, atomics across programs, loops, early return, integer and f16/bf16 arithmetic, and
// runtime errors.
#include "compiler/kernel_library.h"
#include "compiler/pipeline.h"
#include "compiler/ref/float_formats.h"
#include "compiler/ref/interpreter.h"
#include "compiler/ref/run_tile.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace tilejit::ref {
namespace {

/// Runs the only kernel of `text` (diagnostics name `path`).
RunResult run_text(const std::string& path, const std::string& text,
                   const std::vector<HostArg>& args, const Bindings& given = {}) {
  LoadedModule m = load_tile_text(path, text);
  return run_tile(m.kernel(), given, args);
}

HostBuffer buffer(DType t, std::vector<int64_t> shape, const std::vector<double>& values) {
  HostBuffer b(t, std::move(shape));
  for (size_t k = 0; k < values.size(); ++k) b.set(static_cast<int64_t>(k), values[k]);
  return b;
}

HostBuffer int_buffer(DType t, std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  HostBuffer b(t, std::move(shape));
  for (size_t k = 0; k < values.size(); ++k) b.set_int(static_cast<int64_t>(k), values[k]);
  return b;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// ---- global memory -----------------------------------------------------------------------
const char* kGather =
    R"(kernel gather_rows(X: f32[N, D], idx: i32[G], Y: f32[M, 4], Z: f32[N, D], S: f32[2])
  grid (1)
{
  frag rows = load(idx[0 : 8]);
  frag in_range = rows >= 0 && rows < N;
  frag keep = rows != 2 && in_range;
  frag v = load(X[rows, 0 : 4], mask = keep[:, None], other = -1.0);
  store(Y[0 : 8, 0 : 4], v);
  store(Z[rows, 1], cast<f32>(iota(8) * 10), mask = iota(8) < 5 && in_range);
  store(S[0], load(X[10, 0], mask = 10 < N, other = 7.0));
  store(S[1], load(X[0, 2]));
}
)";

TEST(RefSemantics, GatherMaskAndBounds) {
  const int64_t n = 5, d = 3;
  HostBuffer x(DType::F32, {n, d});
  for (int64_t k = 0; k < n * d; ++k) x.set(k, 1 + k);
  // Elements 6 and 7 of idx[0 : 8] are past its end and load as 0; rows -1 and 5 are out of
  // X's range and must be masked off (an unmasked one is an error: ref_indexing_test).
  HostBuffer idx = int_buffer(DType::I32, {6}, {4, -1, 2, 5, 0, 1});
  HostBuffer y(DType::F32, {7, 4}), z(DType::F32, {n, d}), s(DType::F32, {2});
  y.fill(99);
  z.fill(99);
  s.fill(99);
  run_text("gather.tile", kGather, {x.arg(), idx.arg(), y.arg(), z.arg(), s.arg()});
  const int64_t rows[7] = {4, -1, 2, 5, 0, 1, 0};
  for (int64_t r = 0; r < 7; ++r)
    for (int64_t c = 0; c < 4; ++c) {
      bool valid = rows[r] >= 0 && rows[r] < n && rows[r] != 2 && c < d;
      EXPECT_EQ(y.get(r * 4 + c), valid ? x.get(rows[r] * d + c) : -1.0)
          << "Y[" << r << ", " << c << "]";
    }
  // Only elements 0, 2 and 4 of the gathered store are in bounds and unmasked.
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < d; ++c) {
      double want = 99;
      if (c == 1 && r == 4) want = 0;
      if (c == 1 && r == 2) want = 20;
      if (c == 1 && r == 0) want = 40;
      EXPECT_EQ(z.get(r * d + c), want) << "Z[" << r << ", " << c << "]";
    }
  EXPECT_EQ(s.get(0), 7.0);
  EXPECT_EQ(s.get(1), x.get(2));
}

const char* kStrided = R"(kernel col_copy(X: f32[R, C], Y: f32[R, C])
  grid (cdiv(R, 4))
{
  let r0 = program_id(0) * 4;
  store(Y[r0 : r0 + 4, 0 : 8], load(X[r0 : r0 + 4, 0 : 8]) * 2.0);
}
)";

TEST(RefSemantics, StridedTensorViews) {
  // X is a transposed view of a [C, R] buffer: strides {1, R}.
  const int64_t r = 6, c = 5;
  HostBuffer base(DType::F32, {c, r}), y(DType::F32, {r, c});
  for (int64_t k = 0; k < r * c; ++k) base.set(k, k);
  HostTensor xt = base.view();
  xt.shape = {r, c};
  xt.strides = {1, r};
  y.poison();
  run_text("strided.tile", kStrided, {HostArg::of_tensor(xt), y.arg()});
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) EXPECT_EQ(y.get(i * c + j), 2.0 * base.get(j * r + i));
}

// ---- atomics across programs -------------------------------------------------------------
const char* kSplitSum = R"(kernel split_sum(X: f32[N], out: f32[1], order: i32[P],
                 scratch partial: f32[cdiv(N, BLOCK)], scratch counter: i32[1] = 0)
  tune BLOCK: 16|32 = 16
  grid (cdiv(N, BLOCK))
{
  let p = program_id(0);
  frag x = load(X[p * BLOCK : p * BLOCK + BLOCK]);
  store(partial[p], reduce_sum(x));
  fence();
  let done = atomic_add(counter[0], 1);
  store(order[p], done);
  if done == num_programs(0) - 1 {
    frag all = load(partial[0 : 64], mask = iota(64) < num_programs(0));
    store(out[0], reduce_sum(all));
  }
}
)";

TEST(RefSemantics, AtomicCounterLastProgramCombines) {
  uint32_t seed = test::fresh_seed();
  SCOPED_TRACE(str("seed=", seed));
  std::mt19937 rng(seed);
  for (const char* block : {"16", "32"}) {
    const int64_t n = 300, programs = (n + std::stoi(block) - 1) / std::stoi(block);
    HostBuffer x(DType::F32, {n}), out(DType::F32, {1}), order(DType::I32, {programs});
    test::fill_uniform(x, rng, -1, 1);
    out.poison();
    order.poison();
    RunResult r = run_text("split_sum.tile", kSplitSum, {x.arg(), out.arg(), order.arg()},
                           {{"BLOCK", block}});
    EXPECT_EQ(r.grid[0], programs);
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) sum += x.get(k);
    EXPECT_NEAR(out.get(0), sum, 1e-5 * n);
    // Programs run one after another: atomic_add returns 0, 1, 2, ... in program order.
    for (int64_t p = 0; p < programs; ++p) EXPECT_EQ(order.get_int(p), p);
    EXPECT_EQ(r.scratch[4].get_int(0), programs);                    // zero-initialised counter
    EXPECT_EQ(r.scratch[3].shape(), std::vector<int64_t>{programs}); // partial sums
    EXPECT_FALSE(std::isnan(r.scratch[3].get(programs - 1)));
  }
}

const char* kHistogram = R"(kernel histogram(V: i32[N], H: i32[8])
  tune BLOCK: 16|64 = 16
  grid (cdiv(N, BLOCK))
{
  let b0 = program_id(0) * BLOCK;
  frag v = load(V[b0 : b0 + BLOCK], other = -1);
  atomic_add(H[v], 1, mask = v != 3 && v >= 0 && v < 8);
}
)";

TEST(RefSemantics, TileAtomicAddWithDuplicatesMasksAndBounds) {
  uint32_t seed = test::fresh_seed();
  SCOPED_TRACE(str("seed=", seed));
  std::mt19937 rng(seed);
  const int64_t n = 203;
  HostBuffer v(DType::I32, {n});
  for (int64_t k = 0; k < n; ++k)
    v.set_int(k, static_cast<int64_t>(rng() % 10)); // 8, 9: out of range, masked off
  for (const char* block : {"16", "64"}) {
    HostBuffer h(DType::I32, {8});
    run_text("histogram.tile", kHistogram, {v.arg(), h.arg()}, {{"BLOCK", block}});
    for (int64_t b = 0; b < 8; ++b) {
      int64_t want = 0;
      for (int64_t k = 0; k < n; ++k) want += v.get_int(k) == b && b != 3;
      EXPECT_EQ(h.get_int(b), want) << "bin " << b;
    }
  }
}

const char* kScalarAtomic = R"(kernel scalar_atomic(Y: f32[R, C], Z: i32[M])
  grid (1)
{
  atomic_add(Y[0 : 4, 0 : 8], 1.5);
  atomic_add(Z[0 : 8], 2, mask = iota(8) < M - 1);
}
)";

// A scalar added to a tile of elements: each element once, within bounds and the mask. (Its
// layout once asked a scalar's tile shape: undefined behaviour CI's sanitized fuzz ran into.)
TEST(RefSemantics, ScalarAtomicAddIntoATile) {
  HostBuffer y(DType::F32, {3, 7}), z(DType::I32, {6});
  for (int64_t k = 0; k < 21; ++k) y.set(k, k);
  for (int64_t k = 0; k < 6; ++k) z.set_int(k, 10 * k);
  run_text("scalar_atomic.tile", kScalarAtomic, {y.arg(), z.arg()});
  for (int64_t k = 0; k < 21; ++k) EXPECT_EQ(y.get(k), k + 1.5) << k;
  for (int64_t k = 0; k < 6; ++k) EXPECT_EQ(z.get_int(k), 10 * k + (k < 5 ? 2 : 0)) << k;
}

// ---- control flow ------------------------------------------------------------------------
const char* kLoops = R"(kernel loops(X: f32[N], Y: f32[N], Z: i32[16])
  grid (1)
{
  let acc = 0.0;
  for i in range(N - 1, -1, -1) {
    acc = acc + load(X[i]);
    store(Y[i], acc);
  }
  let n = 0;
  for j in range(10, 0, -3) {
    store(Z[n], j);
    n = n + 1;
  }
  for j in range(0, 0) {
    store(Z[14], j);
  }
  store(Z[15], n);
}
)";

TEST(RefSemantics, NegativeStepLoops) {
  const int64_t n = 9;
  HostBuffer x(DType::F32, {n}), y(DType::F32, {n}), z(DType::I32, {16});
  for (int64_t k = 0; k < n; ++k) x.set(k, k + 1);
  y.poison();
  z.fill(-5);
  run_text("loops.tile", kLoops, {x.arg(), y.arg(), z.arg()});
  for (int64_t k = 0; k < n; ++k)
    EXPECT_EQ(y.get(k), (k + 1 + n) * (n - k) / 2.0) << k; // suffix sums
  const int64_t want[16] = {10, 7, 4, 1, -5, -5, -5, -5, -5, -5, -5, -5, -5, -5, -5, 4};
  for (int k = 0; k < 16; ++k) EXPECT_EQ(z.get_int(k), want[k]) << k;
}

const char* kEarlyReturn = R"(kernel early(Y: i32[8])
  grid (4)
{
  let p = program_id(0);
  for i in range(0, 8) {
    if i == p + 2 {
      return;
    }
    if p == 1 {
      store(Y[i], 100 + i);
    }
  }
  store(Y[p], -1);
}
)";

TEST(RefSemantics, ReturnEndsOnlyItsProgram) {
  HostBuffer y(DType::I32, {8});
  run_text("early.tile", kEarlyReturn, {y.arg()});
  const int64_t want[8] = {100, 101, 102, 0, 0, 0, 0, 0};
  for (int k = 0; k < 8; ++k) EXPECT_EQ(y.get_int(k), want[k]) << k;
}

// ---- arithmetic --------------------------------------------------------------------------
const char* kInts = R"(kernel ints(A: i32[8], B: i32[8], F: f32[8], Q: i32[8], R: i32[8], C: i32[8],
             W: i8[8], S: i32[8], U: u32[8], H: i32[8])
  grid (1)
{
  frag a = load(A[0 : 8]);
  frag b = load(B[0 : 8]);
  store(Q[0 : 8], a / b);
  store(R[0 : 8], a % b);
  store(C[0 : 8], cast<i32>(load(F[0 : 8])));
  store(W[0 : 8], cast<i8>(a));
  store(S[0 : 8], a + a);
  store(U[0 : 8], cast<u32>(a) >> 1);
  store(H[0 : 8], (a >> 4) + (b << 30) - min(a, b) + abs(b));
}
)";

TEST(RefSemantics, IntegerArithmeticWrapsAndTruncates) {
  const int64_t imax = INT32_MAX, imin = INT32_MIN;
  std::vector<int64_t> av = {7, -7, 7, -7, imax, imin, 300, -129}, bv = {2, 2, -2, -2, 1, -1, 7, 5};
  HostBuffer a = int_buffer(DType::I32, {8}, av), b = int_buffer(DType::I32, {8}, bv);
  HostBuffer f = buffer(DType::F32, {8}, {1.9, -1.9, 3e9, -3e9, NAN, INFINITY, -INFINITY, 0.5});
  HostBuffer q(DType::I32, {8}), r(DType::I32, {8}), c(DType::I32, {8}), w(DType::I8, {8}),
      s(DType::I32, {8}), u(DType::U32, {8}), h(DType::I32, {8});
  run_text(
      "ints.tile", kInts,
      {a.arg(), b.arg(), f.arg(), q.arg(), r.arg(), c.arg(), w.arg(), s.arg(), u.arg(), h.arg()});
  const int64_t want_q[8] = {3, -3, -3, 3, imax, imin, 42, -25}; // INT_MIN / -1 wraps
  const int64_t want_r[8] = {1, -1, 1, -1, 0, 0, 6, -4};
  const int64_t want_c[8] = {1, -1, imax, imin, 0, imax, imin, 0};
  const int64_t want_w[8] = {7, -7, 7, -7, -1, 0, 44, 127};
  const int64_t want_s[8] = {14, -14, 14, -14, -2, 0, 600, -258};
  const int64_t want_u[8] = {3, 2147483644, 3, 2147483644, 1073741823, 1073741824, 150, 2147483583};
  for (int k = 0; k < 8; ++k) {
    SCOPED_TRACE(str("element ", k));
    EXPECT_EQ(q.get_int(k), want_q[k]);
    EXPECT_EQ(r.get_int(k), want_r[k]);
    EXPECT_EQ(c.get_int(k), want_c[k]);
    EXPECT_EQ(w.get_int(k), want_w[k]);
    EXPECT_EQ(s.get_int(k), want_s[k]);
    EXPECT_EQ(u.get_int(k), want_u[k]);
    // Independent model in 64 bits, wrapped to 32 at the end (two's complement).
    int64_t x = av[k], y = bv[k];
    int64_t model = (x >> 4) + static_cast<int64_t>(static_cast<uint64_t>(y) << 30) -
                    std::min(x, y) + std::llabs(y);
    EXPECT_EQ(h.get_int(k), static_cast<int32_t>(static_cast<uint32_t>(model)));
  }
}

const char* kHalf = R"(kernel half_math(A: f16[4], B: f16[4], S: f16[4], P: f16[4], M: f32[4],
                  E: bf16[3], F: bf16[3], G: bf16[3], K: f32[2])
  grid (1)
{
  frag a = load(A[0 : 4]);
  frag b = load(B[0 : 4]);
  store(S[0 : 4], a + b);
  store(P[0 : 4], a * b);
  store(M[0 : 4], cast<f32>(max(a, b)));
  store(G[0 : 3], load(E[0 : 3]) + load(F[0 : 3]));
  frag ab = cast<f32>(a) * cast<f32>(b);
  store(K[0], reduce_max(ab)); // ab[3] is NaN: max ignores it
  store(K[1], reduce_sum(a, axis = 0));
}
)";

TEST(RefSemantics, HalfArithmeticRoundsEveryOperation) {
  const double u = std::ldexp(1.0, -11);
  HostBuffer a = buffer(DType::F16, {4}, {1, 1, 65504, 0.1}),
             b = buffer(DType::F16, {4}, {u, 3 * u, 32, NAN});
  HostBuffer s(DType::F16, {4}), p(DType::F16, {4}), m(DType::F32, {4}), k(DType::F32, {2});
  HostBuffer e = buffer(DType::BF16, {3}, {256, 1, 1}),
             f = buffer(DType::BF16, {3}, {1, std::ldexp(1.0, -8), 3 * std::ldexp(1.0, -8)}),
             g(DType::BF16, {3});
  run_text("half.tile", kHalf,
           {a.arg(), b.arg(), s.arg(), p.arg(), m.arg(), e.arg(), f.arg(), g.arg(), k.arg()});
  EXPECT_EQ(s.get(0), 1.0);                       // 1 + 2^-11: a tie, to even
  EXPECT_EQ(s.get(1), 1.0 + std::ldexp(1.0, -9)); // 1 + 3 * 2^-11: a tie, to even (up)
  EXPECT_EQ(s.get(2), INFINITY);                  // 65536 overflows f16
  EXPECT_TRUE(std::isnan(s.get(3)));
  EXPECT_EQ(p.get(0), u);
  EXPECT_EQ(p.get(2), INFINITY);
  EXPECT_EQ(m.get(3), round_to_f16(0.1)); // max ignores NaN, like fmaxf
  EXPECT_EQ(m.get(2), 65504.0);
  EXPECT_EQ(g.get(0), 256.0);                     // 257 ties to 256 in bf16
  EXPECT_EQ(g.get(1), 1.0);                       // 1 + 2^-8 ties to 1
  EXPECT_EQ(g.get(2), 1.0 + std::ldexp(1.0, -6)); // 1 + 3 * 2^-8 ties up
  EXPECT_EQ(k.get(0), 65504.0 * 32);
  // Sums of f16 tiles accumulate in f32: 1 + 1 + 65504 + f16(0.1).
  EXPECT_EQ(k.get(1), static_cast<float>(static_cast<float>(65506.0f) +
                                         static_cast<float>(round_to_f16(0.1))));
}

const char* kScanReduce =
    R"(kernel scan_reduce(X: i32[3, 4], S: i32[3, 4], P: i32[3, 4], R: i32[4], T: i32[1])
  grid (1)
{
  frag x = load(X[0 : 3, 0 : 4]);
  store(S[0 : 3, 0 : 4], cumsum(x, axis = 0));
  store(P[0 : 3, 0 : 4], cumprod(x));
  store(R[0 : 4], reduce_min(x, axis = 0) * 100 + reduce_max(x, axis = 0));
  store(T[0], reduce_sum(x));
}
)";

TEST(RefSemantics, ScansAndReductionsAlongAxes) {
  std::vector<int64_t> xv = {1, -2, 3, 4, 5, 6, -7, 8, 9, 10, 11, -12};
  HostBuffer x = int_buffer(DType::I32, {3, 4}, xv);
  HostBuffer s(DType::I32, {3, 4}), p(DType::I32, {3, 4}), r(DType::I32, {4}), t(DType::I32, {1});
  run_text("scan.tile", kScanReduce, {x.arg(), s.arg(), p.arg(), r.arg(), t.arg()});
  int64_t total = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      int64_t col = 0, row = 1;
      for (int q = 0; q <= i; ++q) col += xv[q * 4 + j];
      for (int q = 0; q <= j; ++q) row *= xv[i * 4 + q];
      EXPECT_EQ(s.get_int(i * 4 + j), col);
      EXPECT_EQ(p.get_int(i * 4 + j), row);
      total += xv[i * 4 + j];
    }
  for (int j = 0; j < 4; ++j) {
    int64_t lo = std::min({xv[j], xv[4 + j], xv[8 + j]}),
            hi = std::max({xv[j], xv[4 + j], xv[8 + j]});
    EXPECT_EQ(r.get_int(j), lo * 100 + hi);
  }
  EXPECT_EQ(t.get_int(0), total);
}

const char* kDotTrans = R"(kernel dot_t(A: f32[M, 16], B: f32[N, 16], C: f32[M, N])
  grid (1)
{
  frag a = load(A[0 : 32, 0 : 16]);
  shared b = copy(B[0 : 32, 0 : 16]);
  store(C[0 : 32, 0 : 32], dot(a, trans(b), exact = 1) + 1.0);
}
)";

TEST(RefSemantics, DotWithTransposedSharedOperand) {
  uint32_t seed = test::fresh_seed();
  SCOPED_TRACE(str("seed=", seed));
  std::mt19937 rng(seed);
  const int64_t m = 20, n = 25;
  HostBuffer a(DType::F32, {m, 16}), b(DType::F32, {n, 16}), c(DType::F32, {m, n});
  test::fill_uniform(a, rng, -1, 1);
  test::fill_uniform(b, rng, -1, 1);
  c.poison();
  run_text("dot_t.tile", kDotTrans, {a.arg(), b.arg(), c.arg()});
  std::vector<double> ref(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 1;
      for (int64_t k = 0; k < 16; ++k) s += a.get(i * 16 + k) * b.get(j * 16 + k);
      ref[i * n + j] = s;
    }
  test::expect_close(c, ref, 1e-6);
}

const char* kWhere = R"(kernel select(X: f32[3, 4], Y: f32[3, 4], c: f32)
  grid (1)
{
  frag x = load(X[0 : 3, 0 : 4]);
  frag row = iota(3);
  frag fill = where(row == 1, -1.0, -2.0);
  store(Y[0 : 3, 0 : 4], where(x > c, x, fill[:, None]));
}
)";

TEST(RefSemantics, WhereBroadcastsItsOperands) {
  HostBuffer x(DType::F32, {3, 4}), y(DType::F32, {3, 4});
  for (int64_t k = 0; k < 12; ++k) x.set(k, k);
  y.poison();
  run_text("where.tile", kWhere, {x.arg(), y.arg(), HostArg::of_scalar(HostValue::of_float(5.5))});
  for (int64_t k = 0; k < 12; ++k)
    EXPECT_EQ(y.get(k), k > 5.5 ? k : (k / 4 == 1 ? -1.0 : -2.0)) << k;
}

const char* kSumTo =
    R"(kernel sum_to_shapes(X: f32[5, 8], R: f32[5, 1], C: f32[1, 8], V: f32[8], S: f32[1],
                     W: f32[5, 8])
  grid (1)
{
  frag x = load(X[0 : 5, 0 : 8]);
  frag r = load(X[0 : 5, 0 : 1]);
  store(R[0 : 5, 0 : 1], sum_to(x, r));
  store(C[0 : 1, 0 : 8], sum_to(x * 2.0, load(X[0 : 1, 0 : 8])));
  store(V[0 : 8], sum_to(x, load(X[0, 0 : 8])));
  store(S[0], sum_to(x, load(X[0, 0])));
  frag w = sum_to(r, x);
  store(W[0 : 5, 0 : 8], w + sum_to(x, x));
}
)";

// sum_to (reverse mode's adjoint of broadcasting): summed over the axes `like` broadcasts
// along (unit axes kept, missing leading axes dropped, a scalar like: everything); a narrower
// value declared with `frag` takes like's shape.
TEST(RefSemantics, SumToSumsOverTheAxesItsLikeBroadcastsAlong) {
  uint32_t seed = test::fresh_seed();
  SCOPED_TRACE(str("seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer x(DType::F32, {5, 8}), r(DType::F32, {5, 1}), c(DType::F32, {1, 8}),
      v(DType::F32, {8}), s(DType::F32, {1}), w(DType::F32, {5, 8});
  test::fill_uniform(x, rng, -1, 1);
  for (HostBuffer* b : {&r, &c, &v, &s, &w}) b->poison();
  run_text("sum_to.tile", kSumTo, {x.arg(), r.arg(), c.arg(), v.arg(), s.arg(), w.arg()});
  std::vector<double> rows(5, 0), cols(8, 0), cols2(8, 0), all(1, 0), wide(40);
  double magnitude = 0; // sum of |x|: f32 sums err relative to it, not to a sum that cancels
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 8; ++j) {
      const double e = x.get(i * 8 + j);
      rows[i] += e;
      cols[j] += e;
      cols2[j] += 2 * e;
      all[0] += e;
      wide[i * 8 + j] = x.get(i * 8) + e;
      magnitude += std::abs(e);
    }
  // 40 terms in f32: error <= 40 * 2^-24 * magnitude ~ 2.4e-6 * magnitude; 1e-5 of it is safe
  // and still far below a wrong axis (an error of the order of the terms themselves).
  test::expect_close(r, rows, 1e-5, magnitude);
  test::expect_close(c, cols2, 1e-5, 2 * magnitude);
  test::expect_close(v, cols, 1e-5, magnitude);
  test::expect_close(s, all, 1e-5, magnitude);
  test::expect_close(w, wide, 1e-5, magnitude);
}

TEST(RefSemantics, SumToOfShapesThatDoNotBroadcastIsNamed) {
  const std::string head = "kernel k(X: f32[5, 8], Y: f32[5, 8])\n  grid (1)\n{\n"
                           "  frag x = load(X[0 : 5, 0 : 8]);\n";
  auto error = [&](const std::string& body) -> std::string {
    try {
      HostBuffer x(DType::F32, {5, 8}), y(DType::F32, {5, 8});
      run_text("bad.tile", head + body + "}\n", {x.arg(), y.arg()});
    } catch (const std::exception& e) { // dsl::CompileError, at the call
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(error("  store(Y[0 : 5, 0 : 8], sum_to(x, load(X[0 : 3, 0 : 8])));\n")
                .find("bad.tile:5:26: error: sum_to: shape [5, 8] does not broadcast with [3, 8]"),
            std::string::npos);
  EXPECT_NE(error("  store(Y[0 : 5, 0 : 8], cast<f32>(sum_to(x > 0.0, x)));\n")
                .find("bad.tile:5:36: error: sum_to sums floats; its value is bool[5, 8]"),
            std::string::npos);
  EXPECT_NE(error("  store(Y[0 : 5, 0 : 8], sum_to(x));\n")
                .find("bad.tile:5:26: error: sum_to takes 2 arguments, got 1"),
            std::string::npos);
}

// ---- runtime errors ----------------------------------------------------------------------
const char* kDivide = R"(kernel divide(X: i32[N], Y: i32[N])
  grid (N)
{
  let i = program_id(0);
  store(Y[i], load(X[i]) / (i - 2));
}
)";

TEST(RefSemantics, IntegerDivisionByZeroIsARuntimeError) {
  HostBuffer x = int_buffer(DType::I32, {4}, {10, 20, 30, 40}), y(DType::I32, {4});
  y.fill(-1);
  std::string msg = error_of([&] { run_text("divide.tile", kDivide, {x.arg(), y.arg()}); });
  EXPECT_EQ(msg.rfind("divide.tile:5:26: runtime error in kernel divide, program (2,0,0): integer "
                      "division by zero",
                      0),
            0u)
      << msg;
  EXPECT_EQ(y.get_int(0), -5); // programs 0 and 1 ran before the error
  EXPECT_EQ(y.get_int(1), -20);
  EXPECT_EQ(y.get_int(3), -1);
}

const char* kModulo = R"(kernel modulo(X: i32[4], Y: i32[4])
  grid (1)
{
  store(Y[0 : 4], iota(4) % load(X[0 : 4]));
}
)";

TEST(RefSemantics, IntegerModuloByZeroInATileIsARuntimeError) {
  HostBuffer x = int_buffer(DType::I32, {4}, {1, 2, 0, 4}), y(DType::I32, {4});
  std::string msg = error_of([&] { run_text("modulo.tile", kModulo, {x.arg(), y.arg()}); });
  EXPECT_EQ(msg.rfind("modulo.tile:4:27: runtime error in kernel modulo, program (0,0,0): integer "
                      "modulo by zero (divisor element 2 is 0)",
                      0),
            0u)
      << msg;
}

const char* kSlice = R"(kernel slicer(X: f32[64, 8], Y: f32[16, 8], start: i32)
  grid (1)
{
  shared t = copy(X[0 : 64, 0 : 8]);
  frag w = t[start : start + 16, :];
  store(Y[0 : 16, 0 : 8], w);
}
)";

TEST(RefSemantics, SharedSliceOutOfRangeIsARuntimeError) {
  HostBuffer x(DType::F32, {64, 8}), y(DType::F32, {16, 8});
  for (int64_t k = 0; k < 64 * 8; ++k) x.set(k, k);
  run_text("slice.tile", kSlice, {x.arg(), y.arg(), HostArg::of_scalar(HostValue::of_int(48))});
  for (int64_t k = 0; k < 16 * 8; ++k) EXPECT_EQ(y.get(k), 48 * 8 + k);
  for (int64_t start : {49, -1}) {
    std::string msg = error_of([&] {
      run_text("slice.tile", kSlice,
               {x.arg(), y.arg(), HostArg::of_scalar(HostValue::of_int(start))});
    });
    EXPECT_EQ(
        msg.rfind(
            "slice.tile:5:13: runtime error in kernel slicer, program (0,0,0): shared slice of 't'",
            0),
        0u)
        << msg;
    EXPECT_NE(msg.find(str("rows [", start, ", ", start + 16, ") of a tile with 64 rows")),
              std::string::npos)
        << msg;
  }
}

TEST(RefSemantics, ArgumentMismatchesNameTheTensorAndKernel) {
  LoadedModule m = load_tile_text("slice.tile", kSlice);
  auto ir = lower_to_ir(m.kernel(), complete_bindings(m.kernel(), {}), {}, "infer-types");
  HostBuffer x(DType::F32, {64, 8}), y16(DType::F16, {16, 8}), y(DType::F32, {15, 8});
  HostArg start = HostArg::of_scalar(HostValue::of_int(0));
  EXPECT_NE(error_of([&] {
              run_kernel(*ir, {x.arg(), y16.arg(), start}, {1, 1, 1});
            }).find("kernel 'slicer': tensor 'Y' must be f32, got f16[16, 8]"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] {
        run_kernel(*ir, {x.arg(), y.arg(), start}, {1, 1, 1});
      }).find("kernel 'slicer': tensor 'Y' must have 16 = 16 in dimension 0, got shape [15, 8]"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              run_kernel(*ir, {x.arg(), start}, {1, 1, 1});
            }).find("takes 3 arguments"),
            std::string::npos);
}

// ---- later passes ------------------------------------------------------------------------
TEST(RefSemantics, ConvertAndBarrierFromLaterPassesAreTransparent) {
  LoadedModule m = load_embedded_tile("examples/softmax.tile");
  auto ir = lower_to_ir(m.kernel(),
                        complete_bindings(m.kernel(), {{"BR", "1"}, {"BC", "64"}, {"WARPS", "1"}}),
                        {}, "infer-types");
  // Wrap every frag-valued statement root in a Convert and put a Barrier before every statement.
  std::function<void(ir::Block&)> rewrite = [&](ir::Block& b) {
    ir::Block out;
    for (auto& s : b) {
      out.push_back(std::make_unique<ir::Stmt>(ir::StmtKind::Barrier, s->loc));
      if (s->value && !s->value->type.is_scalar() && s->kind != ir::StmtKind::Eval) {
        auto c = std::make_unique<ir::Expr>(ir::ExprKind::Convert, s->value->loc);
        c->type = s->value->type;
        c->a = std::move(s->value);
        s->value = std::move(c);
      }
      rewrite(s->body);
      rewrite(s->else_body);
      out.push_back(std::move(s));
    }
    b = std::move(out);
  };
  rewrite(ir->body);
  const int64_t rows = 3, cols = 100;
  HostBuffer x(DType::F32, {rows, cols}), y(DType::F32, {rows, cols});
  for (int64_t k = 0; k < rows * cols; ++k) x.set(k, std::sin(0.37 * k));
  y.poison();
  run_kernel(*ir, {x.arg(), y.arg()}, {rows, 1, 1});
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += y.get(r * cols + c);
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
}

// ---- thread block clusters ------------------------------------------------------------------
TEST(RefSemantics, ClusterSumAddsThePartsOfEveryProgramOfTheCluster) {
  LoadedModule m = load_tile_file(TILEJIT_SOURCE_DIR "/tests/data/semantics.tile");
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> d(-2, 2);
  const int64_t R = 37;
  for (int split : {1, 2, 4, 8})
    for (int64_t C : {int64_t(1001), int64_t(5)}) {
      SCOPED_TRACE(str("SPLIT=", split, " C=", C));
      HostBuffer x(DType::F32, {R, C}), y(DType::F32, {R}), p(DType::I32, {R});
      for (int64_t k = 0; k < R * C; ++k) x.set(k, d(rng));
      y.poison();
      p.poison();
      run_tile(m.kernel("cluster_rowsum"), {{"SPLIT", std::to_string(split)}},
               {x.arg(), y.arg(), p.arg()});
      for (int64_t r = 0; r < R; ++r) {
        double sum = 0;
        for (int64_t c = 0; c < C; ++c) sum += x.get(r * C + c);
        EXPECT_NEAR(y.get(r), sum, 1e-4) << "row " << r;
        EXPECT_EQ(p.get(r), split * (split + 1) / 2) << "row " << r;
      }
    }
}

TEST(RefSemantics, ClusterGridThatIsNotAMultipleIsAnError) {
  const char* text = R"(kernel k(x: f32[N], y: f32[N]) grid (3) cluster (2) {
  frag s = cluster_sum(load(x[0 : 16]));
  store(y[program_id(0) * 16 : program_id(0) * 16 + 16], s);
}
)";
  HostBuffer x(DType::F32, {48}), y(DType::F32, {48});
  x.fill(1);
  const std::string e = error_of([&] { run_text("cl.tile", text, {x.arg(), y.arg()}); });
  EXPECT_NE(e.find("grid extent 0 = 3 is not a multiple of the cluster's 2"), std::string::npos)
      << e;
}

} // namespace
} // namespace tilejit::ref
