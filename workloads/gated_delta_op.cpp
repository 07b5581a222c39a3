// tilejit::ops::linear_attn_forward / linear_attn_backward and gated_delta_rule_forward
// (<tilejit/ops.h>): gated_delta's kernels (kernels_src/workloads/gated_delta.tile) on an
// application's tensors. The checks come first and name the tensor; the launches are the
// Runtime's (tuned configurations).
#include "support/error.h"
#include "workloads/op_buffers.h"
#include "workloads/op_checks.h"

#include <tilejit/ops.h>

#include <algorithm>
#include <cmath>

namespace tilejit::ops {
namespace {

const char* const kSource = "embedded:workloads/gated_delta.tile";
const OpChecks la_forward_checks("linear_attn_forward");
const OpChecks la_backward_checks("linear_attn_backward");
const OpChecks rule_checks("gated_delta_rule_forward");
const OpChecks rule_backward_checks("gated_delta_rule_backward");

/// The kernels' tile width of a head dim: rounded up to 16.
std::string tile_width(int64_t head_dim) {
  return std::to_string((head_dim + 15) / 16 * 16);
}

/// q, k [B, T, H, Dk] and v [B, T, H, Dv]: ranks, one 16-bit dtype, matching B, T and H, head
/// dims from 1 to 256, rows dense.
void check_qkv(const OpChecks& c, const Tensor& q, const Tensor& k, const Tensor& v) {
  c.rank_and_dtype("q", q, 4, {DType::F16, DType::BF16}, "[B, T, H, Dk]");
  c.rank_and_dtype("k", k, 4, {q.dtype}, "[B, T, H, Dk], q's dtype");
  c.rank_and_dtype("v", v, 4, {q.dtype}, "[B, T, H, Dv], q's dtype");
  for (int dim = 0; dim < 4; ++dim) c.size("k", k, dim, q.shape[dim], "q's");
  const char* what[3] = {"q's batch B", "q's length T", "q's heads H"};
  for (int dim = 0; dim < 3; ++dim) c.size("v", v, dim, q.shape[dim], what[dim]);
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"q", &q}, {"v", &v}}) {
    const int64_t d = t->shape[3];
    if (d < 1 || d > 256)
      throw Error(str(c.named(name, *t), ": head dim ", d, " is not from 1 to 256"));
  }
  for (const auto& [name, t] :
       {std::pair<const char*, const Tensor*>{"q", &q}, {"k", &k}, {"v", &v}})
    c.rows_dense(name, *t);
}

void check_like(const OpChecks& c, const char* name, const Tensor& t, const Tensor& like,
                const char* like_name) {
  c.rank_and_dtype(name, t, like.rank(), {like.dtype}, like_name);
  for (int dim = 0; dim < like.rank(); ++dim) c.size(name, t, dim, like.shape[dim], like_name);
  c.rows_dense(name, t);
}

/// A [B, T, H] (or [B, H, Dk, Dv]) f32 tensor, contiguous, of `like`'s sizes.
void check_f32(const OpChecks& c, const char* name, const Tensor& t,
               const std::vector<int64_t>& shape, const char* layout) {
  c.rank_and_dtype(name, t, static_cast<int>(shape.size()), {DType::F32}, layout);
  for (int dim = 0; dim < static_cast<int>(shape.size()); ++dim)
    c.size(name, t, dim, shape[dim], layout);
  c.contiguous(name, t);
}

double scale_of(const OpChecks& c, const std::optional<double>& scale, const Tensor& q) {
  if (!scale) return 1.0 / std::sqrt(static_cast<double>(q.shape[3]));
  if (!std::isfinite(*scale))
    throw Error(str(c.named("q", q), ": scale = ", *scale, " is not a finite number"));
  return *scale;
}

/// One launch of linear_attn: out = la(x, y, z) (anti-causal when `rev`).
void launch_la(Runtime& rt, const Tensor& x, const Tensor& y, const Tensor& z, const Tensor& out,
               bool rev, double scale, const Config& user, void* stream) {
  LaunchOptions lo;
  lo.stream = stream;
  lo.config = user;
  lo.config["DK"] = tile_width(x.shape[3]);
  lo.config["REV"] = rev ? "1" : "0";
  static const std::string source = kSource;
  rt.launch(rt.load(source, "linear_attn"),
            {Arg::of(x), Arg::of(y), Arg::of(z), Arg::of(out), Arg::f32(static_cast<float>(scale))},
            lo);
}

} // namespace

