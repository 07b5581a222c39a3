#include "workloads/gated_delta_workload.h"

#include "support/error.h"

#include <fmt/format.h>

#include <cctype>
#include <optional>
#include <set>

namespace tilejit::workloads {
namespace {

constexpr const char* kSource = "embedded:workloads/gated_delta.tile";

/// {B, T, H} plus D (one head dim) or DK and DV, as the yardstick's rows name them.
nlohmann::json head_dims_json(nlohmann::json j, int64_t key_dim, int64_t value_dim) {
  if (key_dim == value_dim) {
    j["D"] = key_dim;
  } else {
    j["DK"] = key_dim;
    j["DV"] = value_dim;
  }
  return j;
}

std::string upper(std::string text) {
  for (char& ch : text) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return text;
}

/// The buffer called `name` among a problem's host buffers; an unknown name is an error.
ref::HostBuffer& named_buffer(const std::map<std::string, ref::HostBuffer*>& by_name,
                              const std::string& name) {
  auto it = by_name.find(name);
  if (it == by_name.end()) throw Error(fmt::format("gated_delta has no buffer '{}'", name));
  return *it->second;
}

Comparison comparison(bool ok, std::vector<std::pair<std::string, double>> errors, int64_t nan) {
  Comparison c;
  c.ok = ok;
  c.errors = std::move(errors);
  if (nan) c.problems = fmt::format("{} NaN or inf in the outputs", nan);
  return c;
}

class LinearAttnHostData final : public ProblemData {
public:
  explicit LinearAttnHostData(std::unique_ptr<LinearAttnData> d) : d_(std::move(d)) {}

  ref::HostBuffer& buffer(const std::string& name) override {
    LinearAttnData& d = *d_;
    return named_buffer({{"q", &d.q},
                         {"k", &d.k},
                         {"v", &d.v},
                         {"dout", &d.dout},
                         {"o", &d.o},
                         {"dq", &d.dq},
                         {"dk", &d.dk},
                         {"dv", &d.dv}},
                        name);
  }

  Comparison compare() override {
    LinearAttnErrors e = compare_linear_attn(*d_);
    return comparison(e.ok(), {{"o", e.o}, {"dq", e.dq}, {"dk", e.dk}, {"dv", e.dv}}, e.nan);
  }

private:
  std::unique_ptr<LinearAttnData> d_;
};

class LinearAttnProblem final : public Problem {
public:
  LinearAttnProblem(LinearAttnShape shape, std::optional<LinearAttnCase> grid_case)
      : s_(std::move(shape)), case_(std::move(grid_case)) {}

  std::string name() const override {
    if (case_) return case_->name();
    return fmt::format("linear/B{}/T{}/H{}/DK{}/DV{}", s_.batch, s_.steps, s_.heads, s_.key_dim,
                       s_.value_dim);
  }
  std::string describe() const override { return s_.describe(); }
  DType dtype() const override { return s_.dtype; }
  // The shared yardstick's variant and shape keys (../shared/peers/gated_delta.py), so that
  // its rows pair with these.
  std::string variant() const override { return "linear_attn.fwd_bwd"; }

  std::vector<BufferSpec> buffers() const override {
    using R = BufferRole;
    const std::vector<int64_t> key = {s_.batch, s_.steps, s_.heads, s_.key_dim};
    const std::vector<int64_t> value = {s_.batch, s_.steps, s_.heads, s_.value_dim};
    const DType t = s_.dtype;
    return {{"q", t, key, R::input},      {"k", t, key, R::input},    {"v", t, value, R::input},
            {"dout", t, value, R::input}, {"o", t, value, R::output}, {"dq", t, key, R::output},
            {"dk", t, key, R::output},    {"dv", t, value, R::output}};
  }

  /// o = la(q, k, v); dq = la(do, v, k); dv = la_rev(k, q, do); dk = la_rev(v, do, q): one
  /// kernel, its "q" and "k" DK = the tile width of the first two operands.
  std::vector<Step> steps() const override {
    const Arg scale = Arg::f32(static_cast<float>(s_.scale()));
    const std::string key = std::to_string(s_.key_tile()), value = std::to_string(s_.value_tile());
    auto step = [&](const char* label, const char* x, const char* y, const char* z, const char* out,
                    const std::string& dk, bool rev) {
      Step s;
      s.label = label;
      s.kernel = "linear_attn";
      s.args = {StepArg::of(x), StepArg::of(y), StepArg::of(z), StepArg::of(out),
                StepArg::value(scale)};
      s.generics = {{"DK", dk}, {"REV", rev ? "1" : "0"}};
      s.writes = {out};
      return s;
    };
    return {step("forward", "q", "k", "v", "o", key, false),
            step("dq", "dout", "v", "k", "dq", value, false),
            step("dv", "k", "q", "dout", "dv", key, true),
            step("dk", "v", "dout", "q", "dk", value, true)};
  }

