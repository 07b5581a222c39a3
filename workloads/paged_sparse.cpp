#include "workloads/paged_sparse.h"

#include "compiler/ref/float_formats.h"
#include "support/error.h"
#include "support/text.h"
#include "workloads/host_parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

namespace tilejit::workloads {

using ref::HostBuffer;

std::string PagedSparseShape::describe() const {
  int64_t mx = 0, mn = INT64_MAX;
  for (int64_t k : kept_lens) mx = std::max(mx, k), mn = std::min(mn, k);
  int64_t ctx = seq_lens.empty() ? 0 : *std::max_element(seq_lens.begin(), seq_lens.end());
  return str(dtype_name(dtype), " B=", batch, " Hq=", heads_q, " Hkv=", heads_kv, " D=", head_dim,
             " page=", page_size, " ctx<=", ctx, " kept=", mn, "..", mx);
}

PagedSparseDims paged_sparse_dims(const PagedSparseShape& s) {
  PagedSparseDims d;
  const int64_t PS = s.page_size;
  for (int64_t len : s.seq_lens) d.max_pages = std::max(d.max_pages, (len + PS - 1) / PS);
  d.max_pages = std::max<int64_t>(d.max_pages, 1);
  int64_t used = 0;
  for (int64_t len : s.seq_lens) used += (len + PS - 1) / PS;
  d.num_pages = used + 3; // a few pages no sequence owns
  for (int64_t k : s.kept_lens) d.max_kept = std::max(d.max_kept, k);
  d.max_kept = std::max<int64_t>(d.max_kept, 1); // an empty kept list still has a column
  return d;
}

std::vector<Tensor> paged_sparse_arg_views(const PagedSparseShape& s) {
  PagedSparseDims d = paged_sparse_dims(s);
  const int64_t B = s.batch, HQ = s.heads_q, HKV = s.heads_kv, D = s.head_dim;
  auto v = [](DType t, std::vector<int64_t> shape) {
    return Tensor::contiguous(nullptr, t, std::move(shape));
  };
  return {v(s.dtype, {B, HQ, D}),
          v(s.dtype, {d.num_pages, s.page_size, HKV, D}),
          v(s.dtype, {d.num_pages, s.page_size, HKV, D}),
          v(DType::I32, {B, d.max_pages}),
          v(DType::I32, {B}),
          v(DType::I32, {B, HKV, d.max_kept}),
          v(DType::I32, {B, HKV}),
          v(s.dtype, {B, HQ, D}),
          v(DType::F32, {B, HQ})};
}

std::unique_ptr<PagedSparseData> make_paged_sparse_data(const PagedSparseShape& s, uint64_t seed) {
  auto d = std::make_unique<PagedSparseData>();
  d->shape = s;
  const int64_t B = s.batch, HKV = s.heads_kv, D = s.head_dim, PS = s.page_size;
  std::mt19937_64 rng(seed);
  PagedSparseDims dims = paged_sparse_dims(s);
  d->max_pages = dims.max_pages;
  d->num_pages = dims.num_pages;
  // Physical pages in a random order, so logical neighbours are not physical neighbours.
  std::vector<int32_t> perm(d->num_pages);
  for (int64_t i = 0; i < d->num_pages; ++i) perm[i] = static_cast<int32_t>(i);
  std::shuffle(perm.begin(), perm.end(), rng);
  d->block_table = HostBuffer(DType::I32, {B, d->max_pages});
  d->seq_lens = HostBuffer(DType::I32, {B});
  int64_t next = 0;
  for (int64_t b = 0; b < B; ++b) {
    d->seq_lens.set_int(b, s.seq_lens[b]);
    int64_t pages = (s.seq_lens[b] + PS - 1) / PS;
    for (int64_t p = 0; p < d->max_pages; ++p)
      d->block_table.set_int(b * d->max_pages + p, p < pages ? perm[next++] : 0);
  }
  d->k_cache = HostBuffer(s.dtype, {d->num_pages, PS, HKV, D});
  d->v_cache = HostBuffer(s.dtype, {d->num_pages, PS, HKV, D});
  fill_uniform(d->k_cache, seed * 3 + 1, -1, 1);
  fill_uniform(d->v_cache, seed * 3 + 2, -1, 1);
  d->scale = 1.0 / std::sqrt(static_cast<double>(D));
  redraw_kept(*d, s.kept_lens, seed + 17);
  return d;
}

void redraw_kept(PagedSparseData& d, const std::vector<int64_t>& kept_lens, uint64_t seed) {
  const PagedSparseShape& s = d.shape;
  const int64_t B = s.batch, HKV = s.heads_kv, HQ = s.heads_q, D = s.head_dim;
  TJ_ICHECK(static_cast<int64_t>(kept_lens.size()) == B * HKV, "kept_lens needs B*HKV entries");
  d.shape.kept_lens = kept_lens;
  std::mt19937_64 rng(seed);
  d.max_kept = paged_sparse_dims(d.shape).max_kept;
  d.kept_idx = HostBuffer(DType::I32, {B, HKV, d.max_kept});
  d.kept_len = HostBuffer(DType::I32, {B, HKV});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < HKV; ++h) {
      int64_t n = kept_lens[b * HKV + h];
      int64_t len = s.seq_lens[b];
      TJ_ICHECK(n <= len, "more kept tokens than the sequence has");
      // Distinct positions, uniform over [0, len): rejection on a bitmap (n << len here),
      // or the whole sequence when most of it is kept.
      std::vector<int32_t> pos;
      if (n * 2 > len) {
        for (int64_t i = 0; i < len; ++i) pos.push_back(static_cast<int32_t>(i));
        std::shuffle(pos.begin(), pos.end(), rng);
        pos.resize(n);
      } else {
        std::vector<bool> taken(len, false);
        std::uniform_int_distribution<int64_t> pick(0, len - 1);
        while (static_cast<int64_t>(pos.size()) < n) {
          int64_t p = pick(rng);
          if (!taken[p]) taken[p] = true, pos.push_back(static_cast<int32_t>(p));
        }
      }
      std::sort(pos.begin(), pos.end());
      d.kept_len.set_int(b * HKV + h, n);
      for (int64_t j = 0; j < d.max_kept; ++j)
        d.kept_idx.set_int((b * HKV + h) * d.max_kept + j, j < n ? pos[j] : -1);
    }
  d.q = HostBuffer(s.dtype, {B, HQ, D});
  fill_uniform(d.q, seed * 7 + 5, -1, 1);
  d.o = HostBuffer(s.dtype, {B, HQ, D});
  d.lse = HostBuffer(DType::F32, {B, HQ});
}

