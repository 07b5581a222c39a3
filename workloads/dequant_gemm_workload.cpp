#include "workloads/dequant_gemm_workload.h"

#include "support/error.h"
#include "support/text.h"

#include <fmt/format.h>

#include <cctype>
#include <optional>
#include <set>

namespace tilejit::workloads {
namespace {

class DequantHostData final : public ProblemData {
public:
  explicit DequantHostData(std::unique_ptr<DequantData> d)
      : d_(std::move(d)), rows_(dequant_reference_rows(d_->shape)) {}

  ref::HostBuffer& buffer(const std::string& name) override {
    DequantData& d = *d_;
    std::map<std::string, ref::HostBuffer*> by_name;
    if (d.shape.bits == 4)
      by_name = {{"x", &d.x},
                 {"qweight", &d.qweight},
                 {"perm", &d.perm},
                 {"scales", &d.scales},
                 {"qzeros", &d.qzeros},
                 {"qweight_t", &d.qweight_t},
                 {"g_idx", &d.g_idx},
                 {"gptq_scales", &d.gptq_scales},
                 {"gptq_zeros", &d.gptq_zeros},
                 {"y", &d.y}};
    else
      by_name = {{"x", &d.x}, {"w", &d.w}, {"scales", &d.w_scales}, {"y", &d.y}};
    if (d.shape.bits == 4 && d.shape.act_order) by_name["xp"] = &d.xp;
    auto it = by_name.find(name);
    if (it == by_name.end())
      throw Error(fmt::format("dequant_gemm (int{}) has no buffer '{}'", d.shape.bits, name));
    return *it->second;
  }

  Comparison compare() override {
    if (!reference_) reference_ = dequant_reference(*d_, rows_);
    DequantErrors e = compare_dequant(*d_, rows_, *reference_);
    Comparison c;
    c.ok = e.ok();
    c.errors = {{"y", e.y}};
    if (e.nan_y) c.problems = fmt::format("{} NaN or inf in y", e.nan_y);
    return c;
  }

private:
  std::unique_ptr<DequantData> d_;
  std::vector<int64_t> rows_;
  std::optional<std::vector<double>> reference_;
};

class DequantProblem final : public Problem {
public:
  DequantProblem(DequantShape shape, std::optional<DequantCase> grid_case)
      : s_(std::move(shape)), case_(std::move(grid_case)) {}

  std::string name() const override {
    if (case_) return case_->name();
    std::string g = s_.bits == 4 ? fmt::format("/G{}{}", s_.group, s_.act_order ? "/act" : "") : "";
    return fmt::format("int{}/M{}/N{}/K{}{}", s_.bits, s_.m, s_.n, s_.k, g);
  }
  std::string describe() const override { return s_.describe(); }
  DType dtype() const override { return s_.dtype; }
  std::string variant() const override { return s_.bits == 4 ? "int4" : "int8"; }

  std::vector<BufferSpec> buffers() const override {
    using R = BufferRole;
    const int64_t M = s_.m, N = s_.n, K = s_.k;
    if (s_.bits == 8)
      return {{"x", s_.dtype, {M, K}, R::input},
              {"w", DType::I8, {N, K}, R::input},
              {"scales", s_.dtype, {N}, R::input},
              {"y", s_.dtype, {M, N}, R::output}};
    const int64_t groups = s_.kernel_groups(), words_n = (N + 7) / 8;
    std::vector<BufferSpec> out = {{"x", s_.dtype, {M, K}, R::input},
                                   {"qweight", DType::I32, {K / 8, N}, R::input},
                                   {"perm", DType::I32, {K}, R::input},
                                   {"scales", s_.dtype, {groups, N}, R::input},
                                   {"qzeros", DType::I32, {groups, words_n}, R::input},
                                   {"qweight_t", DType::I32, {N, K / 8}, R::intermediate},
                                   // GPTQ's tensors as stored, for the gptq_gemv plan (no repack).
                                   {"g_idx", DType::I32, {K}, R::input},
                                   {"gptq_scales", s_.dtype, {s_.groups(), N}, R::input},
                                   {"gptq_zeros", DType::I32, {s_.groups(), words_n}, R::input},
                                   {"y", s_.dtype, {M, N}, R::output}};
    // x's columns in the repacked order, for act-order's permute_tc plan (per call).
    if (s_.act_order) out.push_back({"xp", s_.dtype, {M, K}, R::intermediate});
    return out;
  }

