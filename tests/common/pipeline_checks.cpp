// Pipelined-loop checks shared by the interpreter (CPU) and GPU tests.
#include "pipeline_checks.h"

#include "compiler/ref/float_formats.h"
#include "support/text.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace tilejit::test {

std::string pipelines_source(const char* kernel) {
  return test_data_path("tests/data/pipelines.tile") + "#" + kernel;
}

namespace {

/// X[row, col] where the row exists, else 0 (what a masked copy leaves).
double at(const HostBuffer& x, int64_t n, int64_t c, int64_t row, int64_t col) {
  return row < n ? x.get(row * c + col) : 0.0;
}

} // namespace

void check_reverse_blocks(const KernelRunner& run, int64_t n, int64_t c, const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("reverse_blocks N=", n, " C=", c, " ", config_text(config), "seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer x(DType::F32, {n, c}), y(DType::F32, {16, c});
  fill_uniform(x, rng, -1, 1);
  y.poison();
  run(pipelines_source("reverse_blocks"), config, {TestArg::of(x), TestArg::of(y)});
  std::vector<double> want(16 * c, 0.0);
  for (int64_t blk = (n + 15) / 16 - 1; blk >= 0; --blk)
    for (int64_t r = 0; r < 16; ++r)
      for (int64_t col = 0; col < c; ++col)
        want[r * c + col] = want[r * c + col] * 0.5 + at(x, n, c, blk * 16 + r, col);
  expect_close(y, want, 1e-5);
}

void check_kept_blocks(const KernelRunner& run, int64_t n, int64_t c, double keep_share,
                       const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("kept_blocks N=", n, " C=", c, " kept ", keep_share, " ", config_text(config),
                   "seed=", seed));
  std::mt19937 rng(seed);
  const int64_t nb = (n + 15) / 16;
  HostBuffer x(DType::F32, {n, c}), keep(DType::I32, {nb}), y(DType::F32, {16, c});
  fill_uniform(x, rng, -1, 1);
  std::bernoulli_distribution kept(keep_share);
  for (int64_t b = 0; b < nb; ++b) keep.set_int(b, kept(rng) ? 1 : 0);
  if (keep_share > 0 && keep_share < 1 && nb > 2) {
    keep.set_int(0, 0); // a skipped first block and a kept last one
    keep.set_int(nb - 1, 1);
  }
  y.poison();
  run(pipelines_source("kept_blocks"), config, {TestArg::of(x), TestArg::of(keep), TestArg::of(y)});
  std::vector<double> want(16 * c, 0.0);
  for (int64_t blk = 0; blk < nb; ++blk) {
    if (keep.get_int(blk) == 0) continue;
    for (int64_t r = 0; r < 16; ++r)
      for (int64_t col = 0; col < c; ++col)
        want[r * c + col] = want[r * c + col] * 0.5 + at(x, n, c, blk * 16 + r, col);
  }
  bool any = false;
  for (int64_t b = 0; b < nb; ++b) any = any || keep.get_int(b) != 0;
  if (!any) {
    for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.get(i), 0.0) << "element " << i;
    return;
  }
  expect_close(y, want, 1e-5);
}

void check_listed_blocks(const KernelRunner& run, int64_t n, int64_t c, int64_t listed,
                         int64_t count, const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("listed_blocks N=", n, " C=", c, " listed ", listed, " count ", count, " ",
                   config_text(config), "seed=", seed));
  std::mt19937 rng(seed);
  const int64_t nb = (n + 15) / 16;
  HostBuffer x(DType::F32, {n, c}), idx(DType::I32, {listed}), cnt(DType::I32, {1}),
      hits(DType::I32, {listed}), y(DType::F32, {16, c});
  fill_uniform(x, rng, -1, 1);
  std::uniform_int_distribution<int64_t> block(-2, nb + 1);
  for (int64_t i = 0; i < listed; ++i) {
    idx.set_int(i, block(rng));
    hits.set_int(i, static_cast<int64_t>(i) * 3);
  }
  cnt.set_int(0, count);
  y.poison();
  run(pipelines_source("listed_blocks"), config,
      {TestArg::of(x), TestArg::of(idx), TestArg::of(cnt), TestArg::of(hits), TestArg::of(y)});
  const int64_t used = std::min(count, listed);
  std::vector<double> want(16 * c, 0.0);
  for (int64_t i = 0; i < used; ++i) {
    const int64_t blk = idx.get_int(i);
    if (blk < 0 || blk * 16 >= n) continue;
    for (int64_t r = 0; r < 16; ++r)
      for (int64_t col = 0; col < c; ++col)
        want[r * c + col] = want[r * c + col] * 0.5 + at(x, n, c, blk * 16 + r, col);
  }
  bool any = false;
  for (double w : want) any = any || w != 0.0;
  if (any) {
    expect_close(y, want, 1e-5);
  } else { // nothing listed in range: zeros
    for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y.get(i), 0.0) << "element " << i;
  }
  // Program 0 counted each iteration once (its loads of `hits` are not read ahead of the
  // iteration before's store).
  for (int64_t i = 0; i < listed; ++i)
    EXPECT_EQ(hits.get_int(i), i * 3 + (i < used ? 1 : 0)) << "hits[" << i << "]";
}

