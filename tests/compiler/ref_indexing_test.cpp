// The reference interpreter on issue 12's indexing and broadcasting rules
// (tests/data/semantics.tile): two gathers in one access are an outer product whatever the
// tile sizes, zip(...) pairs them; dimensions declared 1|X broadcast a size-1 argument; point
// and gather subscripts out of range are errors naming the tensor, dimension, index, size and
// line (not silent reads of `other`), except where masked off or in loads that unroll-loops
// runs ahead; [N, 1] register tiles broadcast like [N] with [:, None].
#include "compiler/kernel_library.h"
#include "compiler/pipeline.h"
#include "compiler/ref/float_formats.h"
#include "compiler/ref/interpreter.h"
#include "compiler/ref/run_tile.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

namespace tilejit::ref {
namespace {

const std::string kSemantics = TILEJIT_SOURCE_DIR "/tests/data/semantics.tile";

RunResult run(const std::string& kernel, const std::vector<HostArg>& args,
              const Bindings& given = {}) {
  static LoadedModule m = load_tile_file(kSemantics);
  return run_tile(m.kernel(kernel), given, args);
}

RunResult run_text(const std::string& text, const std::vector<HostArg>& args,
                   const Bindings& given = {}) {
  LoadedModule m = load_tile_text("indexing.tile", text);
  return run_tile(m.kernel(), given, args);
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

HostBuffer ints(DType t, std::vector<int64_t> shape, std::mt19937& rng, int64_t lo, int64_t hi) {
  HostBuffer b(t, std::move(shape));
  std::uniform_int_distribution<int64_t> d(lo, hi);
  for (int64_t k = 0; k < b.numel(); ++k) b.set_int(k, d(rng));
  return b;
}

HostBuffer floats(DType t, std::vector<int64_t> shape, std::mt19937& rng) {
  HostBuffer b(t, std::move(shape));
  std::uniform_real_distribution<double> d(-2, 2);
  for (int64_t k = 0; k < b.numel(); ++k) b.set(k, d(rng));
  return b;
}

// ---- gathers ------------------------------------------------------------------------------
TEST(RefIndexing, TwoGathersAreAnOuterProductForEveryTileShape) {
  uint32_t seed = test::fresh_seed();
  SCOPED_TRACE(str("seed=", seed));
  std::mt19937 rng(seed);
  const int64_t G = 5, N = 19, K = 37, C = 23;
  HostBuffer z = ints(DType::I32, {G, N}, rng, -1000, 1000);
  HostBuffer gidx = ints(DType::I32, {K}, rng, 0, G - 1);
  HostBuffer cols = ints(DType::I32, {C}, rng, 0, N - 1);
  // BK == BN and BK != BN must mean the same (the line used to zip equal lengths).
  for (const char* bn : {"8", "16", "64"})
    for (const char* bk : {"16", "32"}) {
      SCOPED_TRACE(str("BK=", bk, " BN=", bn));
      HostBuffer y(DType::I32, {K, C});
      y.poison();
      run("outer_gather", {z.arg(), gidx.arg(), cols.arg(), y.arg()}, {{"BK", bk}, {"BN", bn}});
      for (int64_t k = 0; k < K; ++k)
        for (int64_t c = 0; c < C; ++c)
          ASSERT_EQ(y.get_int(k * C + c), z.get_int(gidx.get_int(k) * N + cols.get_int(c)) * 3 + 1)
              << "Y[" << k << ", " << c << "]";
    }
}

TEST(RefIndexing, OuterProductIntoSharedMemoryWithMaskAndOther) {
  uint32_t seed = test::fresh_seed();
  SCOPED_TRACE(str("seed=", seed));
  std::mt19937 rng(seed);
  const int64_t G = 7, N = 41, K = 21, C = 45;
  HostBuffer s = floats(DType::F16, {G, N}, rng);
  HostBuffer gidx = ints(DType::I32, {K}, rng, 0, G - 1);
  HostBuffer cols = ints(DType::I32, {C}, rng, 0, N - 1);
  for (const char* bk : {"16", "64"}) {
    HostBuffer y(DType::F32, {K, C});
    y.poison();
    run("outer_gather_shared", {s.arg(), gidx.arg(), cols.arg(), y.arg()}, {{"BK", bk}});
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < C; ++c) {
        int64_t col = cols.get_int(c);
        double want = col % 3 == 1 ? 1.0 : 2.0 * s.get(gidx.get_int(k) * N + col);
        ASSERT_EQ(y.get(k * C + c), want) << "Y[" << k << ", " << c << "] BK=" << bk;
      }
  }
}

TEST(RefIndexing, ZipPairsIndexTiles) {
  uint32_t seed = test::fresh_seed();
  SCOPED_TRACE(str("seed=", seed));
  std::mt19937 rng(seed);
  const int64_t P = 6, PS = 5, D = 70, R = 33;
  HostBuffer x = floats(DType::F32, {P, PS, D}, rng);
  HostBuffer page = ints(DType::I32, {R}, rng, 0, P - 1);
  HostBuffer slot = ints(DType::I32, {R}, rng, 0, PS - 1);
  HostBuffer y(DType::F32, {R, D});
  y.poison();
  run("zip_gather", {x.arg(), page.arg(), slot.arg(), y.arg()});
  for (int64_t r = 0; r < R; ++r)
    for (int64_t d = 0; d < D; ++d)
      ASSERT_EQ(y.get(r * D + d), 2 * x.get((page.get_int(r) * PS + slot.get_int(r)) * D + d))
          << "Y[" << r << ", " << d << "]";
}

const char* kZipLengths = R"(kernel k(X: f32[A, B], Y: f32[8]) grid (1) {
  store(Y[0 : 8], load(X[zip(iota(8), iota(4))]));
}
)";

