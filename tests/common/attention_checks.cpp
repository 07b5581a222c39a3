#include "attention_checks.h"

#include "runtime/device_buffer.h"
#include "support/text.h"
#include "test_util.h"
#include "workloads/host_parallel.h"
#include "workloads/ring_attention.h"

#include <tilejit/ring_attention.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

namespace tilejit::test {
namespace {

std::vector<double> as_doubles(const HostBuffer& b) {
  std::vector<double> out(static_cast<size_t>(b.numel()));
  for (int64_t i = 0; i < b.numel(); ++i) out[i] = b.get(i);
  return out;
}

/// A random block mask [mask_b, mask_h, nb, nb] (keep[(mbh * nb + qb) * nb + kb]): the diagonal
/// and each other block with probability `density`, but one query block per (mask batch, mask
/// head) with none kept, as
/// shuffled lists per query block (kv_cnt, kv_idx) and per key block (q_cnt, q_idx), some with
/// an out-of-range index among the kept ones; unused list slots hold garbage past the count.
std::vector<char> random_block_mask(std::mt19937& rng, int64_t mask_b, int64_t mask_h, int64_t nb,
                                    double density, HostBuffer* kv_cnt, HostBuffer* kv_idx,
                                    HostBuffer* q_cnt, HostBuffer* q_idx) {
  std::vector<char> keep(static_cast<size_t>(mask_b * mask_h * nb * nb));
  std::uniform_real_distribution<double> u(0, 1);
  for (int64_t mbh = 0; mbh < mask_b * mask_h; ++mbh) {
    const int64_t empty = nb > 1 ? 1 + static_cast<int64_t>(rng() % (nb - 1)) : -1;
    for (int64_t qb = 0; qb < nb; ++qb)
      for (int64_t kb = 0; kb < nb; ++kb)
        keep[(mbh * nb + qb) * nb + kb] = qb != empty && (kb == qb || u(rng) < density);
  }
  auto write_lists = [&](HostBuffer* cnt, HostBuffer* idx, bool by_query) {
    if (!cnt) return;
    for (int64_t mbh = 0; mbh < mask_b * mask_h; ++mbh)
      for (int64_t a = 0; a < nb; ++a) {
        std::vector<int32_t> kept;
        for (int64_t other = 0; other < nb; ++other)
          if (keep[by_query ? (mbh * nb + a) * nb + other : (mbh * nb + other) * nb + a])
            kept.push_back(static_cast<int32_t>(other));
        // An index outside [0, nb) among the kept ones now and then: the kernels mask its
        // keys (or queries), so it changes nothing.
        if (static_cast<int64_t>(kept.size()) < nb && rng() % 2)
          kept.push_back(rng() % 2 ? -1 - static_cast<int32_t>(rng() % 3)
                                   : static_cast<int32_t>(nb + rng() % 3));
        std::shuffle(kept.begin(), kept.end(), rng); // the kernels take blocks in any order
        cnt->set_int(mbh * nb + a, static_cast<int64_t>(kept.size()));
        for (int64_t i = 0; i < nb; ++i)
          idx->set_int((mbh * nb + a) * nb + i, i < static_cast<int64_t>(kept.size())
                                                    ? kept[static_cast<size_t>(i)]
                                                    : 1000 + static_cast<int64_t>(rng() % 1000));
      }
  };
  write_lists(kv_cnt, kv_idx, true);
  write_lists(q_cnt, q_idx, false);
  return keep;
}

/// float64 attention forward of q [B, HQ, N, D], k and v [B, HKV, N, D] over the keys
/// sees(batch, head, i, j) allows, one (batch, head) per task: o, and lse (natural log); a row
/// that sees no key gets o = 0 and lse = -inf.
std::pair<std::vector<double>, std::vector<double>>
reference_forward(const HostBuffer& q, const HostBuffer& k, const HostBuffer& v, double scale,
                  const std::function<bool(int64_t, int64_t, int64_t, int64_t)>& sees) {
  const int64_t b = q.shape()[0], hq = q.shape()[1], n = q.shape()[2], dh = q.shape()[3];
  const int64_t hkv = k.shape()[1];
  const std::vector<double> qd = as_doubles(q), kd = as_doubles(k), vd = as_doubles(v);
  std::vector<double> ref_o(static_cast<size_t>(b * hq * n * dh), 0.0),
      ref_lse(static_cast<size_t>(b * hq * n), -INFINITY);
  workloads::parallel_ranges(b * hq, [&](int64_t lo, int64_t hi) {
    std::vector<double> s(static_cast<size_t>(n));
    std::vector<int64_t> keys;
    for (int64_t bh = lo; bh < hi; ++bh) {
      const int64_t bi = bh / hq, h = bh % hq, hk = h / (hq / hkv);
      const double* kh = &kd[(bi * hkv + hk) * n * dh];
      const double* vh = &vd[(bi * hkv + hk) * n * dh];
      for (int64_t i = 0; i < n; ++i) {
        const double* qi = &qd[(bh * n + i) * dh];
        keys.clear();
        for (int64_t j = 0; j < n; ++j)
          if (sees(bi, h, i, j)) keys.push_back(j);
        if (keys.empty()) continue; // o = 0, lse = -inf
        double mx = -INFINITY;
        for (size_t x = 0; x < keys.size(); ++x) {
          double dotv = 0;
          for (int64_t d = 0; d < dh; ++d) dotv += qi[d] * kh[keys[x] * dh + d];
          s[x] = dotv * scale;
          mx = std::max(mx, s[x]);
        }
        double sum = 0;
        for (size_t x = 0; x < keys.size(); ++x) sum += s[x] = std::exp(s[x] - mx);
        double* oi = &ref_o[(bh * n + i) * dh];
        for (size_t x = 0; x < keys.size(); ++x)
          for (int64_t d = 0; d < dh; ++d) oi[d] += s[x] * vh[keys[x] * dh + d];
        for (int64_t d = 0; d < dh; ++d) oi[d] /= sum;
        ref_lse[bh * n + i] = mx + std::log(sum);
      }
    }
  });
  return {std::move(ref_o), std::move(ref_lse)};
}

/// The float64 forward (o, lse) and gradients (dq, dk, dv of sum(dout * o)) of attention over
/// the keys `sees` allows, with the magnitudes of the terms dq's and dk's sums cancel (the floor
/// of f32's error where ds nearly cancels).
struct BackwardReference {
  std::vector<double> o, lse, dq, dk, dv, dq_terms, dk_terms;
};

BackwardReference
reference_backward(const HostBuffer& q, const HostBuffer& k, const HostBuffer& v,
                   const HostBuffer& dout, double scale,
                   const std::function<bool(int64_t, int64_t, int64_t, int64_t)>& sees) {
  const int64_t b = q.shape()[0], hq = q.shape()[1], n = q.shape()[2], dh = q.shape()[3];
  const int64_t hkv = k.shape()[1], group = hq / hkv;
  auto at = [&](int64_t bi, int64_t h, int64_t heads, int64_t i) {
    return ((bi * heads + h) * n + i) * dh;
  };
  // float64 forward (P kept) and gradients, one kv head (its whole query group) per task so
  // that dk and dv are summed without sharing.
  const std::vector<double> qd = as_doubles(q), kd = as_doubles(k), vd = as_doubles(v),
                            dod = as_doubles(dout);
  BackwardReference out;
  std::vector<double>&rq = out.dq, &rk = out.dk, &rv = out.dv;
  rq.assign(q.numel(), 0), rk.assign(k.numel(), 0), rv.assign(v.numel(), 0);
  // |dq| and |dk| summed from the magnitudes of the terms ds = p * (dp - dl) cancels: with few
  // keys (N = 2, causal) ds is a small difference of large terms, and f32's error follows them.
  std::vector<double>&rq_terms = out.dq_terms, &rk_terms = out.dk_terms;
  rq_terms.assign(q.numel(), 0), rk_terms.assign(k.numel(), 0);
  std::vector<double>&o_ref = out.o, &lse_ref = out.lse;
  o_ref.assign(q.numel(), 0), lse_ref.assign(b * hq * n, 0);
  workloads::parallel_ranges(b * hkv, [&](int64_t lo, int64_t hi) {
    std::vector<double> p(static_cast<size_t>(n * n)), ds(static_cast<size_t>(n * n)),
        ds_terms(static_cast<size_t>(n * n));
    for (int64_t bk = lo; bk < hi; ++bk) {
      const int64_t bi = bk / hkv, hk = bk % hkv;
      const double* kh = &kd[at(bi, hk, hkv, 0)];
      const double* vh = &vd[at(bi, hk, hkv, 0)];
      for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        const double* qh = &qd[at(bi, h, hq, 0)];
        const double* doh = &dod[at(bi, h, hq, 0)];
        for (int64_t i = 0; i < n; ++i) {
          double mx = -INFINITY;
          for (int64_t j = 0; j < n; ++j) {
            double s = -INFINITY;
            if (sees(bi, h, i, j)) {
              s = 0;
              for (int64_t d = 0; d < dh; ++d) s += qh[i * dh + d] * kh[j * dh + d];
              s *= scale;
            }
            p[i * n + j] = s;
            mx = std::max(mx, s);
          }
          // A row that sees no key: o = 0, lse = -inf, and no gradient through it.
          double sum = 0;
          for (int64_t j = 0; j < n; ++j)
            if (p[i * n + j] > -INFINITY) sum += std::exp(p[i * n + j] - mx);
          for (int64_t j = 0; j < n; ++j)
            p[i * n + j] = p[i * n + j] > -INFINITY ? std::exp(p[i * n + j] - mx) / sum : 0;
          lse_ref[(bi * hq + h) * n + i] = sum > 0 ? mx + std::log(sum) : -INFINITY;
          double dl = 0;
          for (int64_t d = 0; d < dh; ++d) {
            double od = 0;
            for (int64_t j = 0; j < n; ++j) od += p[i * n + j] * vh[j * dh + d];
            o_ref[at(bi, h, hq, i) + d] = od;
            dl += od * doh[i * dh + d];
          }
          for (int64_t j = 0; j < n; ++j) {
            double dp = 0;
            for (int64_t d = 0; d < dh; ++d) dp += doh[i * dh + d] * vh[j * dh + d];
            ds[i * n + j] = p[i * n + j] * (dp - dl);
            ds_terms[i * n + j] = p[i * n + j] * (std::abs(dp) + std::abs(dl));
          }
        }
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j) {
            if (p[i * n + j] == 0 && ds[i * n + j] == 0) continue;
            for (int64_t d = 0; d < dh; ++d) {
              rq[at(bi, h, hq, i) + d] += scale * ds[i * n + j] * kh[j * dh + d];
              rk[at(bi, hk, hkv, j) + d] += scale * ds[i * n + j] * qh[i * dh + d];
              rv[at(bi, hk, hkv, j) + d] += p[i * n + j] * doh[i * dh + d];
              rq_terms[at(bi, h, hq, i) + d] +=
                  scale * ds_terms[i * n + j] * std::abs(kh[j * dh + d]);
              rk_terms[at(bi, hk, hkv, j) + d] +=
                  scale * ds_terms[i * n + j] * std::abs(qh[i * dh + d]);
            }
          }
      }
    }
  });
  return out;
}

} // namespace