Bindings paged_sparse_generics(const PagedSparseShape& s) {
  return {{"G", std::to_string(s.heads_q / s.heads_kv)}};
}

PagedSparseReference paged_sparse_reference(const PagedSparseData& d) {
  const PagedSparseShape& s = d.shape;
  const int64_t B = s.batch, HQ = s.heads_q, HKV = s.heads_kv, D = s.head_dim, PS = s.page_size;
  const int64_t G = HQ / HKV;
  PagedSparseReference ref;
  ref.o.assign(B * HQ * D, 0.0);
  ref.lse.assign(B * HQ, -INFINITY);
  auto work = [&](int64_t bh) {
    int64_t b = bh / HKV, h = bh % HKV;
    int64_t n = d.kept_len.get_int(bh);
    std::vector<int64_t> rows(n);
    for (int64_t j = 0; j < n; ++j) {
      int64_t pos = d.kept_idx.get_int(bh * d.max_kept + j);
      int64_t page = d.block_table.get_int(b * d.max_pages + pos / PS);
      rows[j] = ((page * PS + pos % PS) * HKV + h) * D;
    }
    std::vector<double> sc(n);
    for (int64_t g = 0; g < G; ++g) {
      int64_t hq = h * G + g;
      double mx = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t x = 0; x < D; ++x)
          acc += d.q.get((b * HQ + hq) * D + x) * d.k_cache.get(rows[j] + x);
        sc[j] = acc * d.scale;
        mx = std::max(mx, sc[j]);
      }
      if (n == 0) continue;
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += std::exp(sc[j] - mx);
      for (int64_t j = 0; j < n; ++j) {
        double p = std::exp(sc[j] - mx) / sum;
        for (int64_t x = 0; x < D; ++x)
          ref.o[(b * HQ + hq) * D + x] += p * d.v_cache.get(rows[j] + x);
      }
      ref.lse[b * HQ + hq] = mx + std::log(sum);
    }
  };
  parallel_ranges(B * HKV, [&](int64_t lo, int64_t hi) {
    for (int64_t bh = lo; bh < hi; ++bh) work(bh);
  });
  return ref;
}

