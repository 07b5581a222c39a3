#include "workloads/paged_sparse_workload.h"

#include "compiler/kernel_library.h"
#include "support/error.h"
#include "support/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <set>

namespace tilejit::workloads {
namespace {

constexpr const char* kKernel = "paged_sparse_decode";

/// The integer choices the shipped kernel declares for generic `name` (D, G, PS): the parser
/// checks a user's shape against the kernel itself, so the two cannot drift apart.
const std::vector<int64_t>& kernel_choices(const std::string& name) {
  static const std::map<std::string, std::vector<int64_t>> choices = [] {
    std::map<std::string, std::vector<int64_t>> out;
    LoadedModule m = load_embedded_tile("workloads/paged_sparse.tile");
    for (const auto& g : m.kernel(kKernel).generics)
      if (!g.choice.is_dtype) out[g.name] = g.choice.ints;
    return out;
  }();
  return choices.at(name);
}

/// "64, 96, 128, 256"; runs of consecutive values as "1..16".
std::string choices_text(const std::vector<int64_t>& v) {
  std::vector<std::string> s;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    s.push_back(j >= i + 2 ? fmt::format("{}..{}", v[i], v[j]) : std::to_string(v[i]));
    if (j >= i + 2 || j == i) {
      i = j + 1;
    } else {
      ++i;
    }
  }
  return join(s, ", ");
}

class PagedSparseHostData final : public ProblemData {
public:
  explicit PagedSparseHostData(std::unique_ptr<workloads::PagedSparseData> d) : d_(std::move(d)) {}

  ref::HostBuffer& buffer(const std::string& name) override {
    workloads::PagedSparseData& d = *d_;
    std::map<std::string, ref::HostBuffer*> by_name = {{"q", &d.q},
                                                       {"k_cache", &d.k_cache},
                                                       {"v_cache", &d.v_cache},
                                                       {"block_table", &d.block_table},
                                                       {"seq_lens", &d.seq_lens},
                                                       {"kept_idx", &d.kept_idx},
                                                       {"kept_len", &d.kept_len},
                                                       {"o", &d.o},
                                                       {"lse", &d.lse}};
    auto it = by_name.find(name);
    if (it == by_name.end()) throw Error(fmt::format("paged_sparse has no buffer '{}'", name));
    return *it->second;
  }

  Comparison compare() override {
    if (!reference_) reference_ = paged_sparse_reference(*d_);
    PagedSparseErrors e = compare_paged_sparse(*d_, *reference_);
    Comparison c;
    c.ok = e.ok();
    c.errors = {{"o", e.o}, {"lse", e.lse}};
    std::vector<std::string> problems;
    if (e.nan_o) problems.push_back(fmt::format("{} NaN in o", e.nan_o));
    if (e.nonzero_empty)
      problems.push_back(fmt::format("{} nonzero o for empty kept sets", e.nonzero_empty));
    if (e.bad_lse) problems.push_back(fmt::format("{} bad lse", e.bad_lse));
    c.problems = join(problems, ", ");
    return c;
  }

private:
  std::unique_ptr<workloads::PagedSparseData> d_;
  std::optional<PagedSparseReference> reference_;
};

class PagedSparseProblem final : public Problem {
public:
  PagedSparseProblem(PagedSparseShape shape, std::optional<PagedSparseCase> grid_case)
      : shape_(std::move(shape)), case_(std::move(grid_case)) {}

  std::string name() const override {
    if (case_) return case_->name();
    const PagedSparseShape& s = shape_;
    auto range = [](const std::vector<int64_t>& v) {
      if (v.empty()) return std::string("-");
      auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      return *lo == *hi ? std::to_string(*lo) : fmt::format("{}..{}", *lo, *hi);
    };
    return fmt::format("B{}/HQ{}/HKV{}/D{}/ps{}/seq{}/kept{}", s.batch, s.heads_q, s.heads_kv,
                       s.head_dim, s.page_size, range(s.seq_lens), range(s.kept_lens));
  }
  std::string describe() const override { return shape_.describe(); }
  DType dtype() const override { return shape_.dtype; }
  std::string variant() const override { return "sparse"; }

