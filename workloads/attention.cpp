#include "workloads/attention.h"

#include "support/error.h"
#include "support/text.h"
#include "workloads/host_parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>

namespace tilejit::workloads {

using ref::HostBuffer;

namespace {

/// Rows [first, first + count) of a [.., N, D] buffer (row = (b * heads + h) * N + i) as doubles.
std::vector<double> rows_of(const HostBuffer& b, int64_t first, int64_t count, int64_t d) {
  std::vector<double> out(static_cast<size_t>(count * d));
  for (int64_t r = 0; r < count * d; ++r) out[r] = b.get(first * d + r);
  return out;
}

double dot(const double* a, const double* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

/// Block-sparse inputs: per head, each query block keeps its diagonal block and
/// kept_blocks() - 1 others drawn at random (the yardstick's flex_attention masks are built the
/// same way), and the kernels' lists of that mask, per query block and per key block.
void make_block_mask(AttentionData& d, uint64_t seed) {
  const AttentionShape& s = d.shape;
  const int64_t H = s.heads_q, nb = s.blocks(), kept = s.kept_blocks();
  d.keep.assign(static_cast<size_t>(H * nb * nb), 0);
  int64_t draw = 0;
  std::vector<int64_t> order(static_cast<size_t>(nb));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t r = 0; r < nb; ++r) {
      for (int64_t c = 0; c < nb; ++c) order[c] = c;
      std::swap(order[0], order[r]);       // the diagonal first
      for (int64_t i = 1; i < kept; ++i) { // a partial Fisher-Yates shuffle of the rest
        const int64_t j = i + static_cast<int64_t>(random_unit(seed, draw++) * (nb - i));
        std::swap(order[i], order[std::min(j, nb - 1)]);
      }
      for (int64_t i = 0; i < kept; ++i) d.keep[(h * nb + r) * nb + order[i]] = 1;
    }
  d.kv_cnt = HostBuffer(DType::I32, {1, H, nb});
  d.kv_idx = HostBuffer(DType::I32, {1, H, nb, nb});
  d.q_cnt = HostBuffer(DType::I32, {1, H, nb});
  d.q_idx = HostBuffer(DType::I32, {1, H, nb, nb});
  for (int64_t h = 0; h < H; ++h)
    for (int64_t a = 0; a < nb; ++a) {
      int64_t nkv = 0, nq = 0;
      for (int64_t b = 0; b < nb; ++b) {
        if (d.keep[(h * nb + a) * nb + b]) d.kv_idx.set_int((h * nb + a) * nb + nkv++, b);
        if (d.keep[(h * nb + b) * nb + a]) d.q_idx.set_int((h * nb + a) * nb + nq++, b);
      }
      d.kv_cnt.set_int(h * nb + a, nkv);
      d.q_cnt.set_int(h * nb + a, nq);
    }
}

/// Relative L2 error of `got` rows against `want` (accumulated into diff, norm).
void accumulate(const HostBuffer& got, int64_t first, const std::vector<double>& want, double& diff,
                double& norm) {
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got.get(first + static_cast<int64_t>(i));
    diff += (g - want[i]) * (g - want[i]);
    norm += want[i] * want[i];
  }
}

} // namespace

int64_t AttentionShape::kept_blocks() const {
  const int64_t nb = blocks();
  if (!sparse()) return nb;
  const int64_t k = (density_percent * nb + 50) / 100; // rounded
  return std::min(nb, std::max<int64_t>(1, k));
}

std::string AttentionShape::describe() const {
  return fmt::format("{} B={} Hq={} Hkv={} N={} D={}{}{}{}", dtype_name(dtype), batch, heads_q,
                     heads_kv, seq, head_dim, causal ? " causal" : "",
                     exact && dtype == DType::F32 ? " exact" : "",
                     sparse() ? fmt::format(" block-sparse {}% of blocks of {} ({} of {} kept)",
                                            density_percent, block, kept_blocks(), blocks())
                              : "");
}

std::unique_ptr<AttentionData> make_attention_data(const AttentionShape& s, uint64_t seed) {
  auto d = std::make_unique<AttentionData>();
  d->shape = s;
  const int64_t B = s.batch, HQ = s.heads_q, HKV = s.heads_kv, N = s.seq, D = s.head_dim;
  d->q = HostBuffer(s.dtype, {B, HQ, N, D});
  d->k = HostBuffer(s.dtype, {B, HKV, N, D});
  d->v = HostBuffer(s.dtype, {B, HKV, N, D});
  d->dout = HostBuffer(s.dtype, {B, HQ, N, D});
  d->o = HostBuffer(s.dtype, {B, HQ, N, D});
  d->dq = HostBuffer(s.dtype, {B, HQ, N, D});
  d->dk = HostBuffer(s.dtype, {B, HKV, N, D});
  d->dv = HostBuffer(s.dtype, {B, HKV, N, D});
  d->lse = HostBuffer(DType::F32, {B, HQ, N});
  d->delta = HostBuffer(DType::F32, {B, HQ, N});
  d->dq_acc = HostBuffer(DType::F32, {B, HQ, N, D});
  const uint64_t base = splitmix(seed);
  fill_uniform(d->q, splitmix(base + 1), -2, 2);
  fill_uniform(d->k, splitmix(base + 2), -2, 2);
  fill_uniform(d->v, splitmix(base + 3), -1, 1);
  fill_uniform(d->dout, splitmix(base + 4), -1, 1);
  if (s.sparse()) make_block_mask(*d, splitmix(base + 5));
  return d;
}