  /// A second plan where the heads are small enough for the state in registers: dk and dv in
  /// one reverse pass (linear_attn_bwd_kv: q, k, v, do read once, one launch less) instead of
  /// the two anti-causal launches; the tuner times both.
  std::vector<Plan> plans() const override {
    std::vector<Step> separate = steps();
    std::vector<Plan> out = {
        {"separate", "dk and dv by two anti-causal linear_attn launches", separate}};
    if (s_.key_tile() > 128 || s_.value_tile() > 128) return out;
    Step kv;
    kv.label = "dkv";
    kv.kernel = "linear_attn_bwd_kv";
    kv.args = {StepArg::of("q"),
               StepArg::of("k"),
               StepArg::of("v"),
               StepArg::of("dout"),
               StepArg::of("dk"),
               StepArg::of("dv"),
               StepArg::value(Arg::f32(static_cast<float>(s_.scale())))};
    kv.generics = {{"DK", std::to_string(s_.key_tile())}, {"DV", std::to_string(s_.value_tile())}};
    kv.writes = {"dk", "dv"};
    out.push_back({"fused_kv",
                   "dk and dv in one reverse pass (linear_attn_bwd_kv)",
                   {separate[0], separate[1], kv}});
    return out;
  }

  std::unique_ptr<ProblemData> make_data(uint64_t seed) const override {
    return std::make_unique<LinearAttnHostData>(make_linear_attn_data(s_, seed));
  }

  FloorWork floor() const override {
    const double elem = static_cast<double>(dtype_size(s_.dtype));
    const double rows = static_cast<double>(s_.batch * s_.steps * s_.heads);
    const double kd = static_cast<double>(s_.key_dim), vd = static_cast<double>(s_.value_dim);
    // q, k, dq, dk and v, do, o, dv read or written once each.
    return {rows * (4 * kd + 4 * vd) * elem, linear_attn_flops(s_)};
  }

  nlohmann::json shape_json() const override {
    return head_dims_json({{"B", s_.batch}, {"T", s_.steps}, {"H", s_.heads}}, s_.key_dim,
                          s_.value_dim);
  }

private:
  LinearAttnShape s_;
  std::optional<LinearAttnCase> case_;
};

class GatedDeltaHostData final : public ProblemData {
public:
  explicit GatedDeltaHostData(std::unique_ptr<GatedDeltaData> d) : d_(std::move(d)) {}

  ref::HostBuffer& buffer(const std::string& name) override {
    GatedDeltaData& d = *d_;
    return named_buffer({{"q", &d.q},         {"k", &d.k},     {"v", &d.v},       {"g", &d.g},
                         {"beta", &d.beta},   {"h0", &d.h0},   {"o", &d.o},       {"ht", &d.ht},
                         {"hs", &d.hs},       {"w", &d.w},     {"u", &d.u},       {"gc", &d.gc},
                         {"rq", &d.rq},       {"rk", &d.rk},   {"dout", &d.dout}, {"dht", &d.dht},
                         {"dq", &d.dq},       {"dk", &d.dk},   {"dv", &d.dv},     {"dg", &d.dg},
                         {"dbeta", &d.dbeta}, {"dh0", &d.dh0}, {"dh", &d.dh},     {"du2", &d.du2}},
                        name);
  }

  Comparison compare() override {
    GatedDeltaErrors e = compare_gated_delta(*d_);
    std::vector<std::pair<std::string, double>> errors = {{"o", e.o}, {"ht", e.ht}};
    if (d_->shape.backward)
      errors.insert(errors.end(), {{"dq", e.dq},
                                   {"dk", e.dk},
                                   {"dv", e.dv},
                                   {"dg", e.dg},
                                   {"dbeta", e.dbeta},
                                   {"dh0", e.dh0}});
    return comparison(e.ok(), std::move(errors), e.nan);
  }

private:
  std::unique_ptr<GatedDeltaData> d_;
};

/// The gated delta rule's forward (o and the final state): in chunks (the WY form: a launch
/// that prepares every chunk at once, then one that walks them in order; the default plan) or
/// step by step (one launch of the recurrent form). With BWD=1 also its backward, after the
/// chunked forward (which then saves the chunk states): two more launches, the state
/// gradients chunk by chunk from the last, then every other gradient per chunk.
class GatedDeltaProblem final : public Problem {
public:
  explicit GatedDeltaProblem(GatedDeltaShape shape) : s_(std::move(shape)) {}

