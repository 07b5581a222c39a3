// The workload interface on the CPU: the registry, every registered workload's problems
// consistent with its kernels (NVRTC compiles every step for sm_90a from shapes alone), a
// three-kernel toy workload and paged_sparse's user shapes run on the reference interpreter
// against their float64 references, and the user-shape parser's errors.
#include "toy_workload.h"
#include "workload_checks.h"

#include "nvrtc_test_support.h"
#include "support/error.h"
#include "test_util.h"
#include "workloads/paged_sparse_workload.h"
#include "workloads/problem_on_gpu.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <set>

namespace tilejit::test {
namespace {

using workloads::BufferRole;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::shared_ptr<const workloads::Workload> toy() {
  static auto w = [] {
    auto t = make_toy_workload();
    workloads::register_workload(t);
    return t;
  }();
  return w;
}

TEST(WorkloadRegistry, FindsRegisteredWorkloadsAndNamesTheOthers) {
  toy();
  EXPECT_EQ(workloads::find_workload("paged_sparse")->name(), "paged_sparse");
  EXPECT_EQ(workloads::find_workload("toy_chain")->kernels().size(), 3u);
  std::string unknown = error_of([] { workloads::find_workload("nope"); });
  EXPECT_NE(unknown.find("unknown workload 'nope'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("paged_sparse"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("toy_chain"), std::string::npos) << unknown;
  std::string planned = error_of([] { workloads::find_workload("attention"); });
  EXPECT_NE(planned.find("not implemented yet"), std::string::npos) << planned;
  for (const auto& [name, summary] : workloads::planned_workloads())
    EXPECT_NE(name, "paged_sparse") << "an implemented workload is not planned";
}

TEST(WorkloadRegistry, DtypesAreParsedPerWorkload) {
  auto ps = workloads::find_workload("paged_sparse");
  EXPECT_EQ(workloads::parse_workload_dtypes(*ps, "bf16"), std::vector<DType>{DType::BF16});
  EXPECT_EQ(workloads::parse_workload_dtypes(*ps, "all").size(), 2u);
  std::string bad = error_of([&] { workloads::parse_workload_dtypes(*ps, "f32"); });
  EXPECT_NE(bad.find("--dtype 'f32': paged_sparse takes f16, bf16"), std::string::npos) << bad;
}

/// Every step names buffers the problem has, writes only buffers, and every output is written;
/// one-time steps come first; NVRTC compiles every step's kernel for the problem's shapes.
void check_consistent(const workloads::Workload& w, const workloads::Problem& p, Runtime& rt,
                      const workloads::WorkloadKernels& kernels) {
  SCOPED_TRACE(w.name() + " " + p.name());
  std::set<std::string> buffers, written;
  for (const auto& b : p.buffers()) EXPECT_TRUE(buffers.insert(b.name).second) << b.name;
  bool per_call_seen = false;
  for (const auto& s : p.steps()) {
    EXPECT_FALSE(s.one_time && per_call_seen) << s.label << ": one-time steps come first";
    per_call_seen = per_call_seen || !s.one_time;
    for (const auto& a : s.args) {
      if (!a.buffer.empty()) {
        EXPECT_TRUE(buffers.count(a.buffer)) << s.label << " " << a.buffer;
      }
    }
    for (const auto& b : s.writes) {
      EXPECT_TRUE(buffers.count(b)) << s.label << " writes " << b;
      written.insert(b);
    }
    LaunchOptions lo;
    lo.config = s.generics;
    EXPECT_NO_THROW(rt.prepare(kernels.get(s.kernel), workloads::shape_only_args(p, s), lo))
        << s.label;
  }
  for (const auto& b : p.buffers()) {
    if (b.role != BufferRole::input) {
      EXPECT_TRUE(written.count(b.name)) << b.name;
    }
  }
}

TEST(WorkloadInterface, EveryProblemIsConsistentWithItsKernels) {
  TJ_REQUIRE_NVRTC();
  toy();
  RuntimeOptions o;
  o.arch = "sm_90a";
  o.tune_on_first_use = false;
  Runtime rt(o);
  for (const auto& w : workloads::registered_workloads()) {
    workloads::WorkloadKernels kernels(rt, *w);
    for (const auto& p : w->cases(w->dtypes().front())) check_consistent(*w, *p, rt, kernels);
  }
}

TEST(WorkloadInterface, AThreeKernelWorkloadRunsOnTheInterpreter) {
  auto w = toy();
  for (const auto& p : w->cases(DType::F32)) {
    auto data = p->make_data(fresh_seed());
    workloads::Comparison c = run_problem_on_interpreter(*w, *p, *data);
    EXPECT_TRUE(c.ok) << p->name() << ": " << c.summary();
  }
  // User shape, odd sizes, forced tunables for one kernel only.
  auto p = w->parse_shape({{"R", "5"}, {"C", "129"}}, DType::F32);
  auto data = p->make_data(fresh_seed());
  workloads::Comparison c = run_problem_on_interpreter(*w, *p, *data, {{"WARPS", "1"}});
  EXPECT_TRUE(c.ok) << c.summary();
}

TEST(WorkloadInterface, ASkippedStepIsCaughtByTheComparison) {
  auto w = toy();
  auto p = w->parse_shape({{"R", "5"}, {"C", "129"}}, DType::F32);
  auto data = p->make_data(fresh_seed());
  // The one-time pack never ran: P stays poisoned and the result must be refused.
  class WithoutPack final : public workloads::Workload {
  public:
    explicit WithoutPack(std::shared_ptr<const workloads::Workload> w) : w_(std::move(w)) {}
    std::string name() const override { return w_->name(); }
    std::string summary() const override { return ""; }
    std::vector<workloads::KernelSource> kernels() const override { return w_->kernels(); }
    std::vector<std::string> peers() const override { return {}; }
    std::vector<DType> dtypes() const override { return w_->dtypes(); }
    std::vector<std::unique_ptr<workloads::Problem>> cases(DType t) const override {
      return w_->cases(t);
    }
    std::unique_ptr<workloads::Problem> parse_shape(const std::map<std::string, std::string>& i,
                                                    DType t) const override {
      return w_->parse_shape(i, t);
    }
    std::string shape_help() const override { return ""; }

  private:
    std::shared_ptr<const workloads::Workload> w_;
  };
  struct NoPackProblem final : workloads::Problem {
    const workloads::Problem& p;
    explicit NoPackProblem(const workloads::Problem& inner) : p(inner) {}
    std::string name() const override { return p.name(); }
    std::string describe() const override { return p.describe(); }
    DType dtype() const override { return p.dtype(); }
    std::vector<workloads::BufferSpec> buffers() const override { return p.buffers(); }
    std::vector<workloads::Step> steps() const override {
      auto s = p.steps();
      s.front().args = {workloads::StepArg::of("Y"), workloads::StepArg::of("Y")}; // not P
      s.front().writes = {"P"}; // still poisoned first
      return s;
    }
    std::unique_ptr<workloads::ProblemData> make_data(uint64_t seed) const override {
      return p.make_data(seed);
    }
    workloads::FloorWork floor() const override { return p.floor(); }
    nlohmann::json shape_json() const override { return p.shape_json(); }
  };
  NoPackProblem broken(*p);
  workloads::Comparison c = run_problem_on_interpreter(WithoutPack(w), broken, *data);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.summary().find("NaN in S"), std::string::npos) << c.summary();
}

/// paged_sparse on the interpreter for a user's shape.
void check_paged_sparse_shape(const std::map<std::string, std::string>& items, DType t) {
  auto w = workloads::find_workload("paged_sparse");
  auto p = w->parse_shape(items, t);
  SCOPED_TRACE(p->describe());
  auto data = p->make_data(fresh_seed());
  workloads::Comparison c = run_problem_on_interpreter(*w, *p, *data);
  EXPECT_TRUE(c.ok) << c.summary();
}

// Group sizes real models use (Qwen2.5-7B: 28 query heads over 4 kv heads), more query heads
// per kv head than a tensor-core tile has rows minus padding, and D = 64 and 96; ragged
// sequences with empty, single and whole kept sets.
TEST(WorkloadInterface, PagedSparseGroupSizesAndHeadDimsOnTheInterpreter) {
  check_paged_sparse_shape({{"HQ", "14"},
                            {"HKV", "2"},
                            {"D", "96"},
                            {"PS", "32"},
                            {"SEQ", "300:77"},
                            {"KEPT", "0:45:1:77"}},
                           DType::BF16);
  for (const char* g : {"5", "6", "16"})
    check_paged_sparse_shape({{"G", g},
                              {"HKV", "2"},
                              {"D", "64"},
                              {"PS", "16"},
                              {"SEQ", "130:41"},
                              {"KEPT", "130:0:1:41"}},
                             DType::F16);
}

TEST(WorkloadInterface, PagedSparseEmptyBatch) {
  check_paged_sparse_shape(
      {{"B", "0"}, {"HQ", "8"}, {"HKV", "2"}, {"D", "64"}, {"CTX", "10"}, {"R", "0.5"}},
      DType::F16);
}

TEST(PagedSparseShape, ParsesTheUsersShapes) {
  using workloads::parse_paged_sparse_shape;
  auto s = parse_paged_sparse_shape({{"b", "5"},
                                     {"hq", "28"},
                                     {"hkv", "4"},
                                     {"d", "128"},
                                     {"ps", "32"},
                                     {"seq", "1000:2000:77:5:3000"},
                                     {"r", "0.05"}},
                                    DType::BF16);
  EXPECT_EQ(s.batch, 5);
  EXPECT_EQ(s.heads_q / s.heads_kv, 7);
  EXPECT_EQ(s.seq_lens, (std::vector<int64_t>{1000, 2000, 77, 5, 3000}));
  ASSERT_EQ(s.kept_lens.size(), 20u);
  EXPECT_EQ(s.kept_lens[0], 50);
  EXPECT_EQ(s.kept_lens[2 * 4 + 3], 4); // round(0.05 * 77)
  EXPECT_EQ(s.dtype, DType::BF16);
  auto g = parse_paged_sparse_shape(
      {{"G", "6"}, {"HKV", "2"}, {"D", "64"}, {"CTX", "100"}, {"KEPT", "0:1:2:3"}, {"B", "2"}},
      DType::F16);
  EXPECT_EQ(g.heads_q, 12);
  EXPECT_EQ(g.page_size, 16);
  EXPECT_EQ(g.kept_lens, (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(PagedSparseShape, BadShapesNameTheProblem) {
  using workloads::parse_paged_sparse_shape;
  auto err = [](std::map<std::string, std::string> items) {
    return error_of([&] { workloads::parse_paged_sparse_shape(items, DType::F16); });
  };
  std::map<std::string, std::string> good = {
      {"HQ", "28"}, {"HKV", "4"}, {"D", "128"}, {"CTX", "100"}, {"R", "0.1"}};
  auto with = [&](std::map<std::string, std::string> change, std::vector<std::string> drop = {}) {
    auto m = good;
    for (const auto& d : drop) m.erase(d);
    for (const auto& [k, v] : change) m[k] = v;
    return err(m);
  };
  EXPECT_EQ(err(good), "(no error)");
  EXPECT_NE(with({{"HKV", "5"}}).find("HQ=28 is not a multiple of HKV=5"), std::string::npos);
  EXPECT_NE(with({}, {"HKV"}).find("needs the heads"), std::string::npos);
  EXPECT_NE(with({{"HKV", "1"}}).find("G = HQ/HKV = 28"), std::string::npos);
  EXPECT_NE(with({}, {"D"}).find("needs D"), std::string::npos);
  EXPECT_NE(with({{"D", "100"}}).find("D=100: paged_sparse supports head dims 64, 96, 128, 256"),
            std::string::npos);
  EXPECT_NE(with({{"PS", "12"}}).find("PS=12"), std::string::npos);
  EXPECT_NE(with({}, {"CTX"}).find("needs the sequence lengths"), std::string::npos);
  EXPECT_NE(with({{"SEQ", "1:2"}}).find("CTX"), std::string::npos); // both given
  EXPECT_NE(with({{"SEQ", "10:20"}, {"B", "3"}}, {"CTX"}).find("B=3 but SEQ lists 2"),
            std::string::npos);
  EXPECT_NE(with({}, {"R"}).find("needs the kept tokens"), std::string::npos);
  EXPECT_NE(with({{"KEPT", "3"}}).find("not both"), std::string::npos);
  EXPECT_NE(with({{"R", "2"}}).find("R=2: expected a share between 0 and 1"), std::string::npos);
  EXPECT_NE(with({{"KEPT", "101"}}, {"R"}).find("101 kept tokens for sequence 0"),
            std::string::npos);
  EXPECT_NE(with({{"KEPT", "1:2:3"}}, {"R"}).find("KEPT lists 3 counts"), std::string::npos);
  EXPECT_NE(with({{"CTX", "-4"}}).find("CTX=-4: expected a non-negative integer"),
            std::string::npos);
  EXPECT_NE(with({{"CTX", "99999999999999999999"}}).find("expected a non-negative integer"),
            std::string::npos);
  EXPECT_NE(with({{"FOO", "1"}}).find("no size 'FOO'"), std::string::npos);
  EXPECT_NE(with({{"G", "3"}}).find("HQ=28 is not HKV=4 times G=3"), std::string::npos);
  EXPECT_NE(with({{"B", "5000"}}).find("B=5000 is over 4096"), std::string::npos);
}

/// "K=V,K=V" into items the way the CLI splits --shape.
std::map<std::string, std::string> items_of(const std::string& text) {
  std::map<std::string, std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string part =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = part.find('=');
    if (eq != std::string::npos) items[part.substr(0, eq)] = part.substr(eq + 1);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

// --shape is an input path: mutated shapes (the seeds in tests/workloads/seeds/, bytes
// deleted, duplicated, replaced by digits, separators and signs) are parsed; each must give a
// problem whose buffers can be described, or a tilejit::Error. Never a crash, a hang or another
// exception.
TEST(PagedSparseShape, MutatedShapesGiveAProblemOrAnError) {
  std::ifstream in(std::string(TILEJIT_SOURCE_DIR) +
                   "/tests/workloads/seeds/paged_sparse_shapes.txt");
  std::vector<std::string> seeds;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) seeds.push_back(line);
  ASSERT_GE(seeds.size(), 5u);
  auto w = workloads::find_workload("paged_sparse");
  std::mt19937 rng(fresh_seed());
  const std::string alphabet = "0123456789:=,-.eEHQKVDPSBGCTXRNAMF \x01";
  int accepted = 0, refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string s = seeds[rng() % seeds.size()];
    for (int m = 0, n = 1 + rng() % 4; m < n && !s.empty(); ++m) {
      size_t at = rng() % s.size();
      switch (rng() % 4) {
      case 0:
        s.erase(at, 1 + rng() % 3);
        break;
      case 1:
        s.insert(at, s.substr(at, 1 + rng() % 6));
        break;
      case 2:
        s[at] = alphabet[rng() % alphabet.size()];
        break;
      default:
        s.insert(at, std::string(1 + rng() % 12, '9'));
        break;
      }
    }
    SCOPED_TRACE(s);
    try {
      auto p = w->parse_shape(items_of(s), DType::F16);
      int64_t elements = 0;
      for (const auto& b : p->buffers()) {
        int64_t n = 1;
        for (int64_t d : b.shape) {
          ASSERT_GE(d, 0);
          n = d == 0 ? 0 : std::min<int64_t>(n * d, int64_t(1) << 50);
        }
        elements += n;
      }
      EXPECT_GE(elements, 0);
      ++accepted;
    } catch (const Error&) {
      ++refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "'" << s << "': " << e.what();
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(refused, 0);
}

} // namespace
} // namespace tilejit::test
