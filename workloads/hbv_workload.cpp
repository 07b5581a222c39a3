#include "workloads/hbv_workload.h"

#include "support/error.h"
#include "workloads/hbv_reference.h"
#include "workloads/hbv_segments.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>
#include <random>

namespace tilejit::workloads {
namespace {

/// params' (and d_params') shape: [B, 12], or [B, 12, NM] with NM components per basin.
std::vector<int64_t> params_shape(const HbvShape& s) {
  if (s.nm > 1) return {s.b, int64_t(kHbvParams), s.nm};
  return {s.b, int64_t(kHbvParams)};
}

/// Every buffer of one problem, the inputs drawn from WORKLOADS.md's ranges (f32-rounded, and
/// the reference runs on the rounded values), d_Q uniform in [-1, 1]. With NM components per
/// basin the reference runs the B x NM models (model b * NM + m: basin b's forcings, component
/// m's parameters) and takes Q's mean and the forcings' gradients' sum over the components.
class HbvHostData final : public ProblemData {
public:
  /// `passed`: the intermediate buffers of the plans (the segment form's tapes), left unset.
  HbvHostData(const HbvShape& s, uint64_t seed, const std::vector<BufferSpec>& passed)
      : nm_(s.nm), in_(random_hbv_inputs(s.b * s.nm, s.t, seed)) {
    for (const BufferSpec& b : passed) buffers_[b.name] = ref::HostBuffer(b.dtype, b.shape);
    const std::vector<int64_t> bt = {s.b, s.t};
    for (const char* n : {"P", "TEMP", "PET", "Q", "d_Q", "d_P", "d_TEMP", "d_PET"})
      buffers_[n] = ref::HostBuffer(DType::F32, bt);
    for (const char* n : {"params", "d_params"})
      buffers_[n] = ref::HostBuffer(DType::F32, params_shape(s));
    // Each basin's forcings are its first model's; every model reads them back rounded.
    auto round_into = [&](std::vector<double>& v, ref::HostBuffer& b) {
      for (int64_t bi = 0; bi < s.b; ++bi)
        for (int64_t d = 0; d < s.t; ++d) b.set(bi * s.t + d, v[size_t((bi * nm_) * s.t + d)]);
      for (int64_t i = 0; i < s.b * nm_; ++i)
        for (int64_t d = 0; d < s.t; ++d) v[size_t(i * s.t + d)] = b.get((i / nm_) * s.t + d);
    };
    round_into(in_.p, buffers_["P"]);
    round_into(in_.temp, buffers_["TEMP"]);
    round_into(in_.pet, buffers_["PET"]);
    // params [B, 12, NM]: component m of basin b is model b * NM + m (NM = 1: [B, 12]).
    ref::HostBuffer& par = buffers_["params"];
    for (int64_t i = 0; i < s.b * nm_; ++i)
      for (int k = 0; k < kHbvParams; ++k) {
        const int64_t at = ((i / nm_) * kHbvParams + k) * nm_ + i % nm_;
        par.set(at, in_.params[size_t(i * kHbvParams + k)]);
        in_.params[size_t(i * kHbvParams + k)] = par.get(at);
      }
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
    std::uniform_real_distribution<double> u(-1, 1);
    dq_.resize(size_t(s.b * s.t));
    for (size_t i = 0; i < dq_.size(); ++i) {
      buffers_["d_Q"].set(int64_t(i), u(rng));
      dq_[i] = buffers_["d_Q"].get(int64_t(i));
    }
  }

  ref::HostBuffer& buffer(const std::string& name) override {
    auto it = buffers_.find(name);
    if (it == buffers_.end()) throw Error(fmt::format("hbv has no buffer '{}'", name));
    return it->second;
  }

