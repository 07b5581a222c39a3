#include "workloads/attention_workload.h"

#include "support/error.h"
#include "support/text.h"
#include "workloads/attention_tiles.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <optional>
#include <set>

namespace tilejit::workloads {
namespace {

class AttentionHostData final : public ProblemData {
public:
  explicit AttentionHostData(std::unique_ptr<AttentionData> d) : d_(std::move(d)) {}

  ref::HostBuffer& buffer(const std::string& name) override {
    AttentionData& d = *d_;
    std::map<std::string, ref::HostBuffer*> by_name = {
        {"q", &d.q},           {"k", &d.k},         {"v", &d.v},           {"dout", &d.dout},
        {"o", &d.o},           {"lse", &d.lse},     {"dq", &d.dq},         {"dk", &d.dk},
        {"dv", &d.dv},         {"delta", &d.delta}, {"dq_acc", &d.dq_acc}, {"kv_cnt", &d.kv_cnt},
        {"kv_idx", &d.kv_idx}, {"q_cnt", &d.q_cnt}, {"q_idx", &d.q_idx}};
    auto it = by_name.find(name);
    if (it == by_name.end()) throw Error(fmt::format("attention has no buffer '{}'", name));
    return *it->second;
  }

  Comparison compare() override {
    if (!reference_) reference_ = attention_reference(*d_);
    AttentionErrors e = compare_attention(*d_, *reference_);
    Comparison c;
    c.ok = e.ok();
    c.errors = {{"o", e.o}, {"lse", e.lse}, {"dq", e.dq}, {"dk", e.dk}, {"dv", e.dv}};
    if (e.nan) c.problems = fmt::format("{} NaN or inf in the outputs", e.nan);
    return c;
  }

private:
  std::unique_ptr<AttentionData> d_;
  std::optional<AttentionReference> reference_; ///< computed at the first check
};

class AttentionProblem final : public Problem {
public:
  AttentionProblem(AttentionShape shape, std::optional<AttentionCase> grid_case)
      : s_(std::move(shape)), case_(std::move(grid_case)) {}

  std::string name() const override {
    if (case_) return case_->name();
    return fmt::format(
        "B{}/HQ{}/HKV{}/N{}/D{}{}{}{}", s_.batch, s_.heads_q, s_.heads_kv, s_.seq, s_.head_dim,
        s_.causal ? "/causal" : "", s_.exact && s_.dtype == DType::F32 ? "/exact" : "",
        s_.sparse() ? fmt::format("/sparse{}/block{}", s_.density_percent, s_.block) : "");
  }
  std::string describe() const override { return s_.describe(); }
  DType dtype() const override { return s_.dtype; }
  std::string variant() const override { return "fwd_bwd"; }

  std::vector<BufferSpec> buffers() const override {
    using R = BufferRole;
    const int64_t B = s_.batch, HQ = s_.heads_q, HKV = s_.heads_kv, N = s_.seq, D = s_.head_dim;
    const DType t = s_.dtype;
    std::vector<BufferSpec> out = {{"q", t, {B, HQ, N, D}, R::input},
                                   {"k", t, {B, HKV, N, D}, R::input},
                                   {"v", t, {B, HKV, N, D}, R::input},
                                   {"dout", t, {B, HQ, N, D}, R::input},
                                   {"o", t, {B, HQ, N, D}, R::output},
                                   {"lse", DType::F32, {B, HQ, N}, R::output},
                                   {"delta", DType::F32, {B, HQ, N}, R::intermediate},
                                   {"dq_acc", DType::F32, {B, HQ, N, D}, R::intermediate},
                                   {"dq", t, {B, HQ, N, D}, R::output},
                                   {"dk", t, {B, HKV, N, D}, R::output},
                                   {"dv", t, {B, HKV, N, D}, R::output}};
    if (s_.sparse()) {
      const int64_t nb = s_.blocks();
      for (const char* name : {"kv_cnt", "q_cnt"})
        out.push_back({name, DType::I32, {1, HQ, nb}, R::input});
      for (const char* name : {"kv_idx", "q_idx"})
        out.push_back({name, DType::I32, {1, HQ, nb, nb}, R::input});
    }
    return out;
  }