  /// int4 has a second plan: w4a16_gemv on GPTQ's tensors as stored (g_idx, no repack, CUDA
  /// cores, one program per row of x), against the default repack + tensor-core split-K.
  std::vector<Plan> plans() const override {
    std::vector<Plan> out = {
        {"repack_tc", "w4_repack once, then w4a16_tc (tensor cores, split-K)", steps()}};
    if (s_.bits == 8) {
      out[0] = {"int8_mma", "w8a16_mma (tensor cores, split-K)", steps()};
      return out;
    }
    if (s_.act_order) {
      // x permuted per call, then the kernel without act-order's in-loop gather (on Hopper:
      // wgmma with x's tiles by TMA); the tuner times it against repack_tc.
      std::vector<Step> permuted = steps();
      Step permute;
      permute.label = "permute";
      permute.kernel = "permute_cols";
      for (const char* b : {"x", "perm", "xp"}) permute.args.push_back(StepArg::of(b));
      permute.writes = {"xp"};
      Step& linear = permuted.back();
      linear.args[0] = StepArg::of("xp");
      linear.generics["ACT"] = "0";
      linear.suggested = suggested_linear_configs(/*x_in_order=*/true);
      permuted.insert(permuted.end() - 1, permute);
      out.push_back({"permute_tc",
                     "w4_repack once; per call x's columns permuted, then w4a16_tc without the "
                     "gather",
                     permuted});
    }
    Step gemv;
    gemv.label = "linear";
    gemv.kernel = "w4a16_gemv";
    for (const char* b : {"x", "qweight", "gptq_scales", "gptq_zeros", "g_idx", "y"})
      gemv.args.push_back(StepArg::of(b));
    gemv.writes = {"y"};
    out.push_back({"gptq_gemv", "w4a16_gemv on GPTQ's tensors as stored (no repack)", {gemv}});
    return out;
  }

  std::vector<Step> steps() const override {
    if (s_.bits == 8) {
      Step s;
      s.label = "linear";
      s.kernel = "w8a16_mma";
      for (const char* b : {"x", "w", "scales", "y"}) s.args.push_back(StepArg::of(b));
      s.writes = {"y"};
      return {s};
    }
    // The repack runs once per model load (timed apart); the per-call kernel reads only the
    // packed words, the kernel-grouped scales and zeros, and perm when act-order is on.
    Step repack;
    repack.label = "repack";
    repack.kernel = "w4_repack";
    for (const char* b : {"qweight", "perm", "qweight_t"}) repack.args.push_back(StepArg::of(b));
    repack.writes = {"qweight_t"};
    repack.one_time = true;
    Step linear;
    linear.label = "linear";
    linear.kernel = "w4a16_tc";
    for (const char* b : {"x", "qweight_t", "scales", "qzeros", "perm", "y"})
      linear.args.push_back(StepArg::of(b));
    linear.generics = {{"G", std::to_string(s_.kernel_group())}, {"ACT", s_.act_order ? "1" : "0"}};
    linear.writes = {"y"};
    linear.suggested = suggested_linear_configs();
    return {repack, linear};
  }

  std::unique_ptr<ProblemData> make_data(uint64_t seed) const override {
    return std::make_unique<DequantHostData>(make_dequant_data(s_, seed));
  }

  FloorWork floor() const override { return {dequant_floor_bytes(s_), dequant_flops(s_)}; }