TEST(RefIndexing, ZippedTilesOfDifferentLengthsAreAnError) {
  HostBuffer x(DType::F32, {8, 8}), y(DType::F32, {8});
  std::string e = error_of([&] { run_text(kZipLengths, {x.arg(), y.arg()}); });
  EXPECT_NE(e.find("zip(...) pairs index tiles of one length; got [8] and [4]"), std::string::npos)
      << e;
}

// ---- out-of-range subscripts -----------------------------------------------------------------
TEST(RefIndexing, PointAndGatherSubscriptsOutOfRangeAreErrors) {
  const int64_t N = 9, M = 12;
  HostBuffer x(DType::F32, {N}), y(DType::F32, {M});
  for (int64_t k = 0; k < N; ++k) x.set(k, 10 + k);
  HostBuffer idx(DType::I32, {M});
  for (int64_t k = 0; k < M; ++k) idx.set_int(k, k % N);
  // In range: Y[j] = X[idx[j]] + X[idx[M - 1]] for j < M - 1, then Y[0] = X[idx[M - 1]].
  run("point_index", {x.arg(), idx.arg(), y.arg()});
  EXPECT_EQ(y.get(0), 12);
  EXPECT_EQ(y.get(5), 15 + 12);

  // A gathered index out of range (element 3 of the index tile) at an unmasked element.
  idx.set_int(3, -2);
  std::string e = error_of([&] { run("point_index", {x.arg(), idx.arg(), y.arg()}); });
  EXPECT_NE(e.find("semantics.tile:"), std::string::npos) << e;
  EXPECT_NE(e.find("runtime error in kernel point_index, program (0,0,0): gathered index -2 is "
                   "out of bounds for dimension 0 ('N') of 'X' of size 9 (at element 3 of the "
                   "access)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("frag g = load(X[i], mask = iota(16) < M - 1);"), std::string::npos) << e;

  // idx[M - 1] = N: the gather masks it off and so does the guarded point load; the unguarded
  // point is the error, at its line. (Entries of idx[0 : 16] past M read 0: a range.)
  idx.set_int(3, 3);
  idx.set_int(M - 1, N);
  e = error_of([&] { run("point_index", {x.arg(), idx.arg(), y.arg()}); });
  EXPECT_NE(e.find("): index 9 is out of bounds for dimension 0 ('N') of 'X' of size 9; mask it "
                   "off with mask= if it is expected"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("store(Y[0], load(X[n]));"), std::string::npos) << e;
}

const char* kSizeOne = R"(kernel k(X: f32[B, N], Y: f32[B, N])
  grid (B)
{
  let b = program_id(0);
  store(Y[b, 0 : 4], load(X[b, 0 : 4]));
}
)";

TEST(RefIndexing, ASizeOneDimensionDoesNotBroadcastUnlessDeclared) {
  // Y has B = 3 rows, X only one: X[1, :] is out of range, not a row of zeros.
  HostBuffer x(DType::F32, {1, 4}), y(DType::F32, {3, 4});
  std::string e = error_of([&] { run_text(kSizeOne, {x.arg(), y.arg()}); });
  // The launch check comes first: B disagrees between X and Y.
  EXPECT_NE(e.find("'Y' (Y: f32[B, N]) has B = 3 in dimension 0 but B = 1 from 'X' dimension 0"),
            std::string::npos)
      << e;
  const char* text = R"(kernel k(X: f32[A, N], Y: f32[B, N])
  grid (B)
{
  let b = program_id(0);
  store(Y[b, 0 : 4], load(X[b, 0 : 4]));
}
)";
  e = error_of([&] { run_text(text, {x.arg(), y.arg()}); });
  EXPECT_NE(e.find("program (1,0,0): index 1 is out of bounds for dimension 0 ('A') of 'X' of "
                   "size 1; a dimension of size 1 broadcasts only when declared 1|A"),
            std::string::npos)
      << e;
}

const char* kUnrolled = R"(kernel k(X: f32[T, 8], Y: f32[8], n: i32)
  grid (1)
{
  frag acc: f32[8] = 0;
  for i in range(0, n, unroll = 4) {
    frag v = load(X[i, :]);
    acc = acc + v;
  }
  store(Y[0 : 8], acc);
}
)";