  std::string name() const override {
    return fmt::format(
        "delta/B{}/T{}/H{}/DK{}/DV{}{}{}{}", s_.batch, s_.steps, s_.heads, s_.key_dim, s_.value_dim,
        s_.normalize ? "" : "/raw", s_.initial_state ? "/h0" : "",
        s_.chunk != 64 ? fmt::format("/C{}", s_.chunk) : "", s_.backward ? "/bwd" : "");
  }
  std::string describe() const override { return s_.describe(); }
  DType dtype() const override { return s_.dtype; }
  std::string variant() const override {
    return s_.backward ? "gated_delta_rule.fwd_bwd" : "gated_delta_rule.fwd";
  }

  std::vector<BufferSpec> buffers() const override {
    using R = BufferRole;
    const std::vector<int64_t> key = {s_.batch, s_.steps, s_.heads, s_.key_dim};
    const std::vector<int64_t> value = {s_.batch, s_.steps, s_.heads, s_.value_dim};
    const std::vector<int64_t> gate = {s_.batch, s_.steps, s_.heads};
    const std::vector<int64_t> state = {s_.batch, s_.heads, s_.key_dim, s_.value_dim};
    const std::vector<int64_t> states = {s_.batch, s_.heads, s_.chunks(), s_.key_dim, s_.value_dim};
    const DType t = s_.dtype;
    std::vector<BufferSpec> out = {
        {"q", t, key, R::input},
        {"k", t, key, R::input},
        {"v", t, value, R::input},
        {"g", DType::F32, gate, R::input},
        {"beta", DType::F32, gate, R::input},
        {"h0", DType::F32, state, R::input},
        {"o", t, value, R::output},
        {"ht", DType::F32, state, R::output},
        // The chunk kernel's saved states: the backward's, or one unused state (SAVE = 0).
        {"hs", DType::F32,
         s_.backward ? states
                     : std::vector<int64_t>{s_.batch, s_.heads, 1, s_.key_dim, s_.value_dim},
         R::intermediate},
        {"w", t, key, R::intermediate},
        {"u", t, value, R::intermediate},
        {"gc", DType::F32, gate, R::intermediate},
        {"rq", DType::F32, gate, R::intermediate},
        {"rk", DType::F32, gate, R::intermediate}};
    if (s_.backward)
      out.insert(out.end(), {{"dout", t, value, R::input},
                             {"dht", DType::F32, state, R::input},
                             {"dq", t, key, R::output},
                             {"dk", t, key, R::output},
                             {"dv", t, value, R::output},
                             {"dg", DType::F32, gate, R::output},
                             {"dbeta", DType::F32, gate, R::output},
                             {"dh0", DType::F32, state, R::output},
                             {"dh", DType::F32, states, R::intermediate},
                             {"du2", DType::F32, value, R::intermediate}});
    return out;
  }