void check_linear_attn_forward(const LinearAttnForwardArgs& a) {
  const OpChecks& c = la_forward_checks;
  check_qkv(c, a.q, a.k, a.v);
  if (a.o) check_like(c, "o", *a.o, a.v, "v's shape and dtype");
  scale_of(c, a.scale, a.q);
  c.on_one_gpu({{"q", &a.q}, {"k", &a.k}, {"v", &a.v}, {"o", a.o ? &*a.o : nullptr}});
}

LinearAttnForwardResult linear_attn_forward(Runtime& rt, const LinearAttnForwardArgs& a) {
  check_linear_attn_forward(a);
  LinearAttnForwardResult out;
  auto owned = std::make_shared<OwnedBuffers>();
  out.o = a.o ? *a.o : owned->allocate(a.v.dtype, a.v.shape, a.v.device_index);
  if (!owned->buffers.empty()) out.storage = owned;
  if (a.v.numel() == 0) return out;
  launch_la(rt, a.q, a.k, a.v, out.o, false, scale_of(la_forward_checks, a.scale, a.q), a.config,
            a.stream);
  return out;
}

void check_linear_attn_backward(const LinearAttnBackwardArgs& a) {
  const OpChecks& c = la_backward_checks;
  check_qkv(c, a.q, a.k, a.v);
  check_like(c, "dout", a.dout, a.v, "v's shape and dtype");
  if (a.dq) check_like(c, "dq", *a.dq, a.q, "q's shape and dtype");
  if (a.dk) check_like(c, "dk", *a.dk, a.k, "k's shape and dtype");
  if (a.dv) check_like(c, "dv", *a.dv, a.v, "v's shape and dtype");
  scale_of(c, a.scale, a.q);
  c.on_one_gpu({{"q", &a.q},
                {"k", &a.k},
                {"v", &a.v},
                {"dout", &a.dout},
                {"dq", a.dq ? &*a.dq : nullptr},
                {"dk", a.dk ? &*a.dk : nullptr},
                {"dv", a.dv ? &*a.dv : nullptr}});
}

LinearAttnBackwardResult linear_attn_backward(Runtime& rt, const LinearAttnBackwardArgs& a) {
  check_linear_attn_backward(a);
  LinearAttnBackwardResult out;
  const int device = a.q.device_index;
  auto owned = std::make_shared<OwnedBuffers>();
  out.dq = a.dq ? *a.dq : owned->allocate(a.q.dtype, a.q.shape, device);
  out.dk = a.dk ? *a.dk : owned->allocate(a.k.dtype, a.k.shape, device);
  out.dv = a.dv ? *a.dv : owned->allocate(a.v.dtype, a.v.shape, device);
  if (!owned->buffers.empty()) out.storage = owned;
  if (a.q.numel() == 0 || a.v.numel() == 0) return out;
  const double scale = scale_of(la_backward_checks, a.scale, a.q);
  launch_la(rt, a.dout, a.v, a.k, out.dq, false, scale, a.config, a.stream);
  // Small heads: dk and dv in one reverse pass (the state, Dk x Dv f32, in registers), the
  // faster on an H200 at Dk = Dv = 32 and 64
  // (bench/results/2026-11-29-5baef06-linear-attn-kv-h200.md); wider heads, where the state would
  // not fit, in two anti-causal launches.
  if (a.q.shape[3] <= 64 && a.v.shape[3] <= 64) { // tile widths up to 64
    LaunchOptions lo;
    lo.stream = a.stream;
    lo.config = a.config;
    lo.config.erase("BV"); // linear_attn's: this kernel holds all of v's columns
    lo.config["DK"] = tile_width(a.q.shape[3]);
    lo.config["DV"] = tile_width(a.v.shape[3]);
    static const std::string source = kSource;
    rt.launch(rt.load(source, "linear_attn_bwd_kv"),
              {Arg::of(a.q), Arg::of(a.k), Arg::of(a.v), Arg::of(a.dout), Arg::of(out.dk),
               Arg::of(out.dv), Arg::f32(static_cast<float>(scale))},
              lo);
    return out;
  }
  launch_la(rt, a.k, a.q, a.dout, out.dv, true, scale, a.config, a.stream);
  launch_la(rt, a.v, a.dout, a.q, out.dk, true, scale, a.config, a.stream);
  return out;
}