TEST(RefIndexing, LoadsRunAheadByUnrollReportOnlyWhenTheirIterationRuns) {
  const int64_t T = 6;
  HostBuffer x(DType::F32, {T, 8}), y(DType::F32, {8});
  for (int64_t k = 0; k < T * 8; ++k) x.set(k, k % 8 + 1);
  // n = 6: the second group of four loads rows 4..7; rows 6 and 7 do not exist, but their
  // iterations do not run either.
  run_text(kUnrolled, {x.arg(), y.arg(), HostArg::of_scalar(HostValue::of_int(T))});
  for (int64_t c = 0; c < 8; ++c) EXPECT_EQ(y.get(c), T * (c + 1));
  // n = 7: iteration 6 runs and reads row 6.
  std::string e = error_of([&] {
    run_text(kUnrolled, {x.arg(), y.arg(), HostArg::of_scalar(HostValue::of_int(7))});
  });
  EXPECT_NE(e.find("indexing.tile:6:20: runtime error in kernel k, program (0,0,0): index 6 is "
                   "out of bounds for dimension 0 ('T') of 'X' of size 6"),
            std::string::npos)
      << e;
}

// ---- broadcast dimensions -----------------------------------------------------------------
TEST(RefIndexing, BroadcastDimensionsAcceptOneOrTheFullSize) {
  uint32_t seed = test::fresh_seed();
  SCOPED_TRACE(str("seed=", seed));
  std::mt19937 rng(seed);
  const int64_t B = 3, H = 5, N = 150, BS = 16, NB = (N + BS - 1) / BS;
  HostBuffer x = floats(DType::F32, {B, H, N}, rng);
  // Not structured bindings: clang 14 (the sanitized build) cannot capture them in lambdas.
  for (std::pair<int64_t, int64_t> mask_dims :
       std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {B, 1}, {1, H}, {B, H}})
    for (int64_t nbias : {int64_t(1), B}) {
      const int64_t mb = mask_dims.first, mh = mask_dims.second;
      SCOPED_TRACE(str("mask [", mb, ", ", mh, ", NB], bias [", nbias, "]"));
      HostBuffer mask = ints(DType::U8, {mb, mh, NB}, rng, 0, 1);
      HostBuffer bias = floats(DType::F32, {nbias}, rng);
      HostBuffer y(DType::F32, {B, H, N});
      y.poison();
      run("broadcast_dims", {x.arg(), mask.arg(), bias.arg(), y.arg()});
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t c = 0; c < N; ++c) {
            auto m = [&](int64_t blk) {
              if (blk >= NB) return 0.0;
              return mask.get(((mb == 1 ? 0 : b) * mh + (mh == 1 ? 0 : h)) * NB + blk);
            };
            int64_t p = c / (BS * 4);
            double kept = 0;
            for (int64_t j = 0; j < 4; ++j) kept += m(p * 4 + j) != 0;
            float want =
                static_cast<float>(x.get((b * H + h) * N + c) * static_cast<float>(m(c / BS)));
            want = want + static_cast<float>(bias.get(nbias == 1 ? 0 : b));
            want = want + static_cast<float>(kept);
            ASSERT_EQ(y.get((b * H + h) * N + c), want) << b << " " << h << " " << c;
          }
    }
}