  nlohmann::json shape_json() const override {
    // The keys the peers' rows use (bench/peers/dequant_gemm_peer.py), so they pair.
    nlohmann::json j = {{"M", s_.m}, {"N", s_.n}, {"K", s_.k}, {"G", s_.group}};
    if (s_.act_order) j["act_order"] = true;
    return j;
  }

private:
  /// What won at this M on an H200 (`x_in_order`: for permute_tc's linear, whose x is
  /// permuted already) (2026-11-28: bench/results/2026-11-28-88a519c-dequant-tma-
  /// h200.md and -14dbe2d-dequant-inflight-h200.md): the wgmma tiles with the scales folded in
  /// (WG = 1, SA = 1; mma.sync elsewhere, where they are still valid), for the tuner to measure
  /// first: the space has about a hundred thousand points, and a budgeted search rarely lands
  /// on 128 x 256 tiles with all of K by chance. Act-order gathers x (no wgmma): none.
  std::vector<Config> suggested_linear_configs(bool x_in_order = false) const {
    if ((s_.act_order && !x_in_order) || s_.m < 32) return {};
    const int64_t group = s_.kernel_group(); // a tile holds one group: BK <= G
    auto wgmma = [group](int bn, int warps, int bm, int64_t bk, int steps, int stages) {
      bk = std::min(bk, group);
      return Config{{"WG", "1"},
                    {"SA", "1"},
                    {"BN", std::to_string(bn)},
                    {"WARPS", std::to_string(warps)},
                    {"BM", std::to_string(bm)},
                    {"BK", std::to_string(bk)},
                    {"STEPS", std::to_string(steps)},
                    {"STAGES", std::to_string(stages)}};
    };
    if (s_.m >= 1024)
      return {wgmma(128, 8, 256, 128, 80, 3), wgmma(128, 8, 128, 128, 80, 3),
              wgmma(128, 8, 256, 64, 80, 4)};
    // With the split's cheaper epilogue
    // (bench/results/2026-11-28-be511a2-dequant-split-epilogue-h200.md): down at M = 256 wins with
    // 128 x 256 tiles in slices of 20 tiles, at M = 64 with 64 x 64 tiles in slices of 10.
    if (s_.m >= 128)
      return {wgmma(128, 8, 128, 128, 80, 4), wgmma(128, 8, 256, 128, 20, 3),
              wgmma(128, 8, 64, 128, 10, 3), wgmma(128, 8, 64, 128, 80, 2)};
    return {wgmma(64, 4, 64, 128, 80, 4), wgmma(64, 4, 64, 128, 10, 2),
            wgmma(64, 4, 32, 128, 10, 2)};
  }