namespace {

/// The sequences' states' shape: [B, H, Dk, Dv], or [N, H, Dk, Dv] for N packed sequences.
std::vector<int64_t> state_shape(const GatedDeltaRuleArgs& a) {
  const int64_t n =
      a.cu_seqlens.empty() ? a.q.shape[0] : static_cast<int64_t>(a.cu_seqlens.size()) - 1;
  return {n, a.q.shape[2], a.q.shape[3], a.v.shape[3]};
}

/// cu_seqlens: at least one sequence, from 0 to q's T without going back, a batch of one.
void check_cu_seqlens(const OpChecks& c, const GatedDeltaRuleArgs& a) {
  const std::vector<int64_t>& cu = a.cu_seqlens;
  if (cu.empty()) return;
  const std::string what = "cu_seqlens (N + 1 offsets into T: 0, ..., T)";
  if (cu.size() < 2) throw Error(str(c.named("q", a.q), ": ", what, " has ", cu.size(), " entry"));
  if (a.q.shape[0] != 1)
    throw Error(str(c.named("q", a.q),
                    ": with cu_seqlens the sequences are packed along T of a "
                    "batch of one, but B = ",
                    a.q.shape[0]));
  if (cu.front() != 0)
    throw Error(str(c.named("q", a.q), ": ", what, " starts at ", cu.front(), ", not 0"));
  for (size_t n = 1; n < cu.size(); ++n)
    if (cu[n] < cu[n - 1])
      throw Error(str(c.named("q", a.q), ": ", what, " goes back from ", cu[n - 1], " to ", cu[n],
                      " at entry ", n));
  if (cu.back() != a.q.shape[1])
    throw Error(str(c.named("q", a.q), ": ", what, " ends at ", cu.back(),
                    " but q has T = ", a.q.shape[1]));
}

/// The rule's inputs and options (its outputs checked by the forward alone).
void check_rule_inputs(const OpChecks& c, const GatedDeltaRuleArgs& a) {
  check_qkv(c, a.q, a.k, a.v);
  check_cu_seqlens(c, a);
  const std::vector<int64_t> gate = {a.q.shape[0], a.q.shape[1], a.q.shape[2]};
  const std::vector<int64_t> state = state_shape(a);
  const char* state_want = a.cu_seqlens.empty() ? "[B, H, Dk, Dv] f32" : "[N, H, Dk, Dv] f32";
  check_f32(c, "g", a.g, gate, "[B, T, H] f32, q's B, T and H");
  check_f32(c, "beta", a.beta, gate, "[B, T, H] f32, q's B, T and H");
  if (a.h0) check_f32(c, "h0", *a.h0, state, state_want);
  if (a.chunk != 16 && a.chunk != 32 && a.chunk != 64)
    throw Error(str(c.named("q", a.q), ": chunk = ", a.chunk, " is not 16, 32 or 64"));
  scale_of(c, a.scale, a.q);
}

/// `len` entries of dimension `dim` from `start`: a view (same strides).
Tensor narrow(const Tensor& t, int dim, int64_t start, int64_t len) {
  Tensor v = t;
  if (t.data) v.data = static_cast<char*>(t.data) + start * t.strides[dim] * dtype_size(t.dtype);
  v.shape[dim] = len;
  return v;
}

/// What one group of launches works on: the whole batch, or one of the packed sequences
/// (cu_seqlens): its steps bos .. bos + len - 1 and state n.
struct Part {
  int64_t bos, len, n;
};

std::vector<Part> parts(const GatedDeltaRuleArgs& a) {
  if (a.cu_seqlens.empty()) return {{0, a.q.shape[1], -1}};
  std::vector<Part> out;
  for (size_t n = 0; n + 1 < a.cu_seqlens.size(); ++n)
    out.push_back(
        {a.cu_seqlens[n], a.cu_seqlens[n + 1] - a.cu_seqlens[n], static_cast<int64_t>(n)});
  return out;
}

int64_t longest(const std::vector<Part>& ps) {
  int64_t m = 0;
  for (const Part& p : ps) m = std::max(m, p.len);
  return m;
}

/// A [B, T, ...] tensor's steps of part p ([1, len, ...] for a sequence).
Tensor steps_of(const Tensor& t, const Part& p) {
  return p.n < 0 ? t : narrow(t, 1, p.bos, p.len);
}

/// A [B or N, ...] state's part p ([1, ...] for a sequence).
Tensor state_of(const Tensor& t, const Part& p) {
  return p.n < 0 ? t : narrow(t, 0, p.n, 1);
}

/// The rule's inputs as part p sees them.
GatedDeltaRuleArgs part_args(const GatedDeltaRuleArgs& a, const Part& p) {
  GatedDeltaRuleArgs s = a;
  s.cu_seqlens.clear();
  s.q = steps_of(a.q, p), s.k = steps_of(a.k, p), s.v = steps_of(a.v, p);
  s.g = steps_of(a.g, p), s.beta = steps_of(a.beta, p);
  if (a.h0) s.h0 = state_of(*a.h0, p);
  return s;
}

/// The work buffers the chunked form passes between its launches, for `len` steps (the longest
/// part's); part() views a shorter part's share.
struct RuleWork {
  /// Stream-ordered: given back on the call's stream when the call returns (none in a part()).
  std::shared_ptr<CallBuffers> owned;
  Tensor w, u, gc, rq, rk, hs;
  int64_t chunk;
  /// `save`: room for the chunk states (the backward's); else none. On `stream`, the call's.
  RuleWork(const Tensor& q, const Tensor& v, int64_t len, int64_t chunk_, bool save, int device,
           void* stream)
      : owned(std::make_shared<CallBuffers>(stream)), chunk(chunk_) {
    const std::vector<int64_t> gate = {q.shape[0], len, q.shape[2]};
    w = owned->allocate(q.dtype, {q.shape[0], len, q.shape[2], q.shape[3]}, device);
    u = owned->allocate(v.dtype, {v.shape[0], len, v.shape[2], v.shape[3]}, device);
    gc = owned->allocate(DType::F32, gate, device);
    rq = owned->allocate(DType::F32, gate, device);
    rk = owned->allocate(DType::F32, gate, device);
    if (save)
      hs = owned->allocate(
          DType::F32, {q.shape[0], q.shape[2], (len + chunk - 1) / chunk, q.shape[3], v.shape[3]},
          device);
  }
  /// The buffers' first `len` steps (and their chunks' states).
  RuleWork part(int64_t len) const {
    RuleWork p;
    p.chunk = chunk;
    p.w = narrow(w, 1, 0, len), p.u = narrow(u, 1, 0, len), p.gc = narrow(gc, 1, 0, len);
    p.rq = narrow(rq, 1, 0, len), p.rk = narrow(rk, 1, 0, len);
    if (hs.rank() == 5) p.hs = narrow(hs, 2, 0, (len + chunk - 1) / chunk);
    return p;
  }

private:
  RuleWork() = default;
};

/// What every launch of the rule's kernels shares: the stream, the forced tunables and the
/// generics of the head dim, chunk and normalisation.
LaunchOptions rule_launch_options(const GatedDeltaRuleArgs& a) {
  LaunchOptions lo;
  lo.stream = a.stream;
  lo.config = a.config;
  lo.config["DK"] = tile_width(a.q.shape[3]);
  lo.config["C"] = std::to_string(a.chunk);
  lo.config["NORM"] = a.normalize ? "1" : "0";
  return lo;
}

/// gated_delta_prepare then gated_delta_chunk (saving the chunk states into work.hs when it
/// has them; else hs is ht seen as one chunk's, not written).
void launch_rule_forward(Runtime& rt, const GatedDeltaRuleArgs& a, const OpChecks& c,
                         const RuleWork& work, const Tensor& o, const Tensor& ht) {
  const Tensor &q = a.q, &v = a.v;
  static const std::string source = kSource;
  LaunchOptions lo = rule_launch_options(a);
  LaunchOptions prepare = lo;
  prepare.config.erase("STAGES"); // the chunk kernel's alone
  if (q.shape[1] > 0)
    rt.launch(rt.load(source, "gated_delta_prepare"),
              {Arg::of(q), Arg::of(a.k), Arg::of(v), Arg::of(a.g), Arg::of(a.beta), Arg::of(work.w),
               Arg::of(work.u), Arg::of(work.gc), Arg::of(work.rq), Arg::of(work.rk)},
              prepare);
  lo.config["H0"] = a.h0 ? "1" : "0";
  const bool save = work.hs.rank() == 5;
  lo.config["SAVE"] = save ? "1" : "0";
  // Without h0 the kernel reads none: ht (its shape) stands in.
  const Tensor& h0 = a.h0 ? *a.h0 : ht;
  Tensor hs = work.hs;
  if (!save) {
    hs = ht;
    hs.shape.insert(hs.shape.begin() + 2, 1);
    hs.strides.insert(hs.strides.begin() + 2, hs.strides[1]);
  }
  rt.launch(rt.load(source, "gated_delta_chunk"),
            {Arg::of(q), Arg::of(a.k), Arg::of(work.w), Arg::of(work.u), Arg::of(work.gc),
             Arg::of(work.rq), Arg::of(work.rk), Arg::of(h0), Arg::of(o), Arg::of(ht), Arg::of(hs),
             Arg::f32(static_cast<float>(scale_of(c, a.scale, q)))},
            lo);
}

} // namespace