TEST(RefIndexing, BroadcastDimensionOfAnotherSizeIsALaunchError) {
  HostBuffer x(DType::F32, {3, 5, 40}), mask(DType::U8, {2, 5, 3}), bias(DType::F32, {1}),
      y(DType::F32, {3, 5, 40});
  std::string e = error_of([&] {
    run("broadcast_dims", {x.arg(), mask.arg(), bias.arg(), y.arg()});
  });
  EXPECT_NE(e.find("kernel 'broadcast_dims': tensor 'mask' (mask: u8[1|B, 1|H, NB]) has 2 in "
                   "dimension 0, which must be 1 (broadcast) or B = 3 from 'X' dimension 0; got "
                   "shape [2, 5, 3]"),
            std::string::npos)
      << e;
}

TEST(RefIndexing, RunKernelExpandsBroadcastDimensionsItself) {
  // run_kernel (without run_tile's launch plan) reads a size-1 argument as size B too.
  static LoadedModule m = load_tile_file(kSemantics);
  const dsl::Kernel& k = m.kernel("broadcast_dims");
  auto ir = lower_to_ir(k, complete_bindings(k, {}), CompileOptions{}, "infer-types");
  HostBuffer x(DType::F32, {2, 1, 64}), mask(DType::U8, {1, 1, 4}), bias(DType::F32, {1}),
      y(DType::F32, {2, 1, 64});
  x.fill(1);
  mask.fill(1);
  bias.fill(0.5);
  run_kernel(*ir, {x.arg(), mask.arg(), bias.arg(), y.arg()}, {1, 1, 2});
  EXPECT_EQ(y.get(64 + 63), 1 + 0.5 + 4);
}

// ---- [N, 1] register tiles ------------------------------------------------------------------
TEST(RefIndexing, UnitAxisTilesBroadcastLikeRank1Tiles) {
  uint32_t seed = test::fresh_seed();
  SCOPED_TRACE(str("seed=", seed));
  std::mt19937 rng(seed);
  const int64_t R = 37, C = 29;
  HostBuffer x = floats(DType::F32, {R, C}, rng);
  for (const char* br : {"1", "2", "16"}) {
    SCOPED_TRACE(str("BR=", br));
    const int64_t BR = std::stoi(br), BC = 32;
    HostBuffer y(DType::F32, {R, C}), z(DType::F32, {R, C});
    y.poison();
    z.poison();
    run("unit_axis", {x.arg(), y.arg(), z.arg()}, {{"BR", br}});
    for (int64_t r0 = 0; r0 < R; r0 += BR)
      for (int64_t r = r0; r < std::min(R, r0 + BR); ++r) {
        auto at = [&](int64_t i, int64_t c) {
          return i < R && c < C ? static_cast<float>(x.get(i * C + c)) : -1.0f;
        };
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t c = 0; c < BC; ++c) mx = std::fmax(mx, at(r, c));
        for (int64_t c = 0; c < C; ++c) {
          float col = -std::numeric_limits<float>::infinity();
          for (int64_t i = r0; i < r0 + BR; ++i) col = std::fmax(col, at(i, c));
          float want = (at(r, c) - mx) * 2.0f + col - mx * 0.5f;
          ASSERT_EQ(y.get(r * C + c), want) << "Y[" << r << ", " << c << "]";
          ASSERT_EQ(z.get(r * C + c), at(r, c) - at(r, 1) + mx) << "Z[" << r << ", " << c << "]";
        }
      }
  }
}