void check_reused_rows(const KernelRunner& run, int64_t rows, int64_t n, int64_t count,
                       const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("reused_rows R=", rows, " N=", n, " items ", count, " ", config_text(config),
                   "seed=", seed));
  std::mt19937 rng(seed);
  const int64_t d = 64;
  HostBuffer a(DType::BF16, {rows, d}), x(DType::BF16, {n, d}), items(DType::I32, {count, 2}),
      y(DType::F32, {count, d, d});
  fill_uniform(a, rng, -1, 1);
  fill_uniform(x, rng, -1, 1);
  // Row starts: runs of 1 to 4 of one block, a block of two items back now and then (what a
  // slot of a 2-stage ring holds), some past the rows (zeros); columns anywhere, past n too.
  std::uniform_int_distribution<int64_t> start(0, rows + 8), col(0, n + 8), run_len(1, 4),
      pick(0, 3);
  for (int64_t i = 0; i < count;) {
    // (The first item inside both tensors: never an all-zero reference.)
    const int64_t r = i == 0                     ? start(rng) % rows
                      : i >= 2 && pick(rng) == 0 ? items.get_int((i - 2) * 2)
                                                 : start(rng);
    for (int64_t k = run_len(rng); k > 0 && i < count; --k, ++i) {
      items.set_int(i * 2, r);
      items.set_int(i * 2 + 1, i == 0 ? col(rng) % n : col(rng));
    }
  }
  y.poison();
  run(pipelines_source("reused_rows"), config,
      {TestArg::of(a), TestArg::of(x), TestArg::of(items), TestArg::of(y)});
  auto av = [&](int64_t row, int64_t c) { return row < rows ? a.get(row * d + c) : 0.0; };
  auto xv = [&](int64_t row, int64_t c) { return row < n ? x.get(row * d + c) : 0.0; };
  std::vector<double> want(count * d * d);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t r = items.get_int(i * 2), c0 = items.get_int(i * 2 + 1);
    std::vector<double> p(d * d);
    for (int64_t u = 0; u < d; ++u)
      for (int64_t j = 0; j < d; ++j) {
        double s = 0;
        for (int64_t c = 0; c < d; ++c) s += av(r + u, c) * xv(c0 + j, c);
        p[u * d + j] = ref::bf16_bits_to_f64(ref::f64_to_bf16_bits(static_cast<float>(s) * 0.125));
      }
    for (int64_t u = 0; u < d; ++u)
      for (int64_t c = 0; c < d; ++c) {
        double s = 0;
        for (int64_t j = 0; j < d; ++j) s += p[u * d + j] * xv(c0 + j, c);
        want[(i * d + u) * d + c] = s;
      }
  }
  // The passes from assign-layouts on compute the products as the tensor cores do, within
  // ~1.5e-3 of this reference (p's bf16 rounding); a stale row block in one item of 40 is
  // ~0.15 off.
  expect_close(y, want, 5e-3);
}

