#include "workloads/linear_attn.h"

#include "workloads/host_parallel.h"

#include <fmt/format.h>

#include <cmath>

namespace tilejit::workloads {

std::string LinearAttnShape::describe() const {
  return fmt::format("{} B={} T={} H={} Dk={} Dv={}", dtype_name(dtype), batch, steps, heads,
                     key_dim, value_dim);
}

double LinearAttnShape::scale() const {
  return 1.0 / std::sqrt(static_cast<double>(key_dim));
}

std::string LinearAttnCase::name() const {
  return fmt::format("linear/B{}/T{}/H{}/D{}", batch, steps, heads, dim);
}

LinearAttnShape LinearAttnCase::shape(DType dtype) const {
  LinearAttnShape s;
  s.batch = batch, s.steps = steps, s.heads = heads, s.key_dim = dim, s.value_dim = dim;
  s.dtype = dtype;
  return s;
}

std::vector<LinearAttnCase> linear_attn_cases() {
  // WORKLOADS.md: seed-small B=128, T in {256, 512, 1024}, H=4, D=32; large B=4, T in
  // {2048, 8192}, H=16, D=128.
  return {{128, 256, 4, 32},
          {128, 512, 4, 32},
          {128, 1024, 4, 32},
          {4, 2048, 16, 128},
          {4, 8192, 16, 128}};
}

std::unique_ptr<LinearAttnData> make_linear_attn_data(const LinearAttnShape& s, uint64_t seed) {
  auto d = std::make_unique<LinearAttnData>();
  d->shape = s;
  const std::vector<int64_t> key = {s.batch, s.steps, s.heads, s.key_dim};
  const std::vector<int64_t> value = {s.batch, s.steps, s.heads, s.value_dim};
  d->q = ref::HostBuffer(s.dtype, key);
  d->k = ref::HostBuffer(s.dtype, key);
  d->v = ref::HostBuffer(s.dtype, value);
  d->dout = ref::HostBuffer(s.dtype, value);
  d->o = ref::HostBuffer(s.dtype, value);
  d->dq = ref::HostBuffer(s.dtype, key);
  d->dk = ref::HostBuffer(s.dtype, key);
  d->dv = ref::HostBuffer(s.dtype, value);
  const uint64_t base = splitmix(seed);
  fill_uniform(d->q, splitmix(base + 1), -1, 1);
  fill_uniform(d->k, splitmix(base + 2), -1, 1);
  fill_uniform(d->v, splitmix(base + 3), -1, 1);
  fill_uniform(d->dout, splitmix(base + 4), -1, 1);
  for (ref::HostBuffer* out : {&d->o, &d->dq, &d->dk, &d->dv}) out->poison();
  return d;
}

std::vector<std::pair<int64_t, int64_t>> linear_attn_reference_heads(const LinearAttnShape& s) {
  if (s.batch * s.heads <= 1) return {{0, 0}};
  return {{0, 0}, {s.batch - 1, s.heads - 1}};
}

LinearAttnErrors compare_linear_attn(const LinearAttnData& d) {
  const LinearAttnShape& s = d.shape;
  const int64_t T = s.steps, H = s.heads, DK = s.key_dim, DV = s.value_dim;
  const double scale = s.scale();
  auto at = [&](int64_t b, int64_t t, int64_t h, int64_t dim) {
    return ((b * T + t) * H + h) * dim;
  };
  LinearAttnErrors e;
  for (const ref::HostBuffer* out : {&d.o, &d.dq, &d.dk, &d.dv})
    for (int64_t i = 0; i < out->numel(); ++i)
      if (!std::isfinite(out->get(i))) ++e.nan;
  RelativeL2 no, nq, nk, nv;
  for (const auto& [b, h] : linear_attn_reference_heads(s)) {
    // Forward and dq walk t upwards with S [DK][DV] (and its transpose for dq); dk and dv walk
    // downwards with R [DK][DV].
    std::vector<double> S(static_cast<size_t>(DK * DV), 0.0), R = S, row(static_cast<size_t>(DK));
    for (int64_t t = 0; t < T; ++t) {
      const int64_t kq = at(b, t, h, DK), vo = at(b, t, h, DV);
      for (int64_t i = 0; i < DK; ++i)
        for (int64_t j = 0; j < DV; ++j) S[i * DV + j] += d.k.get(kq + i) * d.v.get(vo + j);
      for (int64_t j = 0; j < DV; ++j) {
        double o = 0;
        for (int64_t i = 0; i < DK; ++i) o += d.q.get(kq + i) * S[i * DV + j];
        no.add(d.o.get(vo + j), scale * o);
      }
      for (int64_t i = 0; i < DK; ++i) {
        double g = 0;
        for (int64_t j = 0; j < DV; ++j) g += d.dout.get(vo + j) * S[i * DV + j];
        nq.add(d.dq.get(kq + i), scale * g);
      }
    }
    for (int64_t t = T - 1; t >= 0; --t) {
      const int64_t kq = at(b, t, h, DK), vo = at(b, t, h, DV);
      for (int64_t i = 0; i < DK; ++i)
        for (int64_t j = 0; j < DV; ++j)
          R[i * DV + j] += scale * d.q.get(kq + i) * d.dout.get(vo + j);
      for (int64_t j = 0; j < DV; ++j) {
        double g = 0;
        for (int64_t i = 0; i < DK; ++i) g += d.k.get(kq + i) * R[i * DV + j];
        nv.add(d.dv.get(vo + j), g);
      }
      for (int64_t i = 0; i < DK; ++i) {
        double g = 0;
        for (int64_t j = 0; j < DV; ++j) g += R[i * DV + j] * d.v.get(vo + j);
        nk.add(d.dk.get(kq + i), g);
      }
    }
  }
  e.o = no.value(), e.dq = nq.value(), e.dk = nk.value(), e.dv = nv.value();
  return e;
}

double linear_attn_flops(const LinearAttnShape& s) {
  const double c = 64, chunks = std::ceil(static_cast<double>(s.steps) / c);
  const double dk = static_cast<double>(s.key_dim), dv = static_cast<double>(s.value_dim);
  // Per chunk: q k^T (2 C^2 Dk), masked scores times v (2 C^2 Dv), q S (2 C Dk Dv), S += k^T v
  // (2 C Dk Dv); the backward is three such passes with the operands exchanged.
  const double per_chunk = 2 * c * c * (dk + dv) + 4 * c * dk * dv;
  return 4 * per_chunk * chunks * static_cast<double>(s.batch * s.heads);
}

} // namespace tilejit::workloads