  Comparison compare() override {
    if (!q_ref_) reference();
    // The gradients of a basin whose comparisons came within f32's rounding of a tie may follow
    // the other branch of a min, max or clamp on the GPU than in float64 (both right for their
    // own rounding, ~1 in 4 random draws of B = 1024 x T = 1461 has such a basin): they are
    // compared in the other basins only (hbv_basins_to_compare; with components, the forcings'
    // in the basins whose every component is clear, the parameters' model by model).
    const int64_t nb = static_cast<int64_t>(compared_.size());
    const std::vector<bool>& compared = compared_;
    Comparison c;
    c.ok = true;
    int64_t bad = 0;
    auto check = [&](const char* name, const std::vector<double>& ref, double tol, bool all,
                     bool per_model = false) {
      const ref::HostBuffer& out = buffers_.at(name);
      const int64_t row = nb ? out.numel() / nb : 0; // one basin's values
      double diff = 0, norm = 0;
      for (int64_t i = 0; i < out.numel(); ++i) {
        const double o = out.get(i);
        if (!std::isfinite(o)) {
          ++bad;
          continue;
        }
        // d_params [B, 12, NM]: element i is model (i / row) * NM + i % NM's.
        if (!all && per_model && !compared_models_[size_t((i / row) * nm_ + i % nm_)]) continue;
        if (!all && !per_model && !compared[size_t(i / row)]) continue;
        diff += (o - ref[size_t(i)]) * (o - ref[size_t(i)]);
        norm += ref[size_t(i)] * ref[size_t(i)];
      }
      // A (next to) zero gradient (a day from the start states) has no relative error: then it
      // must be zero within f32's rounding.
      const double e = norm > 1e-18 ? std::sqrt(diff / norm) : std::sqrt(diff);
      c.errors.push_back({name, e});
      if (e > tol) c.ok = false;
    };
    check("Q", *q_ref_, 1e-4, true); // Q is continuous at the kinks
    check("d_P", g_ref_->p, 1e-3, false);
    check("d_TEMP", g_ref_->temp, 1e-3, false);
    check("d_PET", g_ref_->pet, 1e-3, false);
    check("d_params", g_ref_->params, 1e-3, false, true); // each model's own
    if (bad) {
      c.ok = false;
      c.problems = fmt::format("{} NaN or inf in the outputs", bad);
    }
    return c;
  }

private:
  /// The references per basin from the models': Q their mean, the forcings' gradients their
  /// sum, d_params [B, 12, NM] as the models' [B * NM, 12]; a basin compared when all its
  /// models are clear of kinks (as long as half the basins are, else every one).
  void reference() {
    const int64_t models = in_.b, b = models / nm_, t = in_.t;
    std::vector<double> nearest, dq_models(size_t(models * t));
    for (int64_t i = 0; i < models; ++i)
      for (int64_t d = 0; d < t; ++d)
        dq_models[size_t(i * t + d)] = dq_[size_t((i / nm_) * t + d)] / double(nm_);
    const std::vector<double> q = hbv_forward(in_, nullptr, &nearest);
    const HbvGradients g = hbv_backward(in_, dq_models);
    q_ref_.emplace(size_t(b * t), 0.0);
    HbvGradients r;
    r.p.assign(size_t(b * t), 0.0), r.temp = r.p, r.pet = r.p;
    r.params.assign(g.params.size(), 0.0);
    for (int64_t i = 0; i < models; ++i) {
      const int64_t bi = i / nm_;
      for (int64_t d = 0; d < t; ++d) {
        const size_t at = size_t(bi * t + d), from = size_t(i * t + d);
        (*q_ref_)[at] += q[from] / double(nm_);
        r.p[at] += g.p[from], r.temp[at] += g.temp[from], r.pet[at] += g.pet[from];
      }
      for (int k = 0; k < kHbvParams; ++k)
        r.params[size_t((bi * kHbvParams + k) * nm_ + i % nm_)] =
            g.params[size_t(i * kHbvParams + k)];
    }
    g_ref_ = std::move(r);
    // A basin's nearest tie over its components.
    std::vector<double> per_basin(size_t(b), std::numeric_limits<double>::infinity());
    for (int64_t i = 0; i < models; ++i)
      per_basin[size_t(i / nm_)] = std::min(per_basin[size_t(i / nm_)], nearest[size_t(i)]);
    // A basin's forcing gradients sum its components': compared where every component is
    // clear, from 1/8 of the basins on (about 19% of them at NM = 16 over 1461 days). The
    // parameters' gradients are each model's: compared model by model.
    compared_ = hbv_basins_to_compare(per_basin, nm_ > 1 ? 0.125 : 0.5);
    compared_models_ = hbv_basins_to_compare(nearest);
  }