  /// The chunked form: gated_delta_prepare (w, u, the cumulative g; q's and k's reciprocal
  /// norms when normalising), then gated_delta_chunk over the chunks in order, both with chunk
  /// size C.
  std::vector<Step> steps() const override {
    const std::string dk = std::to_string(s_.key_tile()), c = std::to_string(s_.chunk);
    Step prepare;
    prepare.label = "prepare";
    prepare.kernel = "gated_delta_prepare";
    prepare.args = {StepArg::of("q"),    StepArg::of("k"), StepArg::of("v"), StepArg::of("g"),
                    StepArg::of("beta"), StepArg::of("w"), StepArg::of("u"), StepArg::of("gc"),
                    StepArg::of("rq"),   StepArg::of("rk")};
    prepare.generics = {{"DK", dk}, {"C", c}, {"NORM", s_.normalize ? "1" : "0"}};
    prepare.writes = {"w", "u", "gc"};
    if (s_.normalize) prepare.writes.push_back("rq"), prepare.writes.push_back("rk");
    Step forward;
    forward.label = "forward";
    forward.kernel = "gated_delta_chunk";
    forward.args = {StepArg::of("q"),  StepArg::of("k"),
                    StepArg::of("w"),  StepArg::of("u"),
                    StepArg::of("gc"), StepArg::of("rq"),
                    StepArg::of("rk"), StepArg::of("h0"),
                    StepArg::of("o"),  StepArg::of("ht"),
                    StepArg::of("hs"), StepArg::value(Arg::f32(static_cast<float>(s_.scale())))};
    forward.generics = {{"DK", dk},
                        {"C", c},
                        {"NORM", s_.normalize ? "1" : "0"},
                        {"H0", s_.initial_state ? "1" : "0"}};
    forward.writes = {"o", "ht"};
    if (!s_.backward) return {prepare, forward};
    forward.generics["SAVE"] = "1";
    forward.writes.push_back("hs");
    const Arg scale = Arg::f32(static_cast<float>(s_.scale()));
    Step state;
    state.label = "bwd_state";
    state.kernel = "gated_delta_bwd_state";
    state.args = {StepArg::of("q"),    StepArg::of("k"),   StepArg::of("w"),
                  StepArg::of("gc"),   StepArg::of("rq"),  StepArg::of("rk"),
                  StepArg::of("dout"), StepArg::of("dht"), StepArg::of("dh"),
                  StepArg::of("du2"),  StepArg::of("dh0"), StepArg::value(scale)};
    state.generics = {{"DK", dk}, {"C", c}, {"NORM", s_.normalize ? "1" : "0"}, {"DHT", "1"}};
    state.writes = {"dh", "du2", "dh0"};
    Step grads;
    grads.label = "bwd_chunk";
    grads.kernel = "gated_delta_bwd_chunk";
    grads.args = {
        StepArg::of("q"),    StepArg::of("k"),     StepArg::of("v"),     StepArg::of("beta"),
        StepArg::of("gc"),   StepArg::of("rq"),    StepArg::of("rk"),    StepArg::of("w"),
        StepArg::of("u"),    StepArg::of("hs"),    StepArg::of("dh"),    StepArg::of("du2"),
        StepArg::of("dout"), StepArg::of("dq"),    StepArg::of("dk"),    StepArg::of("dv"),
        StepArg::of("dg"),   StepArg::of("dbeta"), StepArg::value(scale)};
    grads.generics = {{"DK", dk}, {"C", c}, {"NORM", s_.normalize ? "1" : "0"}};
    grads.writes = {"dq", "dk", "dv", "dg", "dbeta"};
    return {prepare, forward, state, grads};
  }

  std::vector<Step> recurrent_steps() const {
    Step s;
    s.label = "forward";
    s.kernel = "gated_delta_recurrent";
    s.args = {StepArg::of("q"),
              StepArg::of("k"),
              StepArg::of("v"),
              StepArg::of("g"),
              StepArg::of("beta"),
              StepArg::of("h0"),
              StepArg::of("o"),
              StepArg::of("ht"),
              StepArg::value(Arg::f32(static_cast<float>(s_.scale())))};
    s.generics = {{"DK", std::to_string(s_.key_tile())},
                  {"NORM", s_.normalize ? "1" : "0"},
                  {"H0", s_.initial_state ? "1" : "0"}};
    s.writes = {"o", "ht"};
    return {s};
  }
  std::vector<Plan> plans() const override {
    Plan chunked = {"chunked",
                    "chunks of C steps in the WY form (gated_delta_prepare, gated_delta_chunk)",
                    steps()};
    if (s_.backward) return {chunked}; // the recurrent form has no backward
    return {chunked,
            {"recurrent", "the rule step by step (gated_delta_recurrent)", recurrent_steps()}};
  }

  std::unique_ptr<ProblemData> make_data(uint64_t seed) const override {
    return std::make_unique<GatedDeltaHostData>(make_gated_delta_data(s_, seed));
  }

  FloorWork floor() const override {
    const double elem = static_cast<double>(dtype_size(s_.dtype));
    const double rows = static_cast<double>(s_.batch * s_.steps * s_.heads);
    const double kd = static_cast<double>(s_.key_dim), vd = static_cast<double>(s_.value_dim);
    const double states = static_cast<double>(s_.batch * s_.heads) * kd * vd * 4;
    // q, k, v, o once, g and beta, the states in (when given) and out.
    return {rows * ((2 * kd + 2 * vd) * elem + 8) + states * (s_.initial_state ? 2 : 1),
            gated_delta_flops(s_)};
  }

