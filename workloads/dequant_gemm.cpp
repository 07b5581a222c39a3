#include "workloads/dequant_gemm.h"

#include "compiler/ref/float_formats.h"
#include "support/error.h"
#include "support/text.h"
#include "workloads/host_parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

namespace tilejit::workloads {

using ref::HostBuffer;

namespace {

int64_t cdiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// A 16-bit float buffer's values as doubles.
std::vector<double> to_doubles(const HostBuffer& b) {
  std::vector<double> out(static_cast<size_t>(b.numel()));
  const auto* bits = static_cast<const uint16_t*>(b.data());
  const bool bf = b.dtype() == DType::BF16;
  parallel_ranges(b.numel(), [&](int64_t a, int64_t e) {
    for (int64_t i = a; i < e; ++i)
      out[i] = bf ? ref::bf16_bits_to_f64(bits[i]) : ref::f16_bits_to_f64(bits[i]);
  });
  return out;
}

int nibble(int32_t word, int64_t i) {
  return static_cast<int>((static_cast<uint32_t>(word) >> (4 * i)) & 15u);
}

} // namespace

std::string DequantShape::describe() const {
  std::string s = fmt::format("int{} {} M={} N={} K={}", bits, dtype_name(dtype), m, n, k);
  if (bits == 4) s += fmt::format(" G={}{}", group, act_order ? " act-order" : "");
  return s;
}

int64_t DequantShape::groups() const {
  return group < 0 ? 1 : cdiv(k, group);
}

int64_t DequantShape::kernel_groups() const {
  return cdiv(k, kernel_group());
}

std::unique_ptr<DequantData> make_dequant_data(const DequantShape& s, uint64_t seed) {
  TJ_ICHECK(s.bits == 4 || s.bits == 8, "dequant_gemm: bits must be 4 or 8");
  auto d = std::make_unique<DequantData>();
  d->shape = s;
  const uint64_t base = splitmix(seed);
  auto stream = [&](uint64_t id) { return splitmix(base + id); };
  d->x = HostBuffer(s.dtype, {s.m, s.k});
  d->y = HostBuffer(s.dtype, {s.m, s.n});
  fill_uniform(d->x, stream(1), -1, 1);
  if (s.bits == 8) {
    d->w = HostBuffer(DType::I8, {s.n, s.k});
    d->w_scales = HostBuffer(s.dtype, {s.n});
    fill_random_bytes(d->w, stream(2));
    fill_uniform(d->w_scales, stream(3), 0.001, 0.02);
    return d;
  }
  TJ_ICHECK(s.k % 8 == 0, "dequant_gemm int4: K must be a multiple of 8");
  const int64_t words_n = cdiv(s.n, 8), groups = s.groups();
  const int64_t g = s.group < 0 ? s.k : s.group;
  d->qweight = HostBuffer(DType::I32, {s.k / 8, s.n});
  d->gptq_scales = HostBuffer(s.dtype, {groups, s.n});
  d->gptq_zeros = HostBuffer(DType::I32, {groups, words_n});
  fill_random_bytes(d->qweight, stream(2));
  fill_uniform(d->gptq_scales, stream(3), 0.002, 0.03);
  fill_random_bytes(d->gptq_zeros, stream(4));
  // g_idx: row k's group, k / G in order, or shuffled among the groups (act-order: each group
  // still holds G rows, as GPTQ writes them).
  std::vector<int64_t> group_of(static_cast<size_t>(s.k));
  for (int64_t i = 0; i < s.k; ++i) group_of[i] = i / g;
  if (s.act_order) {
    std::mt19937_64 rng(stream(5));
    std::shuffle(group_of.begin(), group_of.end(), rng);
  }
  d->g_idx = HostBuffer(DType::I32, {s.k});
  for (int64_t i = 0; i < s.k; ++i) d->g_idx.set_int(i, group_of[i]);
  // The ops layer's load-time host work: the permutation that makes the groups contiguous, and
  // the scales and zeros in the kernel's grouping (one group: repeated per 128 rows).
  std::vector<int32_t> perm(static_cast<size_t>(s.k));
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int32_t a, int32_t b) { return group_of[a] < group_of[b]; });
  d->perm = HostBuffer(DType::I32, {s.k});
  std::memcpy(d->perm.data(), perm.data(), perm.size() * sizeof(int32_t));
  const int64_t kgroups = s.kernel_groups();
  d->scales = HostBuffer(s.dtype, {kgroups, s.n});
  d->qzeros = HostBuffer(DType::I32, {kgroups, words_n});
  for (int64_t kg = 0; kg < kgroups; ++kg) {
    const int64_t true_group = s.group < 0 ? 0 : kg; // rows kg*G.. of the permuted K
    std::memcpy(static_cast<uint16_t*>(d->scales.data()) + kg * s.n,
                static_cast<const uint16_t*>(d->gptq_scales.data()) + true_group * s.n,
                static_cast<size_t>(s.n) * 2);
    std::memcpy(static_cast<int32_t*>(d->qzeros.data()) + kg * words_n,
                static_cast<const int32_t*>(d->gptq_zeros.data()) + true_group * words_n,
                static_cast<size_t>(words_n) * 4);
  }
  d->qweight_t = HostBuffer(DType::I32, {s.n, s.k / 8});
  if (s.act_order) d->xp = HostBuffer(s.dtype, {s.m, s.k});
  return d;
}