  int64_t nm_ = 1;
  HbvInputs in_; ///< the B x NM models' (NM = 1: the basins')
  std::vector<double> dq_;
  std::map<std::string, ref::HostBuffer> buffers_;
  std::optional<std::vector<double>> q_ref_;
  std::optional<HbvGradients> g_ref_;
  std::vector<bool> compared_;        ///< per basin
  std::vector<bool> compared_models_; ///< per model (basin b's component m: b * NM + m)
};

class HbvProblem final : public Problem {
public:
  explicit HbvProblem(HbvShape s) : s_(s) {}
  std::string name() const override {
    return s_.nm > 1 ? fmt::format("B{}/T{}/nmul{}", s_.b, s_.t, s_.nm)
                     : fmt::format("B{}/T{}", s_.b, s_.t);
  }
  std::string describe() const override {
    return fmt::format("f32 B={} basins{} T={} days, forward + derived backward", s_.b,
                       s_.nm > 1 ? fmt::format(" of {} components", s_.nm) : "", s_.t);
  }
  DType dtype() const override { return DType::F32; }
  std::string variant() const override { return "fwd_bwd"; }

  std::vector<BufferSpec> buffers() const override {
    using R = BufferRole;
    const std::vector<int64_t> bt = {s_.b, s_.t}, bp = params_shape(s_);
    std::vector<BufferSpec> out = {
        {"P", DType::F32, bt, R::input},      {"TEMP", DType::F32, bt, R::input},
        {"PET", DType::F32, bt, R::input},    {"params", DType::F32, bp, R::input},
        {"Q", DType::F32, bt, R::output},     {"d_Q", DType::F32, bt, R::input},
        {"d_P", DType::F32, bt, R::output},   {"d_TEMP", DType::F32, bt, R::output},
        {"d_PET", DType::F32, bt, R::output}, {"d_params", DType::F32, bp, R::output}};
    for (const BufferSpec& b : segment_buffers()) out.push_back(b);
    return out;
  }

  std::vector<int64_t> segment_lengths() const { return hbv_segment_lengths(s_.b, s_.t, s_.nm); }

  std::vector<BufferSpec> segment_buffers() const {
    std::vector<BufferSpec> out;
    if (s_.b > 0 && s_.t > 0)
      for (int64_t ck : kHbvStartsIntervals)
        out.push_back({fmt::format("ckpt_s{}", ck), DType::F32,
                       hbv_starts_shape(s_.b, s_.t, ck, s_.nm), BufferRole::intermediate});
    for (int64_t seg : segment_lengths()) {
      out.push_back({fmt::format("starts_s{}", seg), DType::F32,
                     hbv_starts_shape(s_.b, s_.t, seg, s_.nm), BufferRole::intermediate});
      out.push_back({fmt::format("tape_s{}", seg), DType::F32,
                     hbv_tape_shape(s_.b, s_.t, seg, s_.nm), BufferRole::intermediate});
      out.push_back({fmt::format("maps_s{}", seg), DType::F32,
                     hbv_maps_shape(s_.b, s_.t, seg, s_.nm), BufferRole::intermediate});
    }
    return out;
  }

  /// One training step: the forward, the gradients zeroed (the derived kernel adds into them),
  /// the derived backward.
  std::vector<Step> steps() const override {
    auto step = [](const char* label, const char* kernel, std::vector<const char*> args,
                   std::vector<std::string> writes) {
      Step s;
      s.label = label;
      s.kernel = kernel;
      for (const char* a : args) s.args.push_back(StepArg::of(a));
      s.writes = std::move(writes);
      return s;
    };
    const bool nm = s_.nm > 1; // hbv_forward_nmul and its derived kernels
    return {step("forward", nm ? "hbv_forward_nmul" : "hbv_forward",
                 {"P", "TEMP", "PET", "params", "Q"}, {"Q"}),
            step("zero_grads", nm ? "hbv_zero_grads_nmul" : "hbv_zero_grads",
                 {"d_P", "d_TEMP", "d_PET", "d_params"}, {"d_P", "d_TEMP", "d_PET", "d_params"}),
            step("backward", nm ? "hbv_forward_nmul_grad" : "hbv_forward_grad",
                 {"P", "TEMP", "PET", "params", "Q", "d_Q", "d_P", "d_TEMP", "d_PET", "d_params"},
                 {"d_P", "d_TEMP", "d_PET", "d_params"})};
  }

  /// The derived kernels' generics past the checkpointed kernel: a warp of basins per program
  /// (with components, 32 models: hbv_component_basins), the training forward's states every
  /// `days` (their layouts must agree).
  Config derived_generics(int64_t days) const {
    const int64_t bb = s_.nm > 1 ? hbv_component_basins(s_.nm) : kHbvSegmentBasins;
    return {{"BB", std::to_string(bb)},
            {"WARPS", std::to_string(s_.nm > 1 ? 1 : bb / 32)},
            {"SEG", std::to_string(days)}};
  }