  nlohmann::json shape_json() const override {
    // The yardstick's rows: q and k normalised in the kernel, no initial state; other flags
    // are named.
    nlohmann::json j = head_dims_json({{"B", s_.batch}, {"T", s_.steps}, {"H", s_.heads}},
                                      s_.key_dim, s_.value_dim);
    if (!s_.normalize) j["norm"] = false;
    if (s_.initial_state) j["h0"] = true;
    if (s_.chunk != 64) j["chunk"] = s_.chunk;
    return j;
  }

private:
  GatedDeltaShape s_;
};

class GatedDeltaWorkload final : public Workload {
public:
  std::string name() const override { return "gated_delta"; }
  std::string summary() const override {
    return "causal linear attention (forward + backward) and the gated delta rule (forward; with "
           "BWD=1 forward + backward)";
  }
  std::vector<KernelSource> kernels() const override {
    return {{"linear_attn", kSource},           {"linear_attn_bwd_kv", kSource},
            {"gated_delta_recurrent", kSource}, {"gated_delta_prepare", kSource},
            {"gated_delta_chunk", kSource},     {"gated_delta_bwd_state", kSource},
            {"gated_delta_bwd_chunk", kSource}};
  }
  std::vector<std::string> peers() const override {
    return {"../shared/peers/gated_delta.py: flash-linear-attention's chunk kernels and a "
            "PyTorch recurrence (the shared yardstick; the project's own peer script is still "
            "to come)"};
  }
  std::vector<DType> dtypes() const override { return {DType::BF16, DType::F16}; }
  std::vector<std::unique_ptr<Problem>> cases(DType dtype) const override {
    std::vector<std::unique_ptr<Problem>> out;
    for (const LinearAttnCase& c : linear_attn_cases())
      out.push_back(make_linear_attn_problem(c.shape(dtype), &c));
    return out;
  }
  std::unique_ptr<Problem> parse_shape(const std::map<std::string, std::string>& items,
                                       DType dtype) const override {
    if (shape_rule(items) == "delta")
      return std::make_unique<GatedDeltaProblem>(parse_gated_delta_rule_shape(items, dtype));
    return make_linear_attn_problem(parse_linear_attn_shape(items, dtype));
  }
  std::string shape_help() const override {
    return "B         batch (default 1)\n"
           "T         sequence length (the steps of the recurrence)\n"
           "H         heads (default 1)\n"
           "D         head dim of q, k and v (1 to 256), or DK and DV apart\n"
           "RULE      linear: causal unnormalised linear attention, forward and backward "
           "(default); delta: the gated delta rule, forward (g and beta per step)\n"
           "NORM      delta: 1 L2-normalises q and k in the kernel (default), 0 takes them as "
           "given\n"
           "H0        delta: 1 starts from an initial state h0 (default 0: from zero)\n"
           "CHUNK     delta: steps per chunk of the chunked form, 16, 32 or 64 (default 64)\n"
           "BWD       delta: 1 adds the backward (every gradient, from random dout and dht)";
  }
};

} // namespace

std::unique_ptr<Problem> make_linear_attn_problem(const LinearAttnShape& shape,
                                                  const LinearAttnCase* grid_case) {
  return std::make_unique<LinearAttnProblem>(
      shape, grid_case ? std::optional<LinearAttnCase>(*grid_case) : std::nullopt);
}

std::shared_ptr<const Workload> make_gated_delta_workload() {
  return std::make_shared<GatedDeltaWorkload>();
}

namespace {

/// The sizes --shape gives either rule (B, T, H, D or DK and DV), and the delta rule's flags.
struct ShapeItems {
  std::string rule = "linear";
  LinearAttnShape sizes;
  bool normalize = true, initial_state = false;
  int64_t chunk = 64;
  bool backward = false;
};

ShapeItems parse_items(const std::map<std::string, std::string>& given, DType dtype) {
  static const std::set<std::string> known = {"B",  "T",    "H",  "D",     "DK",
                                              "DV", "NORM", "H0", "CHUNK", "BWD"};
  ShapeItems out;
  // RULE's value is a word: take it out before the integer sizes are read.
  std::map<std::string, std::string> sizes = given;
  for (auto it = sizes.begin(); it != sizes.end(); ++it)
    if (upper(it->first) == "RULE") {
      out.rule = it->second;
      sizes.erase(it);
      break;
    }
  if (out.rule != "linear" && out.rule != "delta")
    throw Error(fmt::format("--shape RULE={}: expected linear or delta", out.rule));
  const std::map<std::string, std::string> items = normalize_shape_items(
      sizes, known, "gated_delta", "B, T, H, D (or DK and DV), RULE, NORM, H0, CHUNK and BWD");
  auto has = [&](const char* k) { return items.count(k) > 0; };
  auto count = [&](const char* k) { return parse_shape_integer(k, items.at(k)); };
  LinearAttnShape& s = out.sizes;
  s.dtype = dtype;
  if (!has("T")) throw Error("--shape for gated_delta needs T (it takes B, T, H, D or DK and DV)");
  if (has("D") && (has("DK") || has("DV")))
    throw Error("--shape: give D (both head dims) or DK and DV, not both");
  if (!has("D") && !(has("DK") && has("DV")))
    throw Error("--shape for gated_delta needs D, or DK and DV (the head dims)");
  s.batch = has("B") ? count("B") : 1;
  s.steps = count("T");
  s.heads = has("H") ? count("H") : 1;
  s.key_dim = has("D") ? count("D") : count("DK");
  s.value_dim = has("D") ? count("D") : count("DV");
  if (s.batch < 1 || s.heads < 1)
    throw Error(fmt::format("--shape: B={} and H={} must be at least 1", s.batch, s.heads));
  if (s.batch > 65535 || s.heads > 65535)
    throw Error(fmt::format("--shape: B={} and H={} must be at most 65535 (grid dimensions)",
                            s.batch, s.heads));
  for (auto [name, dim] : {std::pair<const char*, int64_t>{"DK", s.key_dim}, {"DV", s.value_dim}})
    if (dim < 1 || dim > 256)
      throw Error(fmt::format("--shape: {}={} must be from 1 to 256", has("D") ? "D" : name, dim));
  if (s.steps > (int64_t(1) << 24)) throw Error(fmt::format("--shape: T={} is over 2^24", s.steps));
  const double elems = double(s.batch) * double(s.steps) * double(s.heads) *
                       double(std::max(s.key_dim, s.value_dim));
  if (elems > double(int64_t(1) << 32))
    throw Error(fmt::format("--shape: a tensor would hold {:.3g} elements, over 2^32", elems));
  const double state = double(s.batch) * double(s.heads) * double(s.key_dim) * double(s.value_dim);
  if (state > double(int64_t(1) << 32))
    throw Error(fmt::format("--shape: the state would hold {:.3g} elements, over 2^32", state));
  for (const char* k : {"NORM", "H0", "BWD"})
    if (has(k)) {
      if (out.rule != "delta")
        throw Error(fmt::format("--shape {}: is for RULE=delta (the gated delta rule)", k));
      if (count(k) > 1) throw Error(fmt::format("--shape {}={}: expected 0 or 1", k, items.at(k)));
    }
  if (has("CHUNK")) {
    if (out.rule != "delta")
      throw Error("--shape CHUNK: is for RULE=delta (linear attention's chunk is a tunable, C)");
    out.chunk = count("CHUNK");
    if (out.chunk != 16 && out.chunk != 32 && out.chunk != 64)
      throw Error(fmt::format("--shape CHUNK={}: expected 16, 32 or 64 (steps per chunk)",
                              items.at("CHUNK")));
  }
  out.normalize = !has("NORM") || count("NORM") == 1;
  out.initial_state = has("H0") && count("H0") == 1;
  out.backward = has("BWD") && count("BWD") == 1;
  return out;
}

} // namespace

std::string shape_rule(const std::map<std::string, std::string>& items) {
  for (const auto& [key, value] : items)
    if (upper(key) == "RULE") return value;
  return "linear";
}

LinearAttnShape parse_linear_attn_shape(const std::map<std::string, std::string>& given,
                                        DType dtype) {
  ShapeItems p = parse_items(given, dtype);
  if (p.rule != "linear")
    throw Error(fmt::format("--shape RULE={}: not a linear attention shape", p.rule));
  return p.sizes;
}

GatedDeltaShape parse_gated_delta_rule_shape(const std::map<std::string, std::string>& given,
                                             DType dtype) {
  ShapeItems p = parse_items(given, dtype);
  if (p.rule != "delta")
    throw Error(fmt::format("--shape RULE={}: not a gated delta rule shape", p.rule));
  GatedDeltaShape s;
  s.batch = p.sizes.batch, s.steps = p.sizes.steps, s.heads = p.sizes.heads;
  s.key_dim = p.sizes.key_dim, s.value_dim = p.sizes.value_dim;
  s.normalize = p.normalize, s.initial_state = p.initial_state;
  s.chunk = p.chunk;
  s.backward = p.backward;
  s.dtype = dtype;
  return s;
}

} // namespace tilejit::workloads