  DequantShape s_;
  std::optional<DequantCase> case_;
};

class DequantWorkload final : public Workload {
public:
  std::string name() const override { return "dequant_gemm"; }
  std::string summary() const override {
    return "weight-only int4 (GPTQ) / int8 linears for LLM decode (repack once, split-K mma)";
  }
  std::vector<KernelSource> kernels() const override {
    return {{"w4_repack", kDequantSource},
            {"permute_cols", kDequantSource},
            {"w4a16_tc", kDequantSource},
            {"w8a16_mma", kDequantSource},
            {"w4a16_gemv", kDequantSource}};
  }
  std::vector<std::string> peers() const override {
    return {"bench/peers/dequant_gemm_peer.py: fp16 cuBLAS, Marlin, tinygemm "
            "(torch._weight_int4pack_mm), Triton GPTQ, torch._weight_int8pack_mm",
            "../shared/peers/dequant_gemm.py: the shared Triton GPTQ yardstick"};
  }
  std::vector<DType> dtypes() const override { return {DType::F16, DType::BF16}; }
  std::vector<std::unique_ptr<Problem>> cases(DType dtype) const override {
    std::vector<std::unique_ptr<Problem>> out;
    for (const DequantCase& c : dequant_cases())
      out.push_back(make_dequant_problem(c.shape(dtype), &c));
    return out;
  }
  std::unique_ptr<Problem> parse_shape(const std::map<std::string, std::string>& items,
                                       DType dtype) const override {
    return make_dequant_problem(parse_dequant_shape(items, dtype));
  }
  std::string shape_help() const override {
    return "M         rows of x, the tokens (default 1; 0 is an empty batch)\n"
           "N, K      the linear's output and input features, or LAYER=qkv|o|gate_up|down|"
           "lm_head (Qwen3-4B)\n"
           "BITS      4 (GPTQ int4, default) or 8 (int8 with per-row scales)\n"
           "G         int4 group size: 32, 64, 128 (default) or -1 (one group)\n"
           "ACT       int4 act-order: 1 shuffles the rows among the groups (g_idx), 0 (default)";
  }
};

} // namespace

std::unique_ptr<Problem> make_dequant_problem(const DequantShape& shape,
                                              const DequantCase* grid_case) {
  return std::make_unique<DequantProblem>(shape, grid_case ? std::optional<DequantCase>(*grid_case)
                                                           : std::nullopt);
}

std::shared_ptr<const Workload> make_dequant_gemm_workload() {
  return std::make_shared<DequantWorkload>();
}

DequantShape parse_dequant_shape(const std::map<std::string, std::string>& given, DType dtype) {
  static const std::set<std::string> known = {"M", "N", "K", "LAYER", "BITS", "G", "ACT"};
  const std::map<std::string, std::string> items =
      normalize_shape_items(given, known, "dequant_gemm", "M, N and K (or LAYER), BITS, G and ACT");
  auto has = [&](const char* k) { return items.count(k) > 0; };
  auto integer = [&](const char* k) {
    return parse_shape_integer(k, items.at(k), /*allow_negative=*/true);
  };
  DequantShape s;
  s.dtype = dtype;
  s.bits = has("BITS") ? static_cast<int>(integer("BITS")) : 4;
  if (s.bits != 4 && s.bits != 8)
    throw Error(fmt::format("--shape BITS={}: dequant_gemm takes 4 (GPTQ int4) or 8 (int8)",
                            items.at("BITS")));
  s.m = has("M") ? integer("M") : 1;
  if (s.m < 0 || s.m > 65536)
    throw Error(fmt::format("--shape M={}: expected 0..65536 rows of x", s.m));
  if (has("LAYER")) {
    if (has("N") || has("K"))
      throw Error("--shape: give LAYER (which sets N and K) or N and K, not both");
    const std::string layer = items.at("LAYER");
    bool found = false;
    for (const DequantCase& c : dequant_cases())
      if (c.layer == layer) s.n = c.n, s.k = c.k, s.layer = layer, found = true;
    if (!found)
      throw Error(fmt::format("--shape LAYER={}: expected qkv, o, gate_up, down or lm_head "
                              "(Qwen3-4B's linears)",
                              layer));
  } else {
    if (!has("N") || !has("K"))
      throw Error("--shape for dequant_gemm needs N and K (the linear's output and input "
                  "features) or LAYER=qkv|o|gate_up|down|lm_head");
    s.n = integer("N");
    s.k = integer("K");
  }
  if (s.n < 1 || s.k < 1)
    throw Error(fmt::format("--shape: N={} and K={} must be at least 1", s.n, s.k));
  if (s.n > (int64_t(1) << 32) / s.k)
    throw Error(fmt::format("--shape: N={} x K={} is over 2^32 weights", s.n, s.k));
  if (s.bits == 8) {
    if (has("G") || has("ACT"))
      throw Error("--shape: G and ACT are int4's (GPTQ groups and act-order); int8 has one "
                  "scale per row");
    return s;
  }
  if (s.k % 8 != 0)
    throw Error(fmt::format("--shape: K={} is not a multiple of 8 (GPTQ packs 8 rows of K per "
                            "int32)",
                            s.k));
  s.group = has("G") ? integer("G") : 128;
  if (s.group != 32 && s.group != 64 && s.group != 128 && s.group != -1)
    throw Error(fmt::format("--shape G={}: expected a group size of 32, 64, 128 or -1 (one group)",
                            items.at("G")));
  if (has("ACT")) {
    const int64_t act = integer("ACT");
    if (act != 0 && act != 1)
      throw Error(fmt::format("--shape ACT={}: expected 0 or 1", items.at("ACT")));
    s.act_order = act == 1;
  }
  return s;
}

} // namespace tilejit::workloads