void check_gated_delta_rule_forward(const GatedDeltaRuleArgs& a) {
  const OpChecks& c = rule_checks;
  check_rule_inputs(c, a);
  if (a.o) check_like(c, "o", *a.o, a.v, "v's shape and dtype");
  if (a.ht)
    check_f32(c, "ht", *a.ht, state_shape(a),
              a.cu_seqlens.empty() ? "[B, H, Dk, Dv] f32" : "[N, H, Dk, Dv] f32");
  c.on_one_gpu({{"q", &a.q},
                {"k", &a.k},
                {"v", &a.v},
                {"g", &a.g},
                {"beta", &a.beta},
                {"h0", a.h0 ? &*a.h0 : nullptr},
                {"o", a.o ? &*a.o : nullptr},
                {"ht", a.ht ? &*a.ht : nullptr}});
}

GatedDeltaRuleResult gated_delta_rule_forward(Runtime& rt, const GatedDeltaRuleArgs& a) {
  check_gated_delta_rule_forward(a);
  GatedDeltaRuleResult out;
  const Tensor &q = a.q, &v = a.v;
  const int device = q.device_index;
  auto owned = std::make_shared<OwnedBuffers>();
  out.o = a.o ? *a.o : owned->allocate(v.dtype, v.shape, device);
  out.ht = a.ht ? *a.ht : owned->allocate(DType::F32, state_shape(a), device);
  if (!owned->buffers.empty()) out.storage = owned;
  if (out.ht.numel() == 0) return out; // no state: nothing to compute
  // This call's work buffers (stream-ordered: back to the pool after the launches), reused by
  // the parts in turn (one stream).
  const std::vector<Part> ps = parts(a);
  RuleWork work(q, v, longest(ps), a.chunk, false, device, a.stream);
  for (const Part& p : ps)
    launch_rule_forward(rt, part_args(a, p), rule_checks, work.part(p.len), steps_of(out.o, p),
                        state_of(out.ht, p));
  return out;
}