  std::vector<BufferSpec> buffers() const override {
    const PagedSparseShape& s = shape_;
    PagedSparseDims d = paged_sparse_dims(s);
    const int64_t B = s.batch, HQ = s.heads_q, HKV = s.heads_kv, D = s.head_dim;
    using R = BufferRole;
    return {{"q", s.dtype, {B, HQ, D}, R::input},
            {"k_cache", s.dtype, {d.num_pages, s.page_size, HKV, D}, R::input},
            {"v_cache", s.dtype, {d.num_pages, s.page_size, HKV, D}, R::input},
            {"block_table", DType::I32, {B, d.max_pages}, R::input},
            {"seq_lens", DType::I32, {B}, R::input},
            {"kept_idx", DType::I32, {B, HKV, d.max_kept}, R::input},
            {"kept_len", DType::I32, {B, HKV}, R::input},
            {"o", s.dtype, {B, HQ, D}, R::output},
            {"lse", DType::F32, {B, HQ}, R::output}};
  }

  std::vector<Step> steps() const override {
    Step s;
    s.label = "decode";
    s.kernel = kKernel;
    for (const char* b :
         {"q", "k_cache", "v_cache", "block_table", "seq_lens", "kept_idx", "kept_len", "o", "lse"})
      s.args.push_back(StepArg::of(b));
    s.args.push_back(StepArg::value(
        Arg::f32(static_cast<float>(1.0 / std::sqrt(static_cast<double>(shape_.head_dim))))));
    s.generics = paged_sparse_generics(shape_);
    s.writes = {"o", "lse"};
    return {s};
  }

  std::unique_ptr<ProblemData> make_data(uint64_t seed) const override {
    return std::make_unique<PagedSparseHostData>(make_paged_sparse_data(shape_, seed));
  }

  FloorWork floor() const override { return {paged_sparse_floor_bytes(shape_), 0}; }

  nlohmann::json shape_json() const override {
    const PagedSparseShape& s = shape_;
    nlohmann::json j = {{"B", s.batch},
                        {"Hq", s.heads_q},
                        {"Hkv", s.heads_kv},
                        {"D", s.head_dim},
                        {"ps", s.page_size}};
    int64_t ctx = s.seq_lens.empty() ? 0 : *std::max_element(s.seq_lens.begin(), s.seq_lens.end());
    int64_t kept =
        s.kept_lens.empty() ? 0 : *std::max_element(s.kept_lens.begin(), s.kept_lens.end());
    j["ctx"] = case_ ? case_->context : ctx;
    if (case_) j["r"] = case_->ratio;
    j["kept"] = kept;
    if (!case_) {
      j["seq_lens"] = s.seq_lens;
      j["kept_lens"] = s.kept_lens;
    }
    return j;
  }

private:
  PagedSparseShape shape_;
  std::optional<PagedSparseCase> case_;
};

class PagedSparseWorkload final : public Workload {
public:
  std::string name() const override { return "paged_sparse"; }
  std::string summary() const override {
    return "sparse decode attention over a paged KV cache (split-K, one launch)";
  }
  std::vector<KernelSource> kernels() const override { return {{kKernel, kPagedSparseSource}}; }
  std::vector<std::string> peers() const override {
    return {"bench/peers/paged_sparse_peer.py: Triton split-K (broad config search, CUDA graph) "
            "and dense SDPA",
            "../shared/peers/paged_sparse.py: the shared Triton yardstick"};
  }
  std::vector<DType> dtypes() const override { return {DType::F16, DType::BF16}; }
  std::vector<std::unique_ptr<Problem>> cases(DType dtype) const override {
    std::vector<std::unique_ptr<Problem>> out;
    for (const PagedSparseCase& c : paged_sparse_cases())
      out.push_back(make_paged_sparse_problem(c.shape(dtype), &c));
    return out;
  }
  std::unique_ptr<Problem> parse_shape(const std::map<std::string, std::string>& items,
                                       DType dtype) const override {
    return make_paged_sparse_problem(parse_paged_sparse_shape(items, dtype));
  }
  std::string shape_help() const override {
    return fmt::format(
        "HQ, HKV   query and kv heads (or G = HQ/HKV with one of them; G in 1..16)\n"
        "D         head dim ({})\n"
        "PS        page size ({}; default 16)\n"
        "B         sequences (default 1, or as many as SEQ lists)\n"
        "CTX       every sequence's length, or SEQ=a:b:c one length per sequence\n"
        "R         kept share of each sequence (0.05), or KEPT=n | a:b:c (one per sequence, or "
        "one per (sequence, kv head))",
        choices_text(kernel_choices("D")), choices_text(kernel_choices("PS")));
  }
};

std::vector<int64_t> parse_list(const std::string& key, const std::string& text) {
  std::vector<int64_t> out;
  for (const std::string& part : split(text, ':')) out.push_back(parse_shape_integer(key, part));
  return out;
}

} // namespace

