#include "workloads/gated_delta_rule.h"

#include "workloads/host_parallel.h"

#include <fmt/format.h>

#include <cmath>

namespace tilejit::workloads {

std::string GatedDeltaShape::describe() const {
  return fmt::format("{} B={} T={} H={} Dk={} Dv={} delta{}{} chunk {}{}", dtype_name(dtype), batch,
                     steps, heads, key_dim, value_dim, normalize ? " norm" : "",
                     initial_state ? " h0" : "", chunk, backward ? " forward+backward" : "");
}

double GatedDeltaShape::scale() const {
  return 1.0 / std::sqrt(static_cast<double>(key_dim));
}

std::unique_ptr<GatedDeltaData> make_gated_delta_data(const GatedDeltaShape& s, uint64_t seed) {
  auto d = std::make_unique<GatedDeltaData>();
  d->shape = s;
  const std::vector<int64_t> key = {s.batch, s.steps, s.heads, s.key_dim};
  const std::vector<int64_t> value = {s.batch, s.steps, s.heads, s.value_dim};
  const std::vector<int64_t> gate = {s.batch, s.steps, s.heads};
  const std::vector<int64_t> state = {s.batch, s.heads, s.key_dim, s.value_dim};
  d->q = ref::HostBuffer(s.dtype, key);
  d->k = ref::HostBuffer(s.dtype, key);
  d->v = ref::HostBuffer(s.dtype, value);
  d->g = ref::HostBuffer(DType::F32, gate);
  d->beta = ref::HostBuffer(DType::F32, gate);
  d->h0 = ref::HostBuffer(DType::F32, state);
  d->o = ref::HostBuffer(s.dtype, value);
  d->ht = ref::HostBuffer(DType::F32, state);
  const uint64_t base = splitmix(seed);
  const double kmax = s.normalize ? 1.0 : 1.0 / std::sqrt(static_cast<double>(s.key_dim));
  fill_uniform(d->q, splitmix(base + 1), -1, 1);
  fill_uniform(d->k, splitmix(base + 2), -kmax, kmax);
  fill_uniform(d->v, splitmix(base + 3), -1, 1);
  fill_uniform(d->g, splitmix(base + 4), -0.5, 0);
  fill_uniform(d->beta, splitmix(base + 5), 0.05, 0.95);
  fill_uniform(d->h0, splitmix(base + 6), -1, 1);
  d->o.poison();
  d->ht.poison();
  d->w = ref::HostBuffer(s.dtype, key);
  d->u = ref::HostBuffer(s.dtype, value);
  d->gc = ref::HostBuffer(DType::F32, gate);
  d->rq = ref::HostBuffer(DType::F32, gate);
  d->rk = ref::HostBuffer(DType::F32, gate);
  d->hs = ref::HostBuffer(DType::F32,
                          {s.batch, s.heads, s.backward ? s.chunks() : 1, s.key_dim, s.value_dim});
  for (ref::HostBuffer* x : {&d->w, &d->u, &d->gc, &d->rq, &d->rk, &d->hs}) x->poison();
  if (s.backward) {
    d->dout = ref::HostBuffer(s.dtype, value);
    d->dht = ref::HostBuffer(DType::F32, state);
    fill_uniform(d->dout, splitmix(base + 7), -1, 1);
    fill_uniform(d->dht, splitmix(base + 8), -1, 1);
    d->dq = ref::HostBuffer(s.dtype, key);
    d->dk = ref::HostBuffer(s.dtype, key);
    d->dv = ref::HostBuffer(s.dtype, value);
    d->dg = ref::HostBuffer(DType::F32, gate);
    d->dbeta = ref::HostBuffer(DType::F32, gate);
    d->dh0 = ref::HostBuffer(DType::F32, state);
    d->dh = ref::HostBuffer(DType::F32, {s.batch, s.heads, s.chunks(), s.key_dim, s.value_dim});
    d->du2 = ref::HostBuffer(DType::F32, value);
    for (ref::HostBuffer* x : {&d->dq, &d->dk, &d->dv, &d->dg, &d->dbeta, &d->dh0, &d->dh, &d->du2})
      x->poison();
  }
  return d;
}

GatedDeltaHead gated_delta_head(const GatedDeltaData& d, int64_t b, int64_t h) {
  const GatedDeltaShape& s = d.shape;
  const int64_t T = s.steps, H = s.heads, DK = s.key_dim, DV = s.value_dim;
  GatedDeltaHead head;
  head.steps = T, head.key_dim = DK, head.value_dim = DV;
  head.normalize = s.normalize;
  head.scale = s.scale();
  for (int64_t t = 0; t < T; ++t) {
    const int64_t row = (b * T + t) * H + h;
    for (int64_t i = 0; i < DK; ++i) {
      head.q.push_back(d.q.get(row * DK + i));
      head.k.push_back(d.k.get(row * DK + i));
    }
    for (int64_t j = 0; j < DV; ++j) head.v.push_back(d.v.get(row * DV + j));
    head.g.push_back(d.g.get(row));
    head.beta.push_back(d.beta.get(row));
  }
  if (s.initial_state)
    for (int64_t i = 0; i < DK * DV; ++i) head.h0.push_back(d.h0.get((b * H + h) * DK * DV + i));
  return head;
}

GatedDeltaErrors compare_gated_delta(const GatedDeltaData& d) {
  const GatedDeltaShape& s = d.shape;
  const int64_t T = s.steps, H = s.heads, DK = s.key_dim, DV = s.value_dim;
  GatedDeltaErrors e;
  std::vector<const ref::HostBuffer*> outs = {&d.o, &d.ht};
  if (s.backward) outs.insert(outs.end(), {&d.dq, &d.dk, &d.dv, &d.dg, &d.dbeta, &d.dh0});
  for (const ref::HostBuffer* out : outs)
    for (int64_t i = 0; i < out->numel(); ++i)
      if (!std::isfinite(out->get(i))) ++e.nan;
  RelativeL2 eo, eh, edq, edk, edv, edg, edb, edh0;
  std::vector<std::pair<int64_t, int64_t>> heads = {{0, 0}};
  if (s.batch * s.heads > 1) heads.push_back({s.batch - 1, s.heads - 1});
  for (const auto& [b, h] : heads) {
    const GatedDeltaHead head = gated_delta_head(d, b, h);
    const GatedDeltaHeadOutputs ref = gated_delta_head_forward(head);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < DV; ++j)
        eo.add(d.o.get(((b * T + t) * H + h) * DV + j), ref.o[t * DV + j]);
    for (int64_t i = 0; i < DK * DV; ++i) eh.add(d.ht.get((b * H + h) * DK * DV + i), ref.ht[i]);
    if (!s.backward) continue;
    std::vector<double> dout, dht;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < DV; ++j) dout.push_back(d.dout.get(((b * T + t) * H + h) * DV + j));
    for (int64_t i = 0; i < DK * DV; ++i) dht.push_back(d.dht.get((b * H + h) * DK * DV + i));
    const GatedDeltaHeadGradients gr = gated_delta_head_backward(head, dout, dht);
    for (int64_t t = 0; t < T; ++t) {
      const int64_t row = (b * T + t) * H + h;
      for (int64_t i = 0; i < DK; ++i) {
        edq.add(d.dq.get(row * DK + i), gr.dq[t * DK + i]);
        edk.add(d.dk.get(row * DK + i), gr.dk[t * DK + i]);
      }
      for (int64_t j = 0; j < DV; ++j) edv.add(d.dv.get(row * DV + j), gr.dv[t * DV + j]);
      edg.add(d.dg.get(row), gr.dg[t]);
      edb.add(d.dbeta.get(row), gr.dbeta[t]);
    }
    for (int64_t i = 0; i < DK * DV; ++i) edh0.add(d.dh0.get((b * H + h) * DK * DV + i), gr.dh0[i]);
  }
  e.o = eo.value(), e.ht = eh.value();
  if (s.backward) {
    e.dq = edq.value(), e.dk = edk.value(), e.dv = edv.value(), e.dg = edg.value();
    e.dbeta = edb.value(), e.dh0 = edh0.value();
  }
  return e;
}

double gated_delta_flops(const GatedDeltaShape& s) {
  const double dk = static_cast<double>(s.key_dim), dv = static_cast<double>(s.value_dim);
  // Per step: decay (Dk Dv), k S (2 Dk Dv), the update (2 Dk Dv), q S (2 Dk Dv).
  return 7 * dk * dv * static_cast<double>(s.batch * s.steps * s.heads);
}

} // namespace tilejit::workloads
