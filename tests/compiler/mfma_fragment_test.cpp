// gfx90a's dot without an AMD GPU: tj::dot_mfma's fragment maps (kernels_src/prelude/tj/
// mfma_map.cuh, compiled here for the host) against a model of v_mfma_f32_16x16x{16,4} written
// from AMD's CDNA2 ISA description, and the MfmaAcc layout the compiler assigns
// (ir::accumulator_element) against the prelude's, on odd tile sizes and every wave
// arrangement: a wrong fragment mapping gives a wrong product here, on a CPU.
#define TJ_HD inline
#include "tj/mfma_map.cuh"

#include "compiler/layout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <vector>

namespace tilejit {
namespace {

/// The instruction, as the ISA describes it: a wave of 64 computes a 16 x 16 block D += A B,
/// K = 4 * per deep; operand element A[i][k] comes from lane i + 16 * (k / per), register
/// k % per; B[k][j] from lane j + 16 * (k / per), register k % per; D[i][j] lands in lane
/// j + 16 * (i / 4), register i % 4. (Independent of mfma_map.cuh: written from the element's
/// side, not the lane's.)
void mfma_model(int per, const float (&a)[64][4], const float (&b)[64][4], float (&d)[64][4]) {
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      double s = 0;
      for (int k = 0; k < 4 * per; ++k)
        s += double(a[i + 16 * (k / per)][k % per]) * double(b[j + 16 * (k / per)][k % per]);
      d[j + 16 * (i / 4)][i % 4] += static_cast<float>(s);
    }
}

/// What one wave of tj::dot_mfma does with its blocks (the loop of tj/dot_mfma.cuh over the
/// MfmaAcc's MT x NTL blocks, K in steps of the instruction's depth, zero past the tile),
/// through the maps `Blk` gives, with the model in place of the instruction.
template <class Blk>
void dot_mfma_on_cpu(const ir::Layout& l, int wave, const std::vector<float>& A,
                     const std::vector<float>& B, int64_t K, std::vector<std::vector<float>>& acc,
                     int per) {
  const int64_t M = l.shape[0], N = l.shape[1];
  const int wm = wave % l.wm, wn = wave / l.wm;
  const int64_t pm = (M + 16 * l.wm - 1) / (16 * l.wm) * (16 * l.wm);
  const int64_t pn = (N + 16 * l.wn - 1) / (16 * l.wn) * (16 * l.wn);
  const int64_t wtm = pm / l.wm, wtn = pn / l.wn;
  const int mt = static_cast<int>(wtm / 16), ntl = static_cast<int>(wtn / 16);
  for (int blk = 0; blk < mt * ntl; ++blk) {
    const int64_t row0 = wm * wtm + (blk / ntl) * 16, col0 = wn * wtn + (blk % ntl) * 16;
    float d[64][4];
    for (int lane = 0; lane < 64; ++lane)
      for (int i = 0; i < 4; ++i) d[lane][i] = acc[wave * 64 + lane][blk * 4 + i];
    for (int64_t k0 = 0; k0 < K; k0 += Blk::K) {
      float a[64][4] = {}, b[64][4] = {};
      for (int lane = 0; lane < 64; ++lane)
        for (int j = 0; j < per; ++j) {
          const int64_t ar = row0 + Blk::a_row(lane), ka = k0 + Blk::a_k(lane, j);
          const int64_t bc = col0 + Blk::b_col(lane), kb = k0 + Blk::b_k(lane, j);
          if (ar < M && ka < K) a[lane][j] = A[ar * K + ka];
          if (bc < N && kb < K) b[lane][j] = B[kb * N + bc];
        }
      mfma_model(per, a, b, d);
    }
    for (int lane = 0; lane < 64; ++lane)
      for (int i = 0; i < 4; ++i) acc[wave * 64 + lane][blk * 4 + i] = d[lane][i];
  }
}

/// The largest difference between the simulated accumulator, read through the layout, and
/// the reference product; every element of every thread checked (padding must stay 0).
template <class Blk>
double worst_error(int64_t M, int64_t N, int64_t K, int wm, int wn, int per, uint32_t seed) {
  ir::LayoutTable table;
  table.set_warp_size(64);
  const ir::Layout& l = *table.mfma_acc(M, N, wm, wn, wm * wn * 64);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> A(M * K), B(K * N);
  for (float& x : A) x = u(rng);
  for (float& x : B) x = u(rng);
  const int threads = wm * wn * 64;
  const int64_t per_thread = l.per_thread();
  std::vector<std::vector<float>> acc(threads, std::vector<float>(per_thread, 0.f));
  for (int wave = 0; wave < wm * wn; ++wave) dot_mfma_on_cpu<Blk>(l, wave, A, B, K, acc, per);
  double worst = 0;
  for (int t = 0; t < threads; ++t)
    for (int e = 0; e < per_thread; ++e) {
      const ir::ElementCoord c = ir::accumulator_element(l, t, e);
      double want = 0;
      if (c.row < M && c.col < N)
        for (int64_t k = 0; k < K; ++k) want += double(A[c.row * K + k]) * B[k * N + c.col];
      worst = std::max(worst, std::abs(acc[t][e] - want));
    }
  return worst;
}

TEST(MfmaFragments, TheDotMatchesTheInstructionModel) {
  struct Case {
    int64_t m, n, k;
    int wm, wn;
  };
  for (const Case& c : {Case{16, 16, 16, 1, 1}, Case{64, 64, 32, 2, 1}, Case{40, 24, 20, 1, 2},
                        Case{33, 70, 37, 2, 2}, Case{128, 16, 64, 4, 1}, Case{17, 130, 9, 1, 4}}) {
    SCOPED_TRACE(testing::Message()
                 << c.m << "x" << c.n << "x" << c.k << " waves " << c.wm << "x" << c.wn);
    EXPECT_LT((worst_error<tj::mfma::Block16<4>>(c.m, c.n, c.k, c.wm, c.wn, 4, 1)), 1e-4);
    EXPECT_LT((worst_error<tj::mfma::Block16<1>>(c.m, c.n, c.k, c.wm, c.wn, 1, 2)), 1e-4);
  }
}

/// A map that differs from the instruction's (A's K groups read along the lane's low bits, as
/// NVIDIA's fragments are) gives a wrong product: the test above can fail.
struct WrongA : tj::mfma::Block16<4> {
  static int a_row(int lane) { return lane / 4 % 16; }
  static int a_k(int lane, int j) { return 4 * (lane % 4) + j; }
};
TEST(MfmaFragments, AWrongMapIsCaught) {
  EXPECT_GT((worst_error<WrongA>(32, 32, 32, 1, 1, 4, 3)), 1e-2);
}

/// The compiler's element coordinates are the prelude's (tj::mfma::AccMap, which tj::MfmaAcc
/// returns as r and c), for each wave and lane of a 2 x 2 arrangement over a padded tile.
TEST(MfmaFragments, TheCompilersLayoutIsThePreludes) {
  ir::LayoutTable table;
  table.set_warp_size(64);
  const ir::Layout& l = *table.mfma_acc(50, 70, 2, 2, 256); // padded to 64 x 96
  using Map = tj::mfma::AccMap<32, 48>;
  ASSERT_EQ(l.per_thread(), Map::MT * Map::NTL * 4);
  for (int t = 0; t < 256; ++t)
    for (int e = 0; e < l.per_thread(); ++e) {
      const int wave = t / 64, lane = t % 64;
      const ir::ElementCoord c = ir::accumulator_element(l, t, e);
      EXPECT_EQ(c.row, Map::row(wave % 2, lane, e)) << t << " " << e;
      EXPECT_EQ(c.col, Map::col(wave / 2, lane, e)) << t << " " << e;
    }
}

/// A row (column) reduction over MfmaAcc as the prelude's reduce does it: each lane sums its
/// elements into slice slots (slice_index), lanes that differ only in lane_bits are combined,
/// then waves along the axis; the owner of each slot stores it. Checked here: every element
/// lands in the slot whose coordinate is its row (column), the lanes combined share that row
/// (column), exactly one owner per row (column) of the padded tile, and the compiler's Slice
/// layout holds slice_n values per thread.
template <int AXIS> void check_reduction() {
  ir::LayoutTable table;
  table.set_warp_size(64);
  const ir::Layout& l = *table.mfma_acc(50, 70, 2, 2, 256); // padded to 64 x 96
  using Map = tj::mfma::AccMap<32, 48>;
  EXPECT_EQ(table.slice(&l, AXIS)->per_thread(), Map::slice_n<AXIS>());
  std::map<int, int> owners; // coordinate -> owners
  for (int t = 0; t < 256; ++t) {
    const int wave = t / 64, lane = t % 64, wm = wave % 2, wn = wave / 2;
    for (int e = 0; e < l.per_thread(); ++e) {
      const ir::ElementCoord c = ir::accumulator_element(l, t, e);
      const int s = Map::slice_index<AXIS>(e);
      ASSERT_LT(s, Map::slice_n<AXIS>());
      EXPECT_EQ(Map::slice_coord<AXIS>(wm, wn, lane, s), AXIS == 1 ? c.row : c.col)
          << t << " " << e;
      // The lanes this one is combined with (its lane_bits varied) hold the same coordinate.
      for (int other = 0; other < 64; ++other) {
        if ((other & ~Map::lane_bits<AXIS>()) != (lane & ~Map::lane_bits<AXIS>())) continue;
        EXPECT_EQ(Map::slice_coord<AXIS>(wm, wn, other, s),
                  Map::slice_coord<AXIS>(wm, wn, lane, s));
      }
    }
    for (int s = 0; s < Map::slice_n<AXIS>(); ++s)
      if (Map::slice_owner<AXIS>(wm, wn, lane)) ++owners[Map::slice_coord<AXIS>(wm, wn, lane, s)];
  }
  EXPECT_EQ(owners.size(), AXIS == 1 ? 64u : 96u);
  for (const auto& [coord, n] : owners) EXPECT_EQ(n, 1) << coord;
}

TEST(MfmaFragments, RowAndColumnReductionsCombineTheRightLanes) {
  check_reduction<1>();
  check_reduction<0>();
}

} // namespace
} // namespace tilejit