  /// Untuned, dq by attn_dq where the op takes it on Hopper (attention_tiles.h: dq_by_kernel).
  size_t untuned_plan(int cc_major) const override {
    return cc_major == 9 && dq_by_kernel(tile_case()) ? 1 : 0;
  }

  AttentionTileCase tile_case() const {
    return {s_.dtype, s_.tile_width(), s_.causal, s_.seq, s_.sparse() ? s_.block : 0};
  }

  std::vector<Step> steps() const override {
    const Arg scale = Arg::f32(static_cast<float>(1.0 / std::sqrt(double(s_.head_dim))));
    const std::string d = std::to_string(s_.tile_width());
    const std::string causal = s_.causal ? "1" : "0", exact = s_.exact ? "1" : "0";
    auto step = [](const char* label, const char* kernel, std::vector<StepArg> args,
                   Config generics, std::vector<std::string> writes) {
      Step s;
      s.label = label;
      s.kernel = kernel;
      s.args = std::move(args);
      s.generics = std::move(generics);
      s.writes = std::move(writes);
      return s;
    };
    using A = StepArg;
    const Config generics = {{"D", d}, {"CAUSAL", causal}, {"EXACT", exact}};
    Config sparse_generics = generics;
    sparse_generics["BLK"] = std::to_string(s_.block);
    Step forward =
        s_.sparse()
            ? step("forward", "attn_fwd_sparse",
                   {A::of("q"), A::of("k"), A::of("v"), A::of("kv_cnt"), A::of("kv_idx"),
                    A::of("o"), A::of("lse"), A::value(scale)},
                   sparse_generics, {"o", "lse"})
            : step("forward", "attn_fwd",
                   {A::of("q"), A::of("k"), A::of("v"), A::of("o"), A::of("lse"), A::value(scale)},
                   generics, {"o", "lse"});
    Step backward =
        s_.sparse()
            ? step("backward", "attn_bwd_sparse",
                   {A::of("q"), A::of("k"), A::of("v"), A::of("dout"), A::of("lse"), A::of("delta"),
                    A::of("q_cnt"), A::of("q_idx"), A::of("dk"), A::of("dv"), A::of("dq_acc"),
                    A::value(scale)},
                   sparse_generics, {"dk", "dv", "dq_acc"})
            : step("backward", "attn_bwd",
                   {A::of("q"), A::of("k"), A::of("v"), A::of("dout"), A::of("lse"), A::of("delta"),
                    A::of("dk"), A::of("dv"), A::of("dq_acc"), A::value(scale)},
                   generics, {"dk", "dv", "dq_acc"});
    // Hopper's warpgroup tensor cores take both forward products, and four of the transposed
    // backward's five, where D is a multiple of 64 (16-bit inputs): those forms are measured
    // first (2026-11-28, H200: the forward 1.45-1.49x its mma.sync form, the transposed
    // backward 1.18-1.24x the other at N=4096 D=128; the backward's fastest tiles were BN 128,
    // BM 64, 8 warps at D = 128 and, at D = 64, BN 64, BM 64, 4 warps with dq by attn_dq or BN
    // 128, BM 32, 4 warps with atomics). Elsewhere they are ordinary configurations
    // (mma.sync). Block-sparse kernels take tiles that divide the block.
    const AttentionTileCase tiles = tile_case();
    if (hopper_tiles_apply(tiles)) {
      // The measured best first (workloads/attention_tiles.h), then other candidates.
      auto add = [](Step& st, const Config& c) {
        if (c.empty()) return;
        for (const Config& have : st.suggested)
          if (have == c) return;
        st.suggested.push_back(c);
      };
      add(forward, forward_tile(tiles));
      // Untuned, `run` and `bench` launch what the op launches on Hopper (its fallback).
      forward.fallback = forward_tile(tiles);
      backward.fallback = backward_tile(tiles, /*atomic_dq=*/true); // the plan of steps()
      forward.fallback_cc_major = backward.fallback_cc_major = 9;
      if (!s_.sparse()) {
        add(forward, {{"BM", "64"}, {"BN", "64"}, {"WARPS", "4"}, {"STAGES", "2"}, {"WG", "1"}});
        add(forward, {{"BM", "128"}, {"BN", "64"}, {"WARPS", "8"}, {"STAGES", "2"}, {"WG", "1"}});
        add(forward, {{"BM", "64"}, {"BN", "128"}, {"WARPS", "4"}, {"STAGES", "2"}, {"WG", "1"}});
      }
      add(backward, backward_tile(tiles, /*atomic_dq=*/true));
      if (!s_.sparse() || s_.block == 128) {
        add(backward, {{"TR", "1"}, {"BN", "128"}, {"BM", "64"}, {"WARPS", "8"}, {"STAGES", "2"}});
        add(backward, {{"TR", "1"}, {"BN", "128"}, {"BM", "32"}, {"WARPS", "4"}, {"STAGES", "2"}});
      }
      add(backward, {{"TR", "1"}, {"BN", "64"}, {"BM", "64"}, {"WARPS", "4"}, {"STAGES", "2"}});
      add(backward, {{"TR", "1"}, {"BN", "64"}, {"BM", "32"}, {"WARPS", "4"}, {"STAGES", "3"}});
    }
    return {forward,
            step("bwd_pre", "attn_bwd_pre",
                 {A::of("o"), A::of("dout"), A::of("delta"), A::of("dq_acc")}, {{"D", d}},
                 {"delta", "dq_acc"}),
            backward,
            step("bwd_dq", "attn_bwd_dq", {A::of("dq_acc"), A::of("dq")}, {{"D", d}}, {"dq"})};
  }