void check_attention_fwd(const KernelRunner& run, DType t, int64_t b, int64_t hq, int64_t hkv,
                         int64_t n, int64_t dh, bool causal, bool exact, const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("attn_fwd ", dtype_name(t), " B=", b, " HQ=", hq, " HKV=", hkv, " N=", n,
                   " DH=", dh, causal ? " causal" : "", exact ? " exact " : " ",
                   config_text(config), " seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer q(t, {b, hq, n, dh}), k(t, {b, hkv, n, dh}), v(t, {b, hkv, n, dh}),
      o(t, {b, hq, n, dh}), lse(DType::F32, {b, hq, n});
  fill_uniform(q, rng, -2, 2);
  fill_uniform(k, rng, -2, 2);
  fill_uniform(v, rng, -1, 1);
  o.poison();
  lse.poison();
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  Bindings given = config;
  given["T"] = dtype_name(t);
  given["D"] = std::to_string((dh + 15) / 16 * 16);
  given["CAUSAL"] = causal ? "1" : "0";
  given["EXACT"] = exact ? "1" : "0";
  run("embedded:workloads/attention.tile#attn_fwd", given,
      {TestArg::of(q), TestArg::of(k), TestArg::of(v), TestArg::of(o), TestArg::of(lse),
       TestArg::f32(static_cast<float>(scale))});
  const auto [ref_o, ref_lse] = reference_forward(
      q, k, v, scale, [&](int64_t, int64_t, int64_t i, int64_t j) { return !causal || j <= i; });
  const bool wide = t != DType::F32;
  expect_close(o, ref_o, wide ? 1e-2 : exact ? 1e-5 : 5e-3);
  // TF32: a causal first row's lse is one score, a D-term dot of operands rounded to 10 bits.
  const double lse_tol = wide ? 2e-3 : exact ? 1e-5 : 3e-3;
  double worst = 0;
  int64_t at = -1;
  for (int64_t i = 0; i < lse.numel(); ++i) {
    const double e = std::abs(lse.get(i) - ref_lse[i]);
    if (!(e <= worst)) worst = e, at = i; // NaN counts as the worst
  }
  EXPECT_LE(worst, lse_tol) << "lse element " << at << ": " << lse.get(at) << " vs " << ref_lse[at];
}

void check_ring_attention(const KernelRunner& run, DType t, int64_t b, int64_t hq, int64_t hkv,
                          int64_t chunk, int64_t dh, int world, bool causal, bool backward,
                          const Bindings& config) {
  uint32_t seed = fresh_seed();
  const int64_t n = 2 * world * chunk, chunks = 2 * world;
  SCOPED_TRACE(str("ring attention ", dtype_name(t), " B=", b, " HQ=", hq, " HKV=", hkv,
                   " chunk=", chunk, " DH=", dh, " world=", world, causal ? " causal" : "",
                   backward ? " backward " : " ", config_text(config), " seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer q(t, {b, hq, n, dh}), k(t, {b, hkv, n, dh}), v(t, {b, hkv, n, dh}),
      dout(t, {b, hq, n, dh});
  fill_uniform(q, rng, -2, 2);
  fill_uniform(k, rng, -2, 2);
  fill_uniform(v, rng, -1, 1);
  fill_uniform(dout, rng, -1, 1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  const BackwardReference ref =
      reference_backward(q, k, v, dout, scale,
                         [&](int64_t, int64_t, int64_t i, int64_t j) { return !causal || j <= i; });
  // Chunk c of a [b, h, n, dh] (or [b, h, n]) tensor, as a rank holds it, and the reference's.
  auto chunk_of = [&](const HostBuffer& full, int64_t c) {
    std::vector<int64_t> shape = full.shape();
    const int64_t row = shape.size() == 4 ? shape[3] : 1, heads = shape[1];
    shape[2] = chunk;
    HostBuffer out(full.dtype(), shape);
    for (int64_t bh = 0; bh < b * heads; ++bh)
      for (int64_t i = 0; i < chunk * row; ++i)
        out.set(bh * chunk * row + i, full.get((bh * n + c * chunk) * row + i));
    return out;
  };
  auto ref_chunk = [&](const std::vector<double>& full, int64_t heads, int64_t row, int64_t c) {
    std::vector<double> out(static_cast<size_t>(b * heads * chunk * row));
    for (int64_t bh = 0; bh < b * heads; ++bh)
      for (int64_t i = 0; i < chunk * row; ++i)
        out[bh * chunk * row + i] = full[(bh * n + c * chunk) * row + i];
    return out;
  };
  auto filled = [](DType d, std::vector<int64_t> shape, double value) {
    HostBuffer out(d, std::move(shape));
    for (int64_t i = 0; i < out.numel(); ++i) out.set(i, value);
    return out;
  };
  const std::string src = "embedded:workloads/attention.tile#";
  Bindings given = config;
  given["T"] = dtype_name(t);
  given["D"] = std::to_string((dh + 15) / 16 * 16);
  given["EXACT"] = "0";
  const Bindings elementwise = {{"T", given["T"]}, {"D", given["D"]}};
  const bool wide = t != DType::F32;
  // Forward: per global query chunk its running result (acc, lse) and output o.
  std::vector<HostBuffer> acc, lse, o;
  for (int64_t c = 0; c < chunks; ++c) {
    acc.push_back(filled(DType::F32, {b, hq, chunk, dh}, 0.0));
    lse.push_back(filled(DType::F32, {b, hq, chunk}, -INFINITY));
    o.emplace_back(t, std::vector<int64_t>{b, hq, chunk, dh});
    o.back().poison();
  }
  for (int rank = 0; rank < world; ++rank)
    for (const workloads::RingStep& step : workloads::ring_schedule(world, rank, causal))
      for (const workloads::RingBlock& blk : step.blocks) {
        HostBuffer qc = chunk_of(q, blk.q_chunk), kc = chunk_of(k, blk.kv_chunk),
                   vc = chunk_of(v, blk.kv_chunk), o_p(t, {b, hq, chunk, dh}),
                   lse_p(DType::F32, {b, hq, chunk});
        o_p.poison();
        lse_p.poison();
        Bindings fwd = given;
        fwd["CAUSAL"] = blk.causal ? "1" : "0";
        run(src + "attn_fwd", fwd,
            {TestArg::of(qc), TestArg::of(kc), TestArg::of(vc), TestArg::of(o_p),
             TestArg::of(lse_p), TestArg::f32(static_cast<float>(scale))});
        run(src + "attn_merge", elementwise,
            {TestArg::of(o_p), TestArg::of(lse_p), TestArg::of(acc[blk.q_chunk]),
             TestArg::of(lse[blk.q_chunk]), TestArg::of(o[blk.q_chunk])});
      }
  for (int64_t c = 0; c < chunks; ++c) {
    SCOPED_TRACE(str("query chunk ", c));
    expect_close(o[c], ref_chunk(ref.o, hq, dh, c), wide ? 1e-2 : 5e-3);
    const std::vector<double> want = ref_chunk(ref.lse, hq, 1, c);
    double worst = 0;
    for (int64_t i = 0; i < lse[c].numel(); ++i) {
      const double e = std::abs(lse[c].get(i) - want[i]);
      if (!(e <= worst)) worst = e; // NaN counts as the worst
    }
    EXPECT_LE(worst, wide ? 2e-3 : 3e-3);
  }
  if (!backward) return;
  // Backward: delta and dq's accumulator per query chunk; dk and dv per key chunk summed in f32
  // as the chunk would travel, the blocks as the forward's.
  std::vector<HostBuffer> delta, dq_acc, dq, dk_acc, dv_acc, dk, dv;
  for (int64_t c = 0; c < chunks; ++c) {
    delta.emplace_back(DType::F32, std::vector<int64_t>{b, hq, chunk});
    dq_acc.emplace_back(DType::F32, std::vector<int64_t>{b, hq, chunk, dh});
    dq.emplace_back(t, std::vector<int64_t>{b, hq, chunk, dh});
    dk_acc.push_back(filled(DType::F32, {b, hkv, chunk, dh}, 0.0));
    dv_acc.push_back(filled(DType::F32, {b, hkv, chunk, dh}, 0.0));
    dk.emplace_back(t, std::vector<int64_t>{b, hkv, chunk, dh});
    dv.emplace_back(t, std::vector<int64_t>{b, hkv, chunk, dh});
    for (HostBuffer* x : {&delta.back(), &dq_acc.back(), &dq.back(), &dk.back(), &dv.back()})
      x->poison();
    HostBuffer doc = chunk_of(dout, c);
    run(src + "attn_bwd_pre", {{"T", given["T"]}, {"D", given["D"]}, {"ATOMIC_DQ", "1"}},
        {TestArg::of(o[c]), TestArg::of(doc), TestArg::of(delta[c]), TestArg::of(dq_acc[c])});
  }
  for (int rank = 0; rank < world; ++rank)
    for (const workloads::RingStep& step : workloads::ring_schedule(world, rank, causal))
      for (const workloads::RingBlock& blk : step.blocks) {
        HostBuffer qc = chunk_of(q, blk.q_chunk), kc = chunk_of(k, blk.kv_chunk),
                   vc = chunk_of(v, blk.kv_chunk), doc = chunk_of(dout, blk.q_chunk),
                   dk_p(t, {b, hkv, chunk, dh}), dv_p(t, {b, hkv, chunk, dh});
        dk_p.poison();
        dv_p.poison();
        Bindings bwd = given;
        bwd["CAUSAL"] = blk.causal ? "1" : "0";
        bwd["ATOMIC_DQ"] = "1";
        run(src + "attn_bwd", bwd,
            {TestArg::of(qc), TestArg::of(kc), TestArg::of(vc), TestArg::of(doc),
             TestArg::of(lse[blk.q_chunk]), TestArg::of(delta[blk.q_chunk]), TestArg::of(dk_p),
             TestArg::of(dv_p), TestArg::of(dq_acc[blk.q_chunk]),
             TestArg::f32(static_cast<float>(scale))});
        run(src + "attn_add", elementwise,
            {TestArg::of(dk_p), TestArg::of(dk_acc[blk.kv_chunk]), TestArg::of(dk[blk.kv_chunk])});
        run(src + "attn_add", elementwise,
            {TestArg::of(dv_p), TestArg::of(dv_acc[blk.kv_chunk]), TestArg::of(dv[blk.kv_chunk])});
      }
  const double tol = wide ? 3e-2 : 1e-2;
  for (int64_t c = 0; c < chunks; ++c) {
    SCOPED_TRACE(str("chunk ", c));
    run(src + "attn_bwd_dq", elementwise, {TestArg::of(dq_acc[c]), TestArg::of(dq[c])});
    expect_close(dq[c], ref_chunk(ref.dq, hq, dh, c), tol);
    expect_close(dk[c], ref_chunk(ref.dk, hkv, dh, c), tol);
    expect_close(dv[c], ref_chunk(ref.dv, hkv, dh, c), tol);
  }
}

void check_attention_ops(Runtime& rt, DType t, int64_t b, int64_t hq, int64_t hkv, int64_t n,
                         int64_t dh, bool causal, const std::string& what,
                         const std::function<void(const AttentionOpTensors&)>& call) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str(what, " ", dtype_name(t), " B=", b, " HQ=", hq, " HKV=", hkv, " N=", n,
                   " DH=", dh, causal ? " causal" : "", " seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer q(t, {b, hq, n, dh}), k(t, {b, hkv, n, dh}), v(t, {b, hkv, n, dh}),
      dout(t, {b, hq, n, dh}), o(t, {b, hq, n, dh}), lse(DType::F32, {b, hq, n}),
      dq(t, {b, hq, n, dh}), dk(t, {b, hkv, n, dh}), dv(t, {b, hkv, n, dh});
  fill_uniform(q, rng, -2, 2);
  fill_uniform(k, rng, -2, 2);
  fill_uniform(v, rng, -1, 1);
  fill_uniform(dout, rng, -1, 1);
  for (HostBuffer* x : {&o, &lse, &dq, &dk, &dv}) x->poison();
  // Every buffer on the GPU as it is on the host (the outputs poisoned), and back after.
  std::vector<HostBuffer*> all = {&q, &k, &v, &dout, &o, &lse, &dq, &dk, &dv};
  std::vector<DeviceBuffer> dev;
  std::vector<Tensor> ts;
  for (HostBuffer* x : all) {
    const size_t bytes = static_cast<size_t>(x->numel()) * dtype_size(x->dtype());
    dev.emplace_back(std::max<size_t>(bytes, 16), rt.device_ordinal());
    dev.back().upload(x->data(), bytes);
    Tensor tensor = Tensor::contiguous(dev.back().data(), x->dtype(), x->shape());
    tensor.device_index = rt.device_ordinal();
    ts.push_back(tensor);
  }
  call({ts[0], ts[1], ts[2], ts[3], ts[4], ts[5], ts[6], ts[7], ts[8]});
  for (size_t i = 4; i < all.size(); ++i)
    dev[i].download(all[i]->data(),
                    static_cast<size_t>(all[i]->numel()) * dtype_size(all[i]->dtype()));
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  const BackwardReference ref =
      reference_backward(q, k, v, dout, scale,
                         [&](int64_t, int64_t, int64_t i, int64_t j) { return !causal || j <= i; });
  const bool wide = t != DType::F32;
  expect_close(o, ref.o, wide ? 1e-2 : 5e-3);
  double worst = 0;
  for (int64_t i = 0; i < lse.numel(); ++i) {
    const double e = std::abs(lse.get(i) - ref.lse[i]);
    if (!(e <= worst)) worst = e; // NaN counts as the worst
  }
  EXPECT_LE(worst, wide ? 2e-3 : 3e-3);
  const double tol = wide ? 3e-2 : 1e-2;
  expect_close(dq, ref.dq, tol);
  expect_close(dk, ref.dk, tol);
  expect_close(dv, ref.dv, tol);
}

void check_ring_op_of_one(Runtime& rt, DType t, int64_t b, int64_t hq, int64_t hkv, int64_t chunk,
                          int64_t dh, bool causal) {
  check_attention_ops(rt, t, b, hq, hkv, 2 * chunk, dh, causal, "ring op of one",
                      [&](const AttentionOpTensors& x) {
                        ops::RingGroup ring(rt, ops::RingGroup::new_id(), 1, 0);
                        ops::RingAttentionForwardArgs fa;
                        fa.q = x.q, fa.k = x.k, fa.v = x.v, fa.o = x.o, fa.lse = x.lse;
                        fa.causal = causal;
                        ops::ring_attention_forward(rt, ring, fa);
                        ops::RingAttentionBackwardArgs ba;
                        ba.q = x.q, ba.k = x.k, ba.v = x.v, ba.o = x.o, ba.lse = x.lse;
                        ba.dout = x.dout, ba.dq = x.dq, ba.dk = x.dk, ba.dv = x.dv;
                        ba.causal = causal;
                        ops::ring_attention_backward(rt, ring, ba);
                      });
}

void check_attention_sparse_fwd(const KernelRunner& run, DType t, int64_t b, int64_t hq,
                                int64_t hkv, int64_t n, int64_t dh, int64_t blk, int64_t mask_b,
                                int64_t mask_h, double density, bool causal,
                                const Bindings& config) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("attn_fwd_sparse ", dtype_name(t), " B=", b, " HQ=", hq, " HKV=", hkv, " N=", n,
                   " DH=", dh, " BLK=", blk, " mask ", mask_b, "x", mask_h, " density ", density,
                   causal ? " causal " : " ", config_text(config), " seed=", seed));
  std::mt19937 rng(seed);
  const int64_t nb = (n + blk - 1) / blk;
  HostBuffer q(t, {b, hq, n, dh}), k(t, {b, hkv, n, dh}), v(t, {b, hkv, n, dh}),
      o(t, {b, hq, n, dh}), lse(DType::F32, {b, hq, n}), kv_cnt(DType::I32, {mask_b, mask_h, nb}),
      kv_idx(DType::I32, {mask_b, mask_h, nb, nb});
  fill_uniform(q, rng, -2, 2);
  fill_uniform(k, rng, -2, 2);
  fill_uniform(v, rng, -1, 1);
  const std::vector<char> keep =
      random_block_mask(rng, mask_b, mask_h, nb, density, &kv_cnt, &kv_idx, nullptr, nullptr);
  o.poison();
  lse.poison();
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  Bindings given = config;
  given["T"] = dtype_name(t);
  given["D"] = std::to_string((dh + 15) / 16 * 16);
  given["BLK"] = std::to_string(blk);
  given["CAUSAL"] = causal ? "1" : "0";
  given["EXACT"] = "0";
  run("embedded:workloads/attention.tile#attn_fwd_sparse", given,
      {TestArg::of(q), TestArg::of(k), TestArg::of(v), TestArg::of(kv_cnt), TestArg::of(kv_idx),
       TestArg::of(o), TestArg::of(lse), TestArg::f32(static_cast<float>(scale))});
  const auto [ref_o, ref_lse] =
      reference_forward(q, k, v, scale, [&](int64_t bi, int64_t h, int64_t i, int64_t j) {
        const int64_t mbh = std::min(bi, mask_b - 1) * mask_h + std::min(h, mask_h - 1);
        return keep[(mbh * nb + i / blk) * nb + j / blk] && (!causal || j <= i);
      });
  const bool wide = t != DType::F32;
  expect_close(o, ref_o, wide ? 1e-2 : 5e-3);
  // Rows with nothing to attend to: exactly o = 0 and lse = -inf (a relative error over the
  // whole tensor could hide them); the others' lse within the dense check's tolerance.
  int64_t empty_rows = 0, wrong_empty = 0;
  double worst = 0;
  for (int64_t r = 0; r < lse.numel(); ++r) {
    if (std::isinf(ref_lse[r])) {
      ++empty_rows;
      bool ok = lse.get(r) == -INFINITY;
      for (int64_t d = 0; d < dh; ++d) ok = ok && o.get(r * dh + d) == 0.0;
      wrong_empty += !ok;
      continue;
    }
    const double e = std::abs(lse.get(r) - ref_lse[r]);
    if (!(e <= worst)) worst = e;
  }
  EXPECT_GT(empty_rows, 0) << "the mask left no row empty: the case is not tested";
  EXPECT_EQ(wrong_empty, 0) << "rows with no kept key must be o = 0, lse = -inf";
  EXPECT_LE(worst, wide ? 2e-3 : 3e-3);
}

namespace {

/// A block mask for the backward check: BLK x BLK blocks kept with probability `density`, one
/// mask per batch / head (mask_b, mask_h) or 1 broadcast.
struct SparseSpec {
  int64_t blk, mask_b, mask_h;
  double density;
};

void check_backward(const KernelRunner& run, DType t, int64_t b, int64_t hq, int64_t hkv, int64_t n,
                    int64_t dh, bool causal, bool exact, const Bindings& config,
                    const SparseSpec* sparse, bool dq_kernel = false) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str(sparse ? "attn_bwd_sparse " : "attn_bwd ", dtype_name(t), " B=", b, " HQ=", hq,
                   " HKV=", hkv, " N=", n, " DH=", dh,
                   sparse ? str(" BLK=", sparse->blk, " mask ", sparse->mask_b, "x", sparse->mask_h,
                                " density ", sparse->density)
                          : std::string(),
                   causal ? " causal" : "", exact ? " exact " : " ", config_text(config),
                   dq_kernel ? (sparse ? " dq by attn_dq_sparse" : " dq by attn_dq") : "",
                   " seed=", seed));
  std::mt19937 rng(seed);
  HostBuffer q(t, {b, hq, n, dh}), k(t, {b, hkv, n, dh}), v(t, {b, hkv, n, dh}),
      dout(t, {b, hq, n, dh}), o(t, {b, hq, n, dh}), lse(DType::F32, {b, hq, n}),
      delta(DType::F32, {b, hq, n}), dq_acc(DType::F32, {b, hq, n, dh}), dq(t, {b, hq, n, dh}),
      dk(t, {b, hkv, n, dh}), dv(t, {b, hkv, n, dh});
  fill_uniform(q, rng, -2, 2);
  fill_uniform(k, rng, -2, 2);
  fill_uniform(v, rng, -1, 1);
  fill_uniform(dout, rng, -1, 1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  const int64_t blk = sparse ? sparse->blk : 1, nb = sparse ? (n + blk - 1) / blk : 0;
  const int64_t mask_b = sparse ? sparse->mask_b : 1, mask_h = sparse ? sparse->mask_h : 1;
  HostBuffer q_cnt(DType::I32, {mask_b, mask_h, nb}), q_idx(DType::I32, {mask_b, mask_h, nb, nb});
  // attn_dq_sparse walks the forward's lists (per query block), attn_bwd_sparse the transposed.
  HostBuffer kv_cnt(DType::I32, {mask_b, mask_h, nb}), kv_idx(DType::I32, {mask_b, mask_h, nb, nb});
  const std::vector<char> keep = sparse
                                     ? random_block_mask(rng, mask_b, mask_h, nb, sparse->density,
                                                         &kv_cnt, &kv_idx, &q_cnt, &q_idx)
                                     : std::vector<char>();
  // Whether query i of head h (batch bi) sees key j.
  auto sees = [&](int64_t bi, int64_t h, int64_t i, int64_t j) {
    if (causal && j > i) return false;
    if (!sparse) return true;
    const int64_t mbh = std::min(bi, mask_b - 1) * mask_h + std::min(h, mask_h - 1);
    return keep[(mbh * nb + i / blk) * nb + j / blk] != 0;
  };
  const BackwardReference r = reference_backward(q, k, v, dout, scale, sees);
  const std::vector<double>&rq = r.dq, &rk = r.dk, &rv = r.dv, &rq_terms = r.dq_terms,
        &rk_terms = r.dk_terms, &o_ref = r.o, &lse_ref = r.lse;
  // The kernels read o and lse in their own dtypes, as the forward would have written them.
  for (int64_t i = 0; i < o.numel(); ++i) o.set(i, o_ref[i]);
  for (int64_t i = 0; i < lse.numel(); ++i) lse.set(i, lse_ref[i]);
  delta.poison();
  dq_acc.poison();
  dq.poison();
  dk.poison();
  dv.poison();
  const std::string d = std::to_string((dh + 15) / 16 * 16);
  const std::string src = "embedded:workloads/attention.tile#";
  const std::string atomic_dq = dq_kernel ? "0" : "1";
  run(src + "attn_bwd_pre", {{"T", dtype_name(t)}, {"D", d}, {"ATOMIC_DQ", atomic_dq}},
      {TestArg::of(o), TestArg::of(dout), TestArg::of(delta), TestArg::of(dq_acc)});
  Bindings given = config;
  given["T"] = dtype_name(t);
  given["D"] = d;
  given["CAUSAL"] = causal ? "1" : "0";
  given["EXACT"] = exact ? "1" : "0";
  if (sparse) {
    given["BLK"] = std::to_string(blk);
    Bindings bwd = given;
    bwd["ATOMIC_DQ"] = atomic_dq;
    run(src + "attn_bwd_sparse", bwd,
        {TestArg::of(q), TestArg::of(k), TestArg::of(v), TestArg::of(dout), TestArg::of(lse),
         TestArg::of(delta), TestArg::of(q_cnt), TestArg::of(q_idx), TestArg::of(dk),
         TestArg::of(dv), TestArg::of(dq_acc), TestArg::f32(static_cast<float>(scale))});
  } else {
    Bindings bwd = given;
    bwd["ATOMIC_DQ"] = atomic_dq;
    run(src + "attn_bwd", bwd,
        {TestArg::of(q), TestArg::of(k), TestArg::of(v), TestArg::of(dout), TestArg::of(lse),
         TestArg::of(delta), TestArg::of(dk), TestArg::of(dv), TestArg::of(dq_acc),
         TestArg::f32(static_cast<float>(scale))});
  }
  if (dq_kernel) {
    Bindings dq_config = given;
    dq_config.erase("TR"); // attn_bwd's own form (transposed or not) and its wgmma switch
    dq_config.erase("WG");
    if (sparse)
      run(src + "attn_dq_sparse", dq_config,
          {TestArg::of(q), TestArg::of(k), TestArg::of(v), TestArg::of(dout), TestArg::of(lse),
           TestArg::of(delta), TestArg::of(kv_cnt), TestArg::of(kv_idx), TestArg::of(dq),
           TestArg::f32(static_cast<float>(scale))});
    else
      run(src + "attn_dq", dq_config,
          {TestArg::of(q), TestArg::of(k), TestArg::of(v), TestArg::of(dout), TestArg::of(lse),
           TestArg::of(delta), TestArg::of(dq), TestArg::f32(static_cast<float>(scale))});
  } else {
    run(src + "attn_bwd_dq", {{"T", dtype_name(t)}, {"D", d}},
        {TestArg::of(dq_acc), TestArg::of(dq)});
  }
  const double tol = t != DType::F32 ? 3e-2 : exact ? 1e-4 : 1e-2;
  // f32 resolves a cancellation to about 1e-6 of its terms' size (some ulps): that is the
  // floor under ||dq|| and ||dk|| (it binds only where ds nearly cancels, as at N = 2).
  auto norm = [](const std::vector<double>& x) {
    double s = 0;
    for (double e : x) s += e * e;
    return std::sqrt(s);
  };
  const double floor_scale = 1e-6 / tol;
  {
    SCOPED_TRACE("dq");
    expect_close(dq, rq, tol, floor_scale * norm(rq_terms));
  }
  {
    SCOPED_TRACE("dk");
    expect_close(dk, rk, tol, floor_scale * norm(rk_terms));
  }
  {
    SCOPED_TRACE("dv");
    expect_close(dv, rv, tol);
  }
  if (sparse) {
    // Rows that see nothing get exactly zero dq; the test must have some.
    int64_t empty = 0, wrong = 0;
    for (int64_t r = 0; r < lse.numel(); ++r) {
      if (!std::isinf(lse_ref[r])) continue;
      ++empty;
      for (int64_t x = 0; x < dh; ++x) wrong += dq.get(r * dh + x) != 0.0;
    }
    EXPECT_GT(empty, 0) << "the mask left no row empty: the case is not tested";
    EXPECT_EQ(wrong, 0) << "rows that see no key must get dq = 0";
  }
}

} // namespace

void check_attention_bwd(const KernelRunner& run, DType t, int64_t b, int64_t hq, int64_t hkv,
                         int64_t n, int64_t dh, bool causal, bool exact, const Bindings& config) {
  check_backward(run, t, b, hq, hkv, n, dh, causal, exact, config, nullptr);
}

void check_attention_bwd_dq_kernel(const KernelRunner& run, DType t, int64_t b, int64_t hq,
                                   int64_t hkv, int64_t n, int64_t dh, bool causal, bool exact,
                                   const Bindings& config) {
  check_backward(run, t, b, hq, hkv, n, dh, causal, exact, config, nullptr, /*dq_kernel=*/true);
}

void check_attention_sparse_bwd(const KernelRunner& run, DType t, int64_t b, int64_t hq,
                                int64_t hkv, int64_t n, int64_t dh, int64_t blk, int64_t mask_b,
                                int64_t mask_h, double density, bool causal, const Bindings& config,
                                bool dq_kernel) {
  const SparseSpec spec{blk, mask_b, mask_h, density};
  check_backward(run, t, b, hq, hkv, n, dh, causal, false, config, &spec, dq_kernel);
}

} // namespace tilejit::test