  /// hbv_forward's kernels, or with components hbv_forward_nmul's, with `suffix`.
  std::string kernel(const char* suffix) const {
    return std::string(s_.nm > 1 ? "hbv_forward_nmul" : "hbv_forward") + suffix;
  }

  /// steps() with the training forward (hbv_forward_grad_fwd: hbv_forward's loop, the states
  /// also stored every `days` into `starts`) in place of hbv_forward.
  std::vector<Step> steps_with_training_forward(int64_t days, const std::string& starts) const {
    std::vector<Step> st = steps();
    Step& forward = st.front();
    forward.kernel = kernel("_grad_fwd");
    forward.args.push_back(StepArg::of(starts));
    forward.generics = derived_generics(days);
    forward.writes.push_back(starts);
    return st;
  }

  /// The checkpointed kernel (one program per block of basins walks all T days back), and
  /// the segment form for each offered SEG (the forward stores each segment's start; then a
  /// program per block of basins and segment: the reverse in about two segments' time, for
  /// shapes too small to fill the GPU with basins alone), and the checkpointed reverse from the
  /// training forward's states every 32, 64 or 128 days (no forward pass of its own: the
  /// fastest where basins fill the GPU). The tuner times each and keeps the fastest per shape.
  std::vector<Plan> plans() const override {
    std::vector<Plan> out = {
        {"checkpoints", "the derived backward in one kernel, checkpoints every CK days", steps()}};
    for (int64_t seg : segment_lengths()) {
      const std::string tape = fmt::format("tape_s{}", seg), maps = fmt::format("maps_s{}", seg);
      const std::string starts = fmt::format("starts_s{}", seg);
      const Config generics = derived_generics(seg);
      std::vector<Step> st = steps_with_training_forward(seg, starts);
      Step lin;
      lin.label = "linearize";
      lin.kernel = kernel("_grad_lin");
      for (const char* a : {"P", "TEMP", "PET", "params", "Q", "d_Q"})
        lin.args.push_back(StepArg::of(a));
      lin.args.push_back(StepArg::of(starts));
      lin.args.push_back(StepArg::of(tape));
      lin.args.push_back(StepArg::of(maps));
      lin.generics = generics;
      lin.writes = {tape, maps};
      Step& back = st.back();
      back.kernel = kernel("_grad_seg");
      back.args.push_back(StepArg::of(tape));
      back.args.push_back(StepArg::of(maps));
      back.generics = generics;
      st.insert(st.end() - 1, std::move(lin));
      out.push_back({fmt::format("segments{}", seg),
                     fmt::format("the derived backward's segment form, {} days a segment", seg),
                     std::move(st)});
    }
    if (s_.b > 0 && s_.t > 0)
      for (int64_t ck : kHbvStartsIntervals) {
        // The training forward stores every CK-th day's states (each "segment's" start); the
        // checkpointed reverse starts from them: no forward pass of its own.
        const std::string starts = fmt::format("ckpt_s{}", ck);
        std::vector<Step> st = steps_with_training_forward(ck, starts);
        Step& back = st.back();
        back.kernel = kernel("_grad_ck");
        back.args.push_back(StepArg::of(starts));
        back.generics = derived_generics(ck);
        out.push_back({fmt::format("forward_checkpoints{}", ck),
                       fmt::format("the training forward stores the states every {} days, the "
                                   "derived reverse starts from them",
                                   ck),
                       std::move(st)});
      }
    return out;
  }

  std::unique_ptr<ProblemData> make_data(uint64_t seed) const override {
    return std::make_unique<HbvHostData>(s_, seed, segment_buffers());
  }

  FloorWork floor() const override {
    // Bytes: the forcings read (twice: forward and backward), Q written, d_Q read, the three
    // forcings' gradients written; flops: about 60 per basin-day forward, 3x that backward.
    // With components the forcings are read once per basin and the flops are per model.
    const double bt = double(s_.b) * double(s_.t);
    return {4.0 * (bt * (3 * 2 + 1 + 1 + 3) + double(s_.b) * double(kHbvParams) * s_.nm * 2),
            240.0 * bt * double(s_.nm)};
  }