void check_gated_delta_rule_backward(const GatedDeltaRuleBackwardArgs& a) {
  const OpChecks& c = rule_backward_checks;
  const GatedDeltaRuleArgs& f = a.forward;
  check_rule_inputs(c, f);
  const std::vector<int64_t> gate = {f.q.shape[0], f.q.shape[1], f.q.shape[2]};
  const std::vector<int64_t> state = state_shape(f);
  const char* state_want = f.cu_seqlens.empty() ? "[B, H, Dk, Dv] f32" : "[N, H, Dk, Dv] f32";
  check_like(c, "dout", a.dout, f.v, "v's shape and dtype");
  if (a.dht) check_f32(c, "dht", *a.dht, state, state_want);
  if (a.dq) check_like(c, "dq", *a.dq, f.q, "q's shape and dtype");
  if (a.dk) check_like(c, "dk", *a.dk, f.k, "k's shape and dtype");
  if (a.dv) check_like(c, "dv", *a.dv, f.v, "v's shape and dtype");
  if (a.dg) check_f32(c, "dg", *a.dg, gate, "[B, T, H] f32");
  if (a.dbeta) check_f32(c, "dbeta", *a.dbeta, gate, "[B, T, H] f32");
  if (a.dh0) check_f32(c, "dh0", *a.dh0, state, state_want);
  c.on_one_gpu({{"q", &f.q},
                {"k", &f.k},
                {"v", &f.v},
                {"g", &f.g},
                {"beta", &f.beta},
                {"h0", f.h0 ? &*f.h0 : nullptr},
                {"dout", &a.dout},
                {"dht", a.dht ? &*a.dht : nullptr},
                {"dq", a.dq ? &*a.dq : nullptr},
                {"dk", a.dk ? &*a.dk : nullptr},
                {"dv", a.dv ? &*a.dv : nullptr},
                {"dg", a.dg ? &*a.dg : nullptr},
                {"dbeta", a.dbeta ? &*a.dbeta : nullptr},
                {"dh0", a.dh0 ? &*a.dh0 : nullptr}});
}