std::string PagedSparseErrors::describe() const {
  return str("o err ", o, ", lse err ", lse, ", NaN in o ", nan_o, ", nonzero o for empty sets ",
             nonzero_empty, ", bad lse ", bad_lse);
}

PagedSparseErrors compare_paged_sparse(const PagedSparseData& d, const PagedSparseReference& ref) {
  const PagedSparseShape& s = d.shape;
  const int64_t B = s.batch, HQ = s.heads_q, HKV = s.heads_kv, D = s.head_dim;
  const int64_t G = HQ / HKV;
  PagedSparseErrors e;
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < B * HQ * D; ++i) {
    double v = d.o.get(i);
    if (std::isnan(v)) {
      ++e.nan_o;
      continue;
    }
    int64_t bhq = i / D;
    int64_t bh = (bhq / HQ) * HKV + (bhq % HQ) / G;
    if (d.kept_len.get_int(bh) == 0 && v != 0) ++e.nonzero_empty;
    diff += (v - ref.o[i]) * (v - ref.o[i]);
    norm += ref.o[i] * ref.o[i];
  }
  e.o = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  double ldiff = 0, lnorm = 0;
  for (int64_t i = 0; i < B * HQ; ++i) {
    double v = d.lse.get(i), r = ref.lse[i];
    if (std::isinf(r)) {
      if (!(std::isinf(v) && v < 0)) ++e.bad_lse;
      continue;
    }
    if (!std::isfinite(v)) {
      ++e.bad_lse;
      continue;
    }
    ldiff += (v - r) * (v - r);
    lnorm += r * r;
  }
  e.lse = lnorm > 0 ? std::sqrt(ldiff / lnorm) : std::sqrt(ldiff);
  return e;
}

std::string PagedSparseCase::name() const {
  return fmt::format("D{}/ps{}/ctx{}/r{:g}", head_dim, page_size, context, ratio);
}

PagedSparseShape PagedSparseCase::shape(DType dtype) const {
  PagedSparseShape s;
  s.dtype = dtype;
  s.head_dim = head_dim;
  s.page_size = page_size;
  s.seq_lens.assign(s.batch, context);
  s.kept_lens.assign(s.batch * s.heads_kv, std::max<int64_t>(1, std::llround(ratio * context)));
  return s;
}

std::vector<PagedSparseCase> paged_sparse_cases() {
  std::vector<PagedSparseCase> out;
  for (int64_t ctx : {131072, 32768})
    for (int64_t d : {128, 256})
      for (int64_t ps : {16, 64})
        for (double r : {0.02, 0.04, 0.05}) out.push_back({d, ps, ctx, r});
  return out;
}

double paged_sparse_floor_bytes(const PagedSparseShape& s) {
  double kept = 0;
  for (int64_t k : s.kept_lens) kept += static_cast<double>(k);
  return kept * static_cast<double>(s.head_dim) * 2 /* K and V */ * dtype_size(s.dtype);
}

} // namespace tilejit::workloads