std::vector<int64_t> dequant_reference_rows(const DequantShape& s) {
  std::vector<int64_t> rows;
  const double macs = static_cast<double>(s.m) * static_cast<double>(s.n) * s.k;
  if (macs <= std::ldexp(1.0, 33) || s.m <= 64) {
    for (int64_t r = 0; r < s.m; ++r) rows.push_back(r);
    return rows;
  }
  for (int64_t r = 0; r < 16; ++r) rows.push_back(r);
  for (int64_t i = 1; i <= 32; ++i) rows.push_back(16 + (s.m - 32) * i / 33);
  for (int64_t r = s.m - 16; r < s.m; ++r) rows.push_back(r);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

std::vector<double> dequant_reference(const DequantData& d, const std::vector<int64_t>& rows) {
  const DequantShape& s = d.shape;
  const int64_t nr = static_cast<int64_t>(rows.size()), K = s.k, N = s.n;
  std::vector<double> x(static_cast<size_t>(nr * K));
  const std::vector<double> all_x = to_doubles(d.x);
  for (int64_t i = 0; i < nr; ++i) std::copy_n(all_x.begin() + rows[i] * K, K, x.begin() + i * K);
  std::vector<double> ref(static_cast<size_t>(nr * N), 0.0);
  if (s.bits == 8) {
    const std::vector<double> scale = to_doubles(d.w_scales);
    const auto* w = static_cast<const int8_t*>(d.w.data());
    parallel_ranges(N, [&](int64_t lo, int64_t hi) {
      for (int64_t c = lo; c < hi; ++c)
        for (int64_t i = 0; i < nr; ++i) {
          double sum = 0;
          for (int64_t kk = 0; kk < K; ++kk) sum += x[i * K + kk] * w[c * K + kk];
          ref[i * N + c] = sum * scale[c];
        }
    });
    return ref;
  }
  const std::vector<double> scale = to_doubles(d.gptq_scales);
  const auto* qw = static_cast<const int32_t*>(d.qweight.data());
  const auto* qz = static_cast<const int32_t*>(d.gptq_zeros.data());
  const auto* gi = static_cast<const int32_t*>(d.g_idx.data());
  const int64_t words_n = cdiv(N, 8);
  parallel_ranges(N, [&](int64_t lo, int64_t hi) {
    std::vector<double> wrow(static_cast<size_t>(K)); // W[c, :] in float64
    for (int64_t c = lo; c < hi; ++c) {
      for (int64_t kk = 0; kk < K; ++kk) {
        const int64_t g = gi[kk];
        const int q = nibble(qw[(kk / 8) * N + c], kk % 8);
        const int z = nibble(qz[g * words_n + c / 8], c % 8);
        wrow[kk] = (q - z) * scale[g * N + c];
      }
      for (int64_t i = 0; i < nr; ++i) {
        double sum = 0;
        for (int64_t kk = 0; kk < K; ++kk) sum += x[i * K + kk] * wrow[kk];
        ref[i * N + c] = sum;
      }
    }
  });
  return ref;
}

DequantErrors compare_dequant(const DequantData& d, const std::vector<int64_t>& rows,
                              const std::vector<double>& ref) {
  const DequantShape& s = d.shape;
  DequantErrors e;
  const auto* bits = static_cast<const uint16_t*>(d.y.data());
  const bool bf = s.dtype == DType::BF16;
  const uint16_t exp_mask = bf ? 0x7f80 : 0x7c00;
  for (int64_t i = 0; i < d.y.numel(); ++i)
    if ((bits[i] & exp_mask) == exp_mask) ++e.nan_y; // NaN or inf: no correct kernel's output
  double diff = 0, norm = 0;
  for (size_t i = 0; i < rows.size(); ++i)
    for (int64_t c = 0; c < s.n; ++c) {
      const uint16_t b = bits[rows[i] * s.n + c];
      const double y = bf ? ref::bf16_bits_to_f64(b) : ref::f16_bits_to_f64(b);
      const double r = ref[i * s.n + c];
      if (std::isfinite(y)) diff += (y - r) * (y - r);
      norm += r * r;
    }
  e.y = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  return e;
}

std::string DequantCase::name() const {
  return fmt::format("int{}/M{}/{}", bits, m, layer);
}

DequantShape DequantCase::shape(DType dtype) const {
  DequantShape s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.bits = bits;
  s.group = 128;
  s.dtype = dtype;
  s.layer = layer;
  return s;
}

std::vector<DequantCase> dequant_cases() {
  struct Linear {
    const char* name;
    int64_t n, k;
  };
  const Linear linears[] = {{"qkv", 6144, 2560},
                            {"o", 2560, 4096},
                            {"gate_up", 19456, 2560},
                            {"down", 2560, 9728},
                            {"lm_head", 151936, 2560}};
  std::vector<DequantCase> out;
  for (int64_t m : {1, 4, 16, 64, 256, 2048})
    for (int bits : {4, 8})
      for (const Linear& l : linears) out.push_back({l.name, l.n, l.k, m, bits});
  return out;
}

double dequant_floor_bytes(const DequantShape& s) {
  const double m = static_cast<double>(s.m), n = static_cast<double>(s.n),
               k = static_cast<double>(s.k);
  const double activations = (m * k + m * n) * 2;
  if (s.bits == 8) return n * k + n * 2 + activations;
  const double groups = static_cast<double>(s.kernel_groups());
  double bytes = n * k / 2 + groups * n * 2 + groups * static_cast<double>(cdiv(s.n, 8)) * 4;
  if (s.act_order) bytes += k * 4; // the permutation x is read through
  return bytes + activations;
}

double dequant_flops(const DequantShape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
}

} // namespace tilejit::workloads