std::vector<std::pair<int64_t, int64_t>> attention_reference_groups(const AttentionShape& s) {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (s.batch == 0 || s.heads_kv == 0) return out;
  out.push_back({0, 0});
  if (s.batch > 1 || s.heads_kv > 1) out.push_back({s.batch - 1, s.heads_kv - 1});
  return out;
}

AttentionReference attention_reference(const AttentionData& d) {
  const AttentionShape& s = d.shape;
  const int64_t HQ = s.heads_q, HKV = s.heads_kv, N = s.seq, D = s.head_dim;
  const int64_t G = HQ / HKV;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  AttentionReference out;
  for (const auto& [b, hk] : attention_reference_groups(s)) {
    AttentionReference::Group r;
    r.batch = b;
    r.kv_head = hk;
    const std::vector<double> k = rows_of(d.k, (b * HKV + hk) * N, N, D);
    const std::vector<double> v = rows_of(d.v, (b * HKV + hk) * N, N, D);
    r.o.assign(static_cast<size_t>(G * N * D), 0.0);
    r.dq.assign(r.o.size(), 0.0);
    r.lse.assign(static_cast<size_t>(G * N), 0.0);
    r.dk.assign(static_cast<size_t>(N * D), 0.0);
    r.dv.assign(r.dk.size(), 0.0);
    for (int64_t g = 0; g < G; ++g) {
      const int64_t row0 = (b * HQ + hk * G + g) * N;
      const std::vector<double> q = rows_of(d.q, row0, N, D);
      const std::vector<double> dout = rows_of(d.dout, row0, N, D);
      double* o = &r.o[g * N * D];
      double* dq = &r.dq[g * N * D];
      double* lse = &r.lse[g * N];
      std::vector<double> delta(N);
      // Whether query i sees key j: causal, and the head's block mask when block-sparse.
      const int64_t h = hk * G + g, nb = s.blocks();
      auto sees = [&](int64_t i, int64_t j) {
        if (s.causal && j > i) return false;
        return !s.sparse() || d.keep[(h * nb + i / s.block) * nb + j / s.block] != 0;
      };
      // Pass 1, per query: lse, o, delta = o . dout, dq (every row sees its diagonal block).
      parallel_ranges(N, [&](int64_t lo, int64_t hi) {
        std::vector<double> p(static_cast<size_t>(N)), ds(static_cast<size_t>(N));
        for (int64_t i = lo; i < hi; ++i) {
          const int64_t keys = s.causal ? i + 1 : N;
          double mx = -INFINITY;
          for (int64_t j = 0; j < keys; ++j) {
            p[j] = sees(i, j) ? scale * dot(&q[i * D], &k[j * D], D) : -INFINITY;
            mx = std::max(mx, p[j]);
          }
          double sum = 0;
          for (int64_t j = 0; j < keys; ++j) sum += (p[j] = std::exp(p[j] - mx));
          lse[i] = mx + std::log(sum);
          for (int64_t j = 0; j < keys; ++j) {
            p[j] /= sum;
            if (p[j] == 0) continue;
            for (int64_t c = 0; c < D; ++c) o[i * D + c] += p[j] * v[j * D + c];
          }
          delta[i] = dot(&o[i * D], &dout[i * D], D);
          for (int64_t j = 0; j < keys; ++j) {
            if (p[j] == 0) continue;
            ds[j] = p[j] * (dot(&dout[i * D], &v[j * D], D) - delta[i]);
            for (int64_t c = 0; c < D; ++c) dq[i * D + c] += scale * ds[j] * k[j * D + c];
          }
        }
      });
      // Pass 2, per key: dk and dv from every query that sees it (p recomputed from lse).
      parallel_ranges(N, [&](int64_t lo, int64_t hi) {
        for (int64_t j = lo; j < hi; ++j)
          for (int64_t i = s.causal ? j : 0; i < N; ++i) {
            if (!sees(i, j)) continue;
            const double p = std::exp(scale * dot(&q[i * D], &k[j * D], D) - lse[i]);
            const double ds = p * (dot(&dout[i * D], &v[j * D], D) - delta[i]);
            for (int64_t c = 0; c < D; ++c) {
              r.dk[j * D + c] += scale * ds * q[i * D + c];
              r.dv[j * D + c] += p * dout[i * D + c];
            }
          }
      });
    }
    out.groups.push_back(std::move(r));
  }
  return out;
}