  /// A second plan: dq in a kernel of its own (attn_dq, block-sparse attn_dq_sparse over the
  /// forward's lists: no atomics, no f32 accumulator, two more products per tile) instead of
  /// the backward's atomics into dq_acc and the conversion after. Which is faster depends on
  /// the shape (the atomics' traffic against the recomputation): the tuner times both.
  std::vector<Plan> plans() const override {
    std::vector<Step> atomic = steps();
    std::vector<Step> own = atomic;
    Step& pre = own[1];
    Step& backward = own[2];
    Step& dq = own[3];
    pre.generics["ATOMIC_DQ"] = "0";
    pre.writes = {"delta"};
    backward.generics["ATOMIC_DQ"] = "0";
    backward.writes = {"dk", "dv"};
    using A = StepArg;
    dq.kernel = s_.sparse() ? "attn_dq_sparse" : "attn_dq";
    dq.args = {A::of("q"), A::of("k"), A::of("v"), A::of("dout"), A::of("lse"), A::of("delta")};
    if (s_.sparse()) dq.args.insert(dq.args.end(), {A::of("kv_cnt"), A::of("kv_idx")});
    dq.args.insert(dq.args.end(), {A::of("dq"), backward.args.back()});
    dq.generics = backward.generics;
    dq.generics.erase("ATOMIC_DQ");
    dq.suggested.clear();
    if (hopper_tiles_apply(tile_case())) {
      // The backward beside attn_dq leaves both score products running (ISSUE 1) first.
      const Config issued = backward_tile(tile_case(), /*atomic_dq=*/false);
      backward.fallback = issued;
      if (issued != backward.suggested.front())
        backward.suggested.insert(backward.suggested.begin(), issued);
      dq.suggested = {dq_kernel_tile(tile_case())};
      dq.fallback = dq_kernel_tile(tile_case());
      dq.fallback_cc_major = 9;
      for (const Config& other :
           {Config{{"BM", "128"}, {"BN", "128"}, {"WARPS", "8"}, {"STAGES", "2"}},
            Config{{"BM", "64"}, {"BN", "64"}, {"WARPS", "4"}, {"STAGES", "2"}}})
        if (other != dq.suggested.front() && (s_.block != 64 || other.at("BM") == "64"))
          dq.suggested.push_back(other);
    }
    return {{"atomic_dq", "dq added into an f32 accumulator by atomics", std::move(atomic)},
            {"dq_kernel",
             s_.sparse() ? "dq computed by a kernel of its own (attn_dq_sparse)"
                         : "dq computed by a kernel of its own (attn_dq)",
             std::move(own)}};
  }

