#include "dequant_checks.h"

#include "support/text.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace tilejit::test {

namespace {

/// Eight 4-bit values into one int32, value i at bits 4i..4i+3 (GPTQ's packing).
int32_t pack8(const int* eight) {
  uint32_t w = 0;
  for (int i = 0; i < 8; ++i) w |= static_cast<uint32_t>(eight[i]) << (4 * i);
  return static_cast<int32_t>(w);
}

std::vector<int> random_nibbles(std::mt19937& rng, int64_t count) {
  std::uniform_int_distribution<int> nibble(0, 15);
  std::vector<int> v(static_cast<size_t>(count));
  for (auto& x : v) x = nibble(rng);
  return v;
}

/// qweight [K/8, N]: q [K, N] packed 8 rows of K per word.
HostBuffer pack_qweight(const std::vector<int>& q, int64_t k, int64_t n) {
  HostBuffer qweight(DType::I32, {k / 8, n});
  for (int64_t r = 0; r < k / 8; ++r)
    for (int64_t c = 0; c < n; ++c) {
      int eight[8];
      for (int i = 0; i < 8; ++i) eight[i] = q[(r * 8 + i) * n + c];
      qweight.set_int(r * n + c, pack8(eight));
    }
  return qweight;
}

/// y = x @ W^T in float64, W[n, k] = (q[k, n] - z[g(k), n]) * s[g(k), n].
std::vector<double> gptq_reference(const HostBuffer& x, const std::vector<int>& q,
                                   const std::vector<int>& z, const HostBuffer& scales,
                                   const std::vector<int64_t>& group_of, int64_t m, int64_t n,
                                   int64_t k, int64_t words_n) {
  std::vector<double> ref(m * n, 0.0);
  for (int64_t c = 0; c < n; ++c)
    for (int64_t kk = 0; kk < k; ++kk) {
      int64_t gi = group_of[kk];
      double w = (q[kk * n + c] - z[gi * words_n * 8 + c]) * scales.get(gi * n + c);
      for (int64_t r = 0; r < m; ++r) ref[r * n + c] += x.get(r * k + kk) * w;
    }
  return ref;
}

} // namespace

void check_w4a16(const KernelRunner& run, DType t, int64_t m, int64_t n, int64_t k, int64_t group,
                 bool act_order, const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("w4a16_gemv ", dtype_name(t), " M=", m, " N=", n, " K=", k, " G=", group,
                   act_order ? " act-order " : " ", config_text(config), " seed=", seed));
  std::mt19937 rng(seed);
  const int64_t g = group < 0 ? k : group;
  const int64_t groups = (k + g - 1) / g, words_n = (n + 7) / 8;
  HostBuffer x(t, {m, k}), scales(t, {groups, n}), qzeros(DType::I32, {groups, words_n}),
      g_idx(DType::I32, {k}), y(t, {m, n});
  fill_uniform(x, rng, -1, 1);
  fill_uniform(scales, rng, 0.002, 0.03);
  const std::vector<int> q = random_nibbles(rng, k * n),
                         z = random_nibbles(rng, groups * words_n * 8);
  HostBuffer qweight = pack_qweight(q, k, n);
  for (int64_t gi = 0; gi < groups; ++gi)
    for (int64_t w = 0; w < words_n; ++w)
      qzeros.set_int(gi * words_n + w, pack8(&z[(gi * words_n + w) * 8]));
  std::vector<int64_t> group_of(k);
  for (int64_t i = 0; i < k; ++i) group_of[i] = i / g;
  if (act_order) std::shuffle(group_of.begin(), group_of.end(), rng);
  for (int64_t i = 0; i < k; ++i) g_idx.set_int(i, group_of[i]);
  y.poison();
  Bindings given = config;
  given["T"] = dtype_name(t);
  run("embedded:workloads/dequant_gemm.tile#w4a16_gemv", given,
      {TestArg::of(x), TestArg::of(qweight), TestArg::of(scales), TestArg::of(qzeros),
       TestArg::of(g_idx), TestArg::of(y)});
  expect_close(y, gptq_reference(x, q, z, scales, group_of, m, n, k, words_n), 1e-2);
}