AttentionErrors compare_attention(const AttentionData& d, const AttentionReference& ref) {
  const AttentionShape& s = d.shape;
  const int64_t HQ = s.heads_q, HKV = s.heads_kv, N = s.seq, D = s.head_dim;
  const int64_t G = HQ / HKV;
  AttentionErrors e;
  if (s.dtype != DType::F32)
    e.tol_o = 1e-2, e.tol_lse = 2e-3, e.tol_grad = 3e-2;
  else if (!s.exact)
    e.tol_o = 5e-3, e.tol_lse = 3e-3, e.tol_grad = 1e-2;
  else
    e.tol_o = 1e-5, e.tol_lse = 1e-5, e.tol_grad = 1e-4;
  // lse = -inf is a row with nothing to attend to: none in dense attention (N >= 1).
  for (const HostBuffer* b : {&d.o, &d.lse, &d.dq, &d.dk, &d.dv}) {
    std::atomic<int64_t> bad{0};
    parallel_ranges(b->numel(), [&](int64_t lo, int64_t hi) {
      int64_t n = 0;
      for (int64_t i = lo; i < hi; ++i) n += !std::isfinite(b->get(i));
      bad += n;
    });
    e.nan += bad;
  }
  double od = 0, on = 0, qd = 0, qn = 0, kd = 0, kn = 0, vd = 0, vn = 0;
  for (const AttentionReference::Group& r : ref.groups) {
    // The group's G query heads are consecutive rows of o, dq and lse.
    const int64_t row0 = (r.batch * HQ + r.kv_head * G) * N;
    accumulate(d.o, row0 * D, r.o, od, on);
    accumulate(d.dq, row0 * D, r.dq, qd, qn);
    for (int64_t i = 0; i < G * N; ++i)
      e.lse = std::max(e.lse, std::abs(d.lse.get(row0 + i) - r.lse[i]));
    accumulate(d.dk, (r.batch * HKV + r.kv_head) * N * D, r.dk, kd, kn);
    accumulate(d.dv, (r.batch * HKV + r.kv_head) * N * D, r.dv, vd, vn);
  }
  auto rel = [](double diff, double norm) { return norm > 0 ? std::sqrt(diff / norm) : 0.0; };
  e.o = rel(od, on);
  e.dq = rel(qd, qn);
  e.dk = rel(kd, kn);
  e.dv = rel(vd, vn);
  return e;
}

std::string AttentionCase::name() const {
  return fmt::format("B{}/H{}{}/N{}/D{}{}{}", batch, heads,
                     heads_kv && heads_kv != heads ? fmt::format("/HKV{}", heads_kv) : "", seq,
                     head_dim, causal ? "/causal" : "",
                     density_percent < 100 ? fmt::format("/sparse{}", density_percent) : "");
}

AttentionShape AttentionCase::shape(DType dtype) const {
  AttentionShape s;
  s.batch = batch;
  s.heads_q = heads;
  s.heads_kv = heads_kv ? heads_kv : heads;
  s.seq = seq;
  s.head_dim = head_dim;
  s.causal = causal;
  s.dtype = dtype;
  s.density_percent = density_percent;
  return s;
}

std::vector<AttentionCase> attention_cases(DType dtype) {
  std::vector<AttentionCase> out;
  if (dtype == DType::F32) {
    for (int64_t b : {1, 2})
      for (int64_t n : {512, 1024})
        for (int64_t h : {8, 16}) out.push_back({b, h, n, 64, false});
    // The same shapes with grouped kv heads (the log's "GQA variants").
    const size_t mha = out.size();
    for (size_t i = 0; i < mha; ++i) {
      AttentionCase c = out[i];
      c.heads_kv = c.heads / 4;
      out.push_back(c);
    }
    return out;
  }
  for (int64_t n : {2048, 8192, 16384})
    for (int64_t d : {64, 128})
      for (bool causal : {false, true}) out.push_back({4, 16, n, d, causal});
  // Block-sparse (blocks of 128), the yardstick's flex_attention shapes.
  for (int64_t n : {8192, 16384})
    for (int64_t density : {10, 25, 50}) {
      AttentionCase c{4, 16, n, 128, false};
      c.density_percent = density;
      out.push_back(c);
    }
  return out;
}

double attention_flops(const AttentionShape& s) {
  double f = 4.0 * static_cast<double>(s.batch) * static_cast<double>(s.heads_q) *
             static_cast<double>(s.seq) * static_cast<double>(s.seq) *
             static_cast<double>(s.head_dim);
  if (s.causal) f /= 2;
  if (s.sparse()) f *= static_cast<double>(s.kept_blocks()) / static_cast<double>(s.blocks());
  return 3.5 * f;
}

} // namespace tilejit::workloads