GatedDeltaRuleBackwardResult gated_delta_rule_backward(Runtime& rt,
                                                       const GatedDeltaRuleBackwardArgs& a) {
  check_gated_delta_rule_backward(a);
  const GatedDeltaRuleArgs& f = a.forward;
  const Tensor &q = f.q, &v = f.v;
  const int device = q.device_index;
  const std::vector<int64_t> gate = {q.shape[0], q.shape[1], q.shape[2]};
  const std::vector<int64_t> state = state_shape(f);
  GatedDeltaRuleBackwardResult out;
  auto owned = std::make_shared<OwnedBuffers>();
  out.dq = a.dq ? *a.dq : owned->allocate(q.dtype, q.shape, device);
  out.dk = a.dk ? *a.dk : owned->allocate(q.dtype, q.shape, device);
  out.dv = a.dv ? *a.dv : owned->allocate(v.dtype, v.shape, device);
  out.dg = a.dg ? *a.dg : owned->allocate(DType::F32, gate, device);
  out.dbeta = a.dbeta ? *a.dbeta : owned->allocate(DType::F32, gate, device);
  out.dh0 = a.dh0 ? *a.dh0 : owned->allocate(DType::F32, state, device);
  if (!owned->buffers.empty()) out.storage = owned;
  if (out.dh0.numel() == 0) return out;
  // The forward again (saving its chunk states), then the two backward launches, per part on
  // work buffers of the longest; o and ht of this call's own.
  const std::vector<Part> ps = parts(f);
  const int64_t len = longest(ps);
  RuleWork work(q, v, len, f.chunk, true, device, f.stream);
  Tensor o = work.owned->allocate(v.dtype, {v.shape[0], len, v.shape[2], v.shape[3]}, device);
  Tensor ht =
      work.owned->allocate(DType::F32, {q.shape[0], q.shape[2], q.shape[3], v.shape[3]}, device);
  Tensor dh = work.owned->allocate(DType::F32, work.hs.shape, device);
  Tensor du2 = work.owned->allocate(DType::F32, o.shape, device);
  static const std::string source = kSource;
  const LaunchOptions lo = rule_launch_options(f);
  const Arg scale = Arg::f32(static_cast<float>(scale_of(rule_backward_checks, f.scale, q)));
  LaunchOptions state_lo = lo;
  state_lo.config["DHT"] = a.dht ? "1" : "0";
  LaunchOptions grads = lo;
  grads.config.erase("STAGES"); // step 2 has none
  for (const Part& p : ps) {
    const GatedDeltaRuleArgs s = part_args(f, p);
    const RuleWork w = work.part(p.len);
    const Tensor dh_p = narrow(dh, 2, 0, w.hs.shape[2]), du2_p = narrow(du2, 1, 0, p.len);
    const Tensor dh0 = state_of(out.dh0, p), dout = steps_of(a.dout, p);
    launch_rule_forward(rt, s, rule_backward_checks, w, narrow(o, 1, 0, p.len), ht);
    // Without dht the kernel reads none: dh0 (its shape) stands in.
    rt.launch(rt.load(source, "gated_delta_bwd_state"),
              {Arg::of(s.q), Arg::of(s.k), Arg::of(w.w), Arg::of(w.gc), Arg::of(w.rq),
               Arg::of(w.rk), Arg::of(dout), Arg::of(a.dht ? state_of(*a.dht, p) : dh0),
               Arg::of(dh_p), Arg::of(du2_p), Arg::of(dh0), scale},
              state_lo);
    if (p.len > 0)
      rt.launch(rt.load(source, "gated_delta_bwd_chunk"),
                {Arg::of(s.q), Arg::of(s.k), Arg::of(s.v), Arg::of(s.beta), Arg::of(w.gc),
                 Arg::of(w.rq), Arg::of(w.rk), Arg::of(w.w), Arg::of(w.u), Arg::of(w.hs),
                 Arg::of(dh_p), Arg::of(du2_p), Arg::of(dout), Arg::of(steps_of(out.dq, p)),
                 Arg::of(steps_of(out.dk, p)), Arg::of(steps_of(out.dv, p)),
                 Arg::of(steps_of(out.dg, p)), Arg::of(steps_of(out.dbeta, p)), scale},
                grads);
  }
  return out;
}

} // namespace tilejit::ops