  std::unique_ptr<ProblemData> make_data(uint64_t seed) const override {
    return std::make_unique<AttentionHostData>(make_attention_data(s_, seed));
  }

  FloorWork floor() const override {
    const double elem = static_cast<double>(dtype_size(s_.dtype));
    const double qo = static_cast<double>(s_.batch * s_.heads_q * s_.seq * s_.head_dim);
    const double kv = static_cast<double>(s_.batch * s_.heads_kv * s_.seq * s_.head_dim);
    // Each tensor read or written once: q, o, dout, dq and k, v, dk, dv.
    return {(4 * qo + 4 * kv) * elem, attention_flops(s_)};
  }

  nlohmann::json shape_json() const override {
    // The shared yardstick's keys (../shared/peers/attention.py).
    nlohmann::json j = {{"B", s_.batch},
                        {"H", s_.heads_q},
                        {"N", s_.seq},
                        {"D", s_.head_dim},
                        {"causal", s_.causal}};
    if (s_.heads_kv != s_.heads_q) j["Hkv"] = s_.heads_kv;
    if (s_.sparse()) { // the yardstick's flex_attention rows: block and the kept share
      j.erase("causal");
      j["block"] = s_.block;
      j["density"] = static_cast<double>(s_.kept_blocks()) / static_cast<double>(s_.blocks());
    }
    return j;
  }

private:
  AttentionShape s_;
  std::optional<AttentionCase> case_;
};

class AttentionWorkload final : public Workload {
public:
  std::string name() const override { return "attention"; }
  std::string summary() const override {
    return "FlashAttention forward + backward, dense, causal, GQA, block-sparse";
  }
  std::vector<KernelSource> kernels() const override {
    return {{"attn_fwd", kAttentionSource},        {"attn_bwd_pre", kAttentionSource},
            {"attn_bwd", kAttentionSource},        {"attn_bwd_dq", kAttentionSource},
            {"attn_dq", kAttentionSource},         {"attn_fwd_sparse", kAttentionSource},
            {"attn_bwd_sparse", kAttentionSource}, {"attn_dq_sparse", kAttentionSource}};
  }
  std::vector<std::string> peers() const override {
    return {"../shared/peers/attention.py: SDPA (flash, cuDNN, efficient, math), "
            "flex_attention (the shared yardstick; the project's own peer script is still to "
            "come)"};
  }
  std::vector<DType> dtypes() const override { return {DType::BF16, DType::F16, DType::F32}; }
  std::vector<std::unique_ptr<Problem>> cases(DType dtype) const override {
    std::vector<std::unique_ptr<Problem>> out;
    for (const AttentionCase& c : attention_cases(dtype))
      out.push_back(make_attention_problem(c.shape(dtype), &c));
    return out;
  }
  std::unique_ptr<Problem> parse_shape(const std::map<std::string, std::string>& items,
                                       DType dtype) const override {
    return make_attention_problem(parse_attention_shape(items, dtype));
  }
  std::string shape_help() const override {
    return "B         batch (default 1)\n"
           "H or HQ   query heads; HKV kv heads (default HQ; HQ a multiple of HKV: GQA)\n"
           "N         sequence length (queries and keys)\n"
           "D         head dim (a multiple of 8 up to 256)\n"
           "CAUSAL    1: key j attends query i only when j <= i (default 0)\n"
           "EXACT     f32 only, 1: 3xTF32 (fp32's accuracy) instead of TF32 (default 0)\n"
           "DENSITY   block-sparse: the percent of key blocks each query block keeps (1..99; "
           "its diagonal block, then others at random, per head; default 100: dense)\n"
           "BLOCK     block-sparse: the blocks' size, 64 or 128 (default 128)";
  }
};

} // namespace

std::unique_ptr<Problem> make_attention_problem(const AttentionShape& shape,
                                                const AttentionCase* grid_case) {
  return std::make_unique<AttentionProblem>(
      shape, grid_case ? std::optional<AttentionCase>(*grid_case) : std::nullopt);
}

std::shared_ptr<const Workload> make_attention_workload() {
  return std::make_shared<AttentionWorkload>();
}

AttentionShape parse_attention_shape(const std::map<std::string, std::string>& given, DType dtype) {
  static const std::set<std::string> known = {"B",      "HQ",    "HKV",     "N",    "D",
                                              "CAUSAL", "EXACT", "DENSITY", "BLOCK"};
  const std::map<std::string, std::string> items = normalize_shape_items(
      given, known, "attention", "B, H (or HQ), HKV, N, D, CAUSAL, EXACT, DENSITY and BLOCK",
      {{"H", "HQ"}});
  auto has = [&](const char* k) { return items.count(k) > 0; };
  auto count = [&](const char* k) { return parse_shape_integer(k, items.at(k)); };
  AttentionShape s;
  s.dtype = dtype;
  for (const char* k : {"HQ", "N", "D"})
    if (!has(k))
      throw Error(fmt::format("--shape for attention needs {} (it takes B, H, HKV, N, D, CAUSAL, "
                              "EXACT)",
                              std::string(k) == "HQ" ? "H (the query heads)" : k));
  s.batch = has("B") ? count("B") : 1;
  s.heads_q = count("HQ");
  s.heads_kv = has("HKV") ? count("HKV") : s.heads_q;
  s.seq = count("N");
  s.head_dim = count("D");
  if (s.heads_q < 1 || s.heads_kv < 1)
    throw Error(fmt::format("--shape: H={} and HKV={} must be at least 1", s.heads_q, s.heads_kv));
  if (s.heads_q % s.heads_kv != 0)
    throw Error(fmt::format("--shape: H={} is not a multiple of HKV={} (GQA: each kv head serves "
                            "H/HKV query heads)",
                            s.heads_q, s.heads_kv));
  if (s.head_dim % 8 != 0 || s.head_dim < 8 || s.head_dim > 256)
    throw Error(fmt::format("--shape: D={} is not a multiple of 8 from 8 to 256", s.head_dim));
  if (s.batch > 65535 || s.heads_q > 65535)
    throw Error(fmt::format("--shape: B={} and H={} must be at most 65535 (grid dimensions)",
                            s.batch, s.heads_q));
  if (s.seq > (int64_t(1) << 20)) throw Error(fmt::format("--shape: N={} is over 2^20", s.seq));
  for (const char* k : {"CAUSAL", "EXACT"})
    if (has(k) && count(k) > 1)
      throw Error(fmt::format("--shape {}={}: expected 0 or 1", k, items.at(k)));
  s.causal = has("CAUSAL") && count("CAUSAL") == 1;
  s.exact = has("EXACT") && count("EXACT") == 1;
  if (s.exact && dtype != DType::F32)
    throw Error("--shape: EXACT=1 is for f32 inputs (--dtype f32): 16-bit products are exact "
                "in f32 already");
  if (has("DENSITY")) {
    s.density_percent = count("DENSITY");
    if (s.density_percent < 1 || s.density_percent > 100)
      throw Error(fmt::format("--shape DENSITY={}: expected a percent of the key blocks from 1 "
                              "to 100",
                              items.at("DENSITY")));
  }
  if (has("BLOCK")) {
    s.block = count("BLOCK");
    if (s.block != 64 && s.block != 128)
      throw Error(fmt::format("--shape BLOCK={}: the block-sparse kernels take blocks of 64 or "
                              "128",
                              items.at("BLOCK")));
    if (!s.sparse())
      throw Error("--shape BLOCK is for block-sparse shapes: give DENSITY too (under 100)");
  }
  // The elements of one tensor must fit the host and the kernels' indexing.
  const double elems = double(s.batch) * double(s.heads_q) * double(s.seq) * double(s.head_dim);
  if (elems > double(int64_t(1) << 32))
    throw Error(fmt::format("--shape: q would hold {:.3g} elements, over 2^32", elems));
  return s;
}

} // namespace tilejit::workloads