  nlohmann::json shape_json() const override {
    nlohmann::json j = {{"B", s_.b}, {"T", s_.t}};
    if (s_.nm > 1) j["NMUL"] = s_.nm;
    return j;
  }

private:
  HbvShape s_;
};

class HbvWorkload final : public Workload {
public:
  std::string name() const override { return "hbv"; }
  std::string summary() const override {
    return "differentiable HBV-96 (a nonlinear scan): forward + the compiler-derived backward";
  }
  std::vector<KernelSource> kernels() const override {
    return {{"hbv_forward", kHbvSource},
            {"hbv_zero_grads", kHbvSource},
            {"hbv_forward_nmul", kHbvSource},
            {"hbv_zero_grads_nmul", kHbvSource},
            {"hbv_forward_nmul_grad", kHbvGradSource},
            {"hbv_forward_nmul_grad_fwd", kHbvGradSource},
            {"hbv_forward_nmul_grad_ck", kHbvGradSource},
            {"hbv_forward_nmul_grad_lin", kHbvGradSource},
            {"hbv_forward_nmul_grad_seg", kHbvGradSource},
            {"hbv_forward_grad", kHbvGradSource},
            {"hbv_forward_grad_fwd", kHbvGradSource},
            {"hbv_forward_grad_lin", kHbvGradSource},
            {"hbv_forward_grad_ck", kHbvGradSource},
            {"hbv_forward_grad_seg", kHbvGradSource}};
  }
  std::vector<std::string> peers() const override {
    return {"../shared/peers/hbv.py: the fused Triton kernels (forward, backward), the PyTorch "
            "loop with autograd and under torch.jit"};
  }
  std::vector<DType> dtypes() const override { return {DType::F32}; }
  std::vector<std::unique_ptr<Problem>> cases(DType) const override {
    std::vector<std::unique_ptr<Problem>> out;
    for (int64_t t : {100, 365, 730, 1461})
      for (int64_t b : {32, 256, 1024, 4096, 16384})
        out.push_back(std::make_unique<HbvProblem>(HbvShape{b, t}));
    // WORKLOADS.md: "also nmul = 16 parallel components per basin".
    for (int64_t b : {256, 1024})
      out.push_back(std::make_unique<HbvProblem>(HbvShape{b, 1461, 16}));
    return out;
  }
  std::unique_ptr<Problem> parse_shape(const std::map<std::string, std::string>& items,
                                       DType) const override {
    return std::make_unique<HbvProblem>(parse_hbv_shape(items));
  }
  std::string shape_help() const override {
    return "B         basins (one lane each)\n"
           "T         days (the serial loop)\n"
           "NMUL      components per basin, Q their mean (optional: 1; or 2, 4, 8, 16)";
  }
};

} // namespace

std::shared_ptr<const Workload> make_hbv_workload() {
  return std::make_shared<HbvWorkload>();
}

HbvShape parse_hbv_shape(const std::map<std::string, std::string>& given) {
  const std::map<std::string, std::string> items =
      normalize_shape_items(given, {"B", "T", "NMUL"}, "hbv", "B, T, NMUL");
  for (const char* k : {"B", "T"})
    if (!items.count(k))
      throw Error(
          fmt::format("--shape for hbv needs {} (it takes B, the basins, and T, the days)", k));
  HbvShape s;
  s.b = parse_shape_integer("B", items.at("B"));
  s.t = parse_shape_integer("T", items.at("T"));
  if (items.count("NMUL")) {
    s.nm = parse_shape_integer("NMUL", items.at("NMUL"));
    if (s.nm != 1 && !hbv_is_component_count(s.nm))
      throw Error(fmt::format("--shape NMUL={}: components per basin run in one kernel for 2, 4, "
                              "8 or 16 (1: one model per basin)",
                              s.nm));
  }
  // The days run as an i32 loop; each [B, T] tensor must fit a GPU (2^34 f32 values: 64 GiB).
  constexpr int64_t kMaxDays = (int64_t(1) << 31) - 1, kMaxValues = int64_t(1) << 34;
  if (s.t > kMaxDays)
    throw Error(fmt::format("--shape T={}: at most {} days (the day loop counts in 32 bits)", s.t,
                            kMaxDays));
  if (s.b > 0 && s.t > kMaxValues / s.b)
    throw Error(fmt::format("--shape B={}, T={}: a [B, T] tensor of {} values is more than 2^34 "
                            "(64 GiB of f32)",
                            s.b, s.t, static_cast<double>(s.b) * static_cast<double>(s.t)));
  return s;
}

} // namespace tilejit::workloads