void check_tiles_in_turn(const KernelRunner& run, int64_t n, int64_t tiles, int64_t listed,
                         const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("tiles_in_turn N=", n, " tiles ", tiles, " listed ", listed, " ",
                   config_text(config), "seed=", seed));
  std::mt19937 rng(seed);
  const int64_t batches = 3, d = 64;
  auto bn_it = config.find("BN");
  const int64_t bn = bn_it == config.end() ? 64 : std::stoll(bn_it->second);
  HostBuffer q(DType::BF16, {tiles, d, d}), x(DType::BF16, {batches, n, d}),
      order(DType::I32, {listed}), y(DType::F32, {tiles, d, d});
  fill_uniform(q, rng, -1, 1);
  fill_uniform(x, rng, -1, 1);
  std::uniform_int_distribution<int64_t> entry(0, tiles - 1);
  for (int64_t i = 0; i < listed; ++i) order.set_int(i, entry(rng));
  y.poison();
  run(pipelines_source("tiles_in_turn"), config,
      {TestArg::of(q), TestArg::of(x), TestArg::of(order), TestArg::of(y)});
  // Every tile the order names: acc = p0 x0 + sum over the later blocks, halved at each,
  // p = bf16(q x_blk^T / 8); rows of x past n are zeros.
  std::vector<double> want(tiles * d * d, 0.0);
  std::vector<bool> named(tiles, false);
  auto xv = [&](int64_t bx, int64_t row, int64_t col) {
    return row < n ? x.get((bx * n + row) * d + col) : 0.0;
  };
  for (int64_t i = 0; i < listed; ++i) {
    const int64_t tile = order.get_int(i);
    if (named[tile]) continue;
    named[tile] = true;
    const int64_t bx = tile % batches;
    std::vector<double> acc(d * d, 0.0);
    const int64_t blocks = std::max<int64_t>(1, (n + bn - 1) / bn);
    for (int64_t blk = 0; blk < blocks; ++blk) {
      std::vector<double> p(d * bn);
      for (int64_t r = 0; r < d; ++r)
        for (int64_t j = 0; j < bn; ++j) {
          double s = 0;
          for (int64_t c = 0; c < d; ++c)
            s += q.get((tile * d + r) * d + c) * xv(bx, blk * bn + j, c);
          p[r * bn + j] =
              ref::bf16_bits_to_f64(ref::f64_to_bf16_bits(static_cast<float>(s) * 0.125));
        }
      for (int64_t r = 0; r < d; ++r)
        for (int64_t c = 0; c < d; ++c) {
          double s = 0;
          for (int64_t j = 0; j < bn; ++j) s += p[r * bn + j] * xv(bx, blk * bn + j, c);
          double& a = acc[r * d + c];
          a = blk == 0 ? s : a * 0.5 + s;
        }
    }
    std::copy(acc.begin(), acc.end(), want.begin() + tile * d * d);
  }
  // Tiles no entry names keep the poison; the others are compared.
  for (int64_t tile = 0; tile < tiles; ++tile) {
    if (!named[tile]) {
      for (int64_t e = 0; e < d * d; ++e)
        ASSERT_TRUE(std::isnan(y.get(tile * d * d + e))) << "tile " << tile << " was written";
      continue;
    }
    HostBuffer got(DType::F32, {d, d});
    for (int64_t e = 0; e < d * d; ++e) got.set(e, y.get(tile * d * d + e));
    SCOPED_TRACE(str("tile ", tile));
    expect_close(
        got, std::vector<double>(want.begin() + tile * d * d, want.begin() + (tile + 1) * d * d),
        2e-2);
  }
}

void check_trailing_copy(const KernelRunner& run, int64_t n, int64_t c, const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("trailing_copy N=", n, " C=", c, " ", config_text(config), "seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer x(DType::F32, {n, c}), y(DType::F32, {16, c});
  fill_uniform(x, rng, -1, 1);
  y.poison();
  run(pipelines_source("trailing_copy"), config, {TestArg::of(x), TestArg::of(y)});
  std::vector<double> want(16 * c, 0.0);
  int64_t prev = 0;
  for (int64_t t = 0; t < n; t += 16) {
    for (int64_t r = 0; r < 16; ++r)
      for (int64_t col = 0; col < c; ++col)
        want[r * c + col] =
            want[r * c + col] * 0.5 + at(x, n, c, t + r, col) * at(x, n, c, prev + r, col);
    prev = t;
  }
  expect_close(y, want, 1e-5);
}

void check_two_phases(const KernelRunner& run, int64_t n) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("two_phases N=", n, " seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer x(DType::F32, {n, 64}), y(DType::F32, {2, 64});
  fill_uniform(x, rng, -1, 1);
  y.poison();
  run(test_data_path("tests/data/shared_reuse.tile"), {}, {TestArg::of(x), TestArg::of(y)});
  std::vector<double> want(2 * 64, 0.0);
  for (int64_t r = 0; r < 64; ++r)
    for (int64_t col = 0; col < 64; ++col) {
      want[col] += at(x, n, 64, r, col);
      want[64 + col] += 2.0 * at(x, n, 64, 64 + r, col);
    }
  expect_close(y, want, 1e-5);
}

} // namespace tilejit::test