std::unique_ptr<Problem> make_paged_sparse_problem(const PagedSparseShape& shape,
                                                   const PagedSparseCase* grid_case) {
  return std::make_unique<PagedSparseProblem>(
      shape, grid_case ? std::optional<PagedSparseCase>(*grid_case) : std::nullopt);
}

std::shared_ptr<const Workload> make_paged_sparse_workload() {
  return std::make_shared<PagedSparseWorkload>();
}

PagedSparseShape parse_paged_sparse_shape(const std::map<std::string, std::string>& given,
                                          DType dtype) {
  static const std::set<std::string> known = {"B",  "HQ",  "HKV", "G", "D",
                                              "PS", "CTX", "SEQ", "R", "KEPT"};
  const std::map<std::string, std::string> items = normalize_shape_items(
      given, known, "paged_sparse", "B, HQ, HKV, G, D, PS, CTX or SEQ, and R or KEPT");
  auto has = [&](const char* k) { return items.count(k) > 0; };
  auto count = [&](const char* k) { return parse_shape_integer(k, items.at(k)); };
  PagedSparseShape s;
  s.dtype = dtype;
  // Heads: two of HQ, HKV and G. HKV times G is checked before it is used: each may have 12
  // digits, and their product past int64 was undefined behaviour (UBSan, a mutated shape).
  auto kv_times_group = [&]() {
    int64_t heads_q = 0;
    if (__builtin_mul_overflow(count("HKV"), count("G"), &heads_q))
      throw Error(fmt::format("--shape: HKV={} times G={} query heads is too large", count("HKV"),
                              count("G")));
    return heads_q;
  };
  int given_heads = has("HQ") + has("HKV") + has("G");
  if (given_heads < 2)
    throw Error("--shape for paged_sparse needs the heads: HQ and HKV (query and kv heads), or "
                "one of them with G = HQ/HKV");
  if (given_heads == 3 && count("HQ") != kv_times_group())
    throw Error(fmt::format("--shape: HQ={} is not HKV={} times G={}", count("HQ"), count("HKV"),
                            count("G")));
  if (has("HQ") && has("HKV")) {
    s.heads_q = count("HQ");
    s.heads_kv = count("HKV");
  } else if (has("HKV")) {
    s.heads_kv = count("HKV");
    s.heads_q = kv_times_group();
  } else {
    int64_t g = count("G");
    if (g == 0) throw Error("--shape: G must be at least 1");
    s.heads_q = count("HQ");
    if (s.heads_q % g != 0)
      throw Error(fmt::format("--shape: HQ={} is not a multiple of G={}", s.heads_q, g));
    s.heads_kv = s.heads_q / g;
  }
  if (s.heads_q < 1 || s.heads_kv < 1)
    throw Error(fmt::format("--shape: HQ={} and HKV={} must be at least 1", s.heads_q, s.heads_kv));
  if (s.heads_q % s.heads_kv != 0)
    throw Error(fmt::format("--shape: HQ={} is not a multiple of HKV={} (each kv head serves "
                            "G = HQ/HKV query heads)",
                            s.heads_q, s.heads_kv));
  const int64_t G = s.heads_q / s.heads_kv;
  const auto& gs = kernel_choices("G");
  if (std::find(gs.begin(), gs.end(), G) == gs.end())
    throw Error(fmt::format("--shape: G = HQ/HKV = {} query heads per kv head; paged_sparse "
                            "supports {}",
                            G, choices_text(gs)));
  if (!has("D")) throw Error("--shape for paged_sparse needs D (the head dim)");
  s.head_dim = count("D");
  const auto& ds = kernel_choices("D");
  if (std::find(ds.begin(), ds.end(), s.head_dim) == ds.end())
    throw Error(fmt::format("--shape: D={}: paged_sparse supports head dims {}", s.head_dim,
                            choices_text(ds)));
  s.page_size = has("PS") ? count("PS") : 16;
  const auto& ps = kernel_choices("PS");
  if (std::find(ps.begin(), ps.end(), s.page_size) == ps.end())
    throw Error(fmt::format("--shape: PS={}: paged_sparse supports page sizes {}", s.page_size,
                            choices_text(ps)));
  // Sequences.
  if (has("CTX") && has("SEQ"))
    throw Error("--shape: give CTX (one length for every sequence) or SEQ (one per sequence), "
                "not both");
  if (!has("CTX") && !has("SEQ"))
    throw Error("--shape for paged_sparse needs the sequence lengths: CTX=n for all, or "
                "SEQ=a:b:c one per sequence");
  if (has("SEQ")) {
    s.seq_lens = parse_list("SEQ", items.at("SEQ"));
    s.batch = static_cast<int64_t>(s.seq_lens.size());
    if (has("B") && count("B") != s.batch)
      throw Error(
          fmt::format("--shape: B={} but SEQ lists {} sequence length(s)", count("B"), s.batch));
  } else {
    s.batch = has("B") ? count("B") : 1;
    if (s.batch > 4096) throw Error(fmt::format("--shape: B={} is over 4096", s.batch));
    s.seq_lens.assign(s.batch, count("CTX"));
  }
  if (s.batch > 4096) throw Error(fmt::format("--shape: B={} is over 4096", s.batch));
  for (int64_t len : s.seq_lens)
    if (len > INT32_MAX)
      throw Error(
          fmt::format("--shape: a sequence of {} tokens: lengths must fit in 32 bits", len));
  if (s.heads_kv > 65535)
    throw Error(fmt::format("--shape: HKV={} is over 65535 (a grid dimension)", s.heads_kv));
  if (s.batch * s.heads_kv > (int64_t(1) << 20))
    throw Error(fmt::format("--shape: B={} sequences of HKV={} kv heads are over 2^20 kept lists",
                            s.batch, s.heads_kv));
  // Kept tokens per (sequence, kv head).
  if (has("R") && has("KEPT"))
    throw Error("--shape: give R (a share of each sequence) or KEPT (counts), not both");
  if (!has("R") && !has("KEPT"))
    throw Error("--shape for paged_sparse needs the kept tokens, one of: R=0.05 (a share of "
                "each sequence) or KEPT=n | a:b:c (per sequence, or per (sequence, kv head))");
  const int64_t B = s.batch, HKV = s.heads_kv;
  s.kept_lens.assign(B * HKV, 0);
  if (has("R")) {
    char* end = nullptr;
    const std::string& text = items.at("R");
    double r = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != 0 || !(r >= 0 && r <= 1))
      throw Error(fmt::format("--shape R={}: expected a share between 0 and 1", text));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < HKV; ++h)
        s.kept_lens[b * HKV + h] = std::llround(r * static_cast<double>(s.seq_lens[b]));
  } else {
    std::vector<int64_t> kept = parse_list("KEPT", items.at("KEPT"));
    if (kept.size() == 1) {
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < HKV; ++h) s.kept_lens[b * HKV + h] = kept[0];
    } else if (static_cast<int64_t>(kept.size()) == B) {
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < HKV; ++h) s.kept_lens[b * HKV + h] = kept[b];
    } else if (static_cast<int64_t>(kept.size()) == B * HKV) {
      s.kept_lens = kept;
    } else {
      throw Error(fmt::format("--shape: KEPT lists {} counts; give 1, B={} (per sequence) or "
                              "B*HKV={} (per sequence and kv head)",
                              kept.size(), B, B * HKV));
    }
  }
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < HKV; ++h)
      if (s.kept_lens[b * HKV + h] > s.seq_lens[b])
        throw Error(fmt::format("--shape: {} kept tokens for sequence {} (kv head {}) but it is "
                                "{} tokens long",
                                s.kept_lens[b * HKV + h], b, h, s.seq_lens[b]));
  return s;
}

} // namespace tilejit::workloads