void check_w4a16_packed(const KernelRunner& run, DType t, int64_t m, int64_t n, int64_t k,
                        int64_t group, bool act_order, const Bindings& config,
                        const Bindings& repack_config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("w4_repack + w4a16_tc ", dtype_name(t), " M=", m, " N=", n, " K=", k, " G=",
                   group, act_order ? " act-order " : " ", config_text(config), " seed=", seed));
  std::mt19937 rng(seed);
  const int64_t g = group < 0 ? k : group;
  const int64_t groups = (k + g - 1) / g, words_n = (n + 7) / 8;
  const std::vector<int> q = random_nibbles(rng, k * n),
                         z = random_nibbles(rng, groups * words_n * 8);
  HostBuffer x(t, {m, k}), true_scales(t, {groups, n});
  fill_uniform(x, rng, -1, 1);
  fill_uniform(true_scales, rng, 0.002, 0.03);
  std::vector<int64_t> group_of(k);
  for (int64_t i = 0; i < k; ++i) group_of[i] = i / g;
  if (act_order) std::shuffle(group_of.begin(), group_of.end(), rng);
  // The permutation that makes groups contiguous: rows in order of their group (stable).
  std::vector<int64_t> perm(k);
  for (int64_t i = 0; i < k; ++i) perm[i] = i;
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int64_t a, int64_t b) { return group_of[a] < group_of[b]; });
  // The kernel's groups: G rows of the permuted K each (one group: 128 rows, repeated).
  const int64_t kg = group < 0 ? 128 : group, kgroups = (k + kg - 1) / kg;
  HostBuffer qweight = pack_qweight(q, k, n), perm_buf(DType::I32, {k}),
             qweight_t(DType::I32, {n, k / 8}), scales(t, {kgroups, n}),
             qzeros(DType::I32, {kgroups, words_n}), y(t, {m, n});
  for (int64_t i = 0; i < k; ++i) perm_buf.set_int(i, perm[i]);
  for (int64_t kgi = 0; kgi < kgroups; ++kgi) {
    const int64_t gi = group < 0 ? 0 : kgi; // the true group of permuted rows kgi*kg..
    for (int64_t c = 0; c < n; ++c) scales.set(kgi * n + c, true_scales.get(gi * n + c));
    for (int64_t w = 0; w < words_n; ++w)
      qzeros.set_int(kgi * words_n + w, pack8(&z[(gi * words_n + w) * 8]));
  }
  qweight_t.poison();
  y.poison();
  run("embedded:workloads/dequant_gemm.tile#w4_repack", repack_config,
      {TestArg::of(qweight), TestArg::of(perm_buf), TestArg::of(qweight_t)});
  // The packed words: column n's row k is GPTQ row perm[k], 8 per word, interleaved (row
  // 8j + i in field i / 2 + 4 * (i % 2)).
  for (int64_t c = 0; c < n; ++c)
    for (int64_t j = 0; j < k / 8; ++j) {
      int eight[8];
      for (int i = 0; i < 8; ++i) eight[i / 2 + 4 * (i % 2)] = q[perm[j * 8 + i] * n + c];
      ASSERT_EQ(qweight_t.get_int(c * (k / 8) + j), pack8(eight))
          << "qweight_t[" << c << ", " << j << "]";
    }
  Bindings given = config;
  given["T"] = dtype_name(t);
  given["G"] = std::to_string(kg);
  given["ACT"] = act_order ? "1" : "0";
  run("embedded:workloads/dequant_gemm.tile#w4a16_tc", given,
      {TestArg::of(x), TestArg::of(qweight_t), TestArg::of(scales), TestArg::of(qzeros),
       TestArg::of(perm_buf), TestArg::of(y)});
  expect_close(y, gptq_reference(x, q, z, true_scales, group_of, m, n, k, words_n), 1e-2);
}

void check_w8a16(const KernelRunner& run, DType t, int64_t m, int64_t n, int64_t k,
                 const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("w8a16_mma ", dtype_name(t), " M=", m, " N=", n, " K=", k, " ",
                   config_text(config), " seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer x(t, {m, k}), w(DType::I8, {n, k}), scales(t, {n}), y(t, {m, n});
  fill_uniform(x, rng, -1, 1);
  fill_uniform(scales, rng, 0.001, 0.02);
  std::uniform_int_distribution<int> byte(-128, 127);
  for (int64_t i = 0; i < n * k; ++i) w.set_int(i, byte(rng));
  y.poison();
  Bindings given = config;
  given["T"] = dtype_name(t);
  run("embedded:workloads/dequant_gemm.tile#w8a16_mma", given,
      {TestArg::of(x), TestArg::of(w), TestArg::of(scales), TestArg::of(y)});
  std::vector<double> ref(m * n, 0.0);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double sum = 0;
      for (int64_t kk = 0; kk < k; ++kk) sum += x.get(r * k + kk) * w.get(c * k + kk);
      ref[r * n + c] = sum * scales.get(c);
    }
  expect_close(y, ref, 1e-2);
}

} // namespace tilejit::test