// A row sum read as s[:, None]: added, stored and summed once per row.
TEST(RefIndexing, UnitAxisOfARowSumCountsEachRowOnce) {
  uint32_t seed = test::fresh_seed();
  SCOPED_TRACE(str("seed=", seed));
  std::mt19937 rng(seed);
  const int64_t R = 37, C = 21;
  HostBuffer x = floats(DType::F32, {R, C}, rng);
  for (const char* br : {"1", "2", "16"})
    for (const char* bc : {"16", "32"}) {
      SCOPED_TRACE(str("BR=", br, " BC=", bc));
      HostBuffer y = floats(DType::F32, {R, 4}, rng), z(DType::F32, {R});
      const HostBuffer y0 = y;
      z.poison();
      run("unit_axis_sums", {x.arg(), y.arg(), z.arg()}, {{"BR", br}, {"BC", bc}});
      const int64_t BC = std::stoi(bc);
      for (int64_t r = 0; r < R; ++r) {
        float s = 0;
        for (int64_t c = 0; c < std::min(BC, C); ++c) s += static_cast<float>(x.get(r * C + c));
        EXPECT_NEAR(y.get(r * 4 + 1), y0.get(r * 4 + 1) + s, 1e-5) << r;
        EXPECT_NEAR(y.get(r * 4 + 2), 2 * s, 1e-5) << r;
        EXPECT_EQ(y.get(r * 4 + 0), y0.get(r * 4 + 0)) << r;
        EXPECT_EQ(y.get(r * 4 + 3), y0.get(r * 4 + 3)) << r;
        EXPECT_NEAR(z.get(r), 1.5 * s, 1e-5) << r;
      }
    }
}

TEST(RefIndexing, OneByOneTilesBroadcast) {
  uint32_t seed = test::fresh_seed();
  SCOPED_TRACE(str("seed=", seed));
  std::mt19937 rng(seed);
  const int64_t R = 23, C = 30;
  HostBuffer x = floats(DType::F32, {R, C}, rng);
  for (const char* br : {"1", "4", "16"}) {
    HostBuffer y(DType::F32, {R, C});
    y.poison();
    run("unit_corner", {x.arg(), y.arg()}, {{"BR", br}});
    float corner = static_cast<float>(x.get(0));
    for (int64_t k = 0; k < R * C; ++k)
      ASSERT_EQ(y.get(k), static_cast<float>(x.get(k)) * corner + 2.0f) << k << " BR=" << br;
  }
}

TEST(RefIndexing, DotWithOneColumnBroadcasts) {
  uint32_t seed = test::fresh_seed();
  SCOPED_TRACE(str("seed=", seed));
  std::mt19937 rng(seed);
  const int64_t M = 45, C = 30;
  HostBuffer a = floats(DType::F16, {M, 16}, rng), v = floats(DType::F16, {16, 1}, rng),
             x = floats(DType::F32, {M, C}, rng);
  HostBuffer y(DType::F32, {M, C});
  y.poison();
  run("unit_dot", {a.arg(), v.arg(), x.arg(), y.arg()});
  for (int64_t m = 0; m < M; ++m) {
    float s = 0;
    for (int64_t k = 0; k < 16; ++k)
      s = std::fma(static_cast<float>(a.get(m * 16 + k)), static_cast<float>(v.get(k)), s);
    for (int64_t c = 0; c < C; ++c)
      ASSERT_EQ(y.get(m * C + c), static_cast<float>(x.get(m * C + c)) * s) << m << " " << c;
  }
}

} // namespace
} // namespace tilejit::ref
