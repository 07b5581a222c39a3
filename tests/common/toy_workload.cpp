#include "toy_workload.h"

#include "support/error.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <random>

namespace tilejit::test {
namespace {

using workloads::BufferRole;
using workloads::StepArg;

/// The kernels' file: in the source tree this was built from, else (a build carried to the GPU
/// machine, run from the repository's root there) relative to the working directory.
std::string toy_source() {
  static const std::string path = [] {
    std::string built = TILEJIT_SOURCE_DIR "/tests/data/toy_chain.tile";
    return std::filesystem::exists(built) ? built : std::string("tests/data/toy_chain.tile");
  }();
  return path;
}
constexpr double kBias = 0.25;

class ToyData final : public workloads::ProblemData {
public:
  ToyData(int64_t r, int64_t c, uint64_t seed)
      : x(DType::F32, {r, c}), p(DType::F32, {r, c}), y(DType::F32, {r, c}), s(DType::F32, {r}) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1, 1);
    for (int64_t i = 0; i < x.numel(); ++i) x.set(i, u(rng));
  }
  ref::HostBuffer& buffer(const std::string& name) override {
    if (name == "X") return x;
    if (name == "P") return p;
    if (name == "Y") return y;
    if (name == "S") return s;
    throw Error(fmt::format("toy_chain has no buffer '{}'", name));
  }
  workloads::Comparison compare() override {
    const int64_t R = x.shape()[0], C = x.shape()[1];
    double diff = 0, norm = 0;
    int64_t nan = 0;
    for (int64_t r = 0; r < R; ++r) {
      double want = 0;
      for (int64_t c = 0; c < C; ++c) want += 4 * x.get(r * C + c) * x.get(r * C + c) + kBias;
      double got = s.get(r);
      if (std::isnan(got))
        ++nan;
      else
        diff += (got - want) * (got - want);
      norm += want * want;
    }
    workloads::Comparison cmp;
    double err = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
    cmp.errors = {{"S", err}};
    cmp.ok = nan == 0 && err <= 1e-5;
    if (nan) cmp.problems = fmt::format("{} NaN in S", nan);
    return cmp;
  }
  ref::HostBuffer x, p, y, s;
};

class ToyProblem final : public workloads::Problem {
public:
  ToyProblem(int64_t r, int64_t c) : r_(r), c_(c) {}
  std::string name() const override { return fmt::format("R{}/C{}", r_, c_); }
  std::string describe() const override { return fmt::format("f32 R={} C={}", r_, c_); }
  DType dtype() const override { return DType::F32; }
  std::vector<workloads::BufferSpec> buffers() const override {
    return {{"X", DType::F32, {r_, c_}, BufferRole::input},
            {"P", DType::F32, {r_, c_}, BufferRole::intermediate},
            {"Y", DType::F32, {r_, c_}, BufferRole::intermediate},
            {"S", DType::F32, {r_}, BufferRole::output}};
  }
  std::vector<workloads::Step> steps() const override {
    auto step = [](const char* label, const char* kernel, std::vector<StepArg> args,
                   std::vector<std::string> writes, bool one_time) {
      workloads::Step s;
      s.label = label;
      s.kernel = kernel;
      s.args = std::move(args);
      s.writes = std::move(writes);
      s.one_time = one_time;
      return s;
    };
    return {step("pack", "toy_pack", {StepArg::of("X"), StepArg::of("P")}, {"P"}, true),
            step("square", "toy_square",
                 {StepArg::of("P"), StepArg::of("Y"), StepArg::value(Arg::f32(kBias))}, {"Y"},
                 false),
            step("rowsum", "toy_rowsum", {StepArg::of("Y"), StepArg::of("S")}, {"S"}, false)};
  }
  std::unique_ptr<workloads::ProblemData> make_data(uint64_t seed) const override {
    return std::make_unique<ToyData>(r_, c_, seed);
  }
  workloads::FloorWork floor() const override {
    return {static_cast<double>(r_ * c_ * 4 + r_ * 4), static_cast<double>(3 * r_ * c_)};
  }
  nlohmann::json shape_json() const override { return {{"R", r_}, {"C", c_}}; }

private:
  int64_t r_, c_;
};

class ToyWorkload final : public workloads::Workload {
public:
  std::string name() const override { return "toy_chain"; }
  std::string summary() const override { return "a test workload of three kernels"; }
  std::vector<workloads::KernelSource> kernels() const override {
    return {{"toy_pack", toy_source()}, {"toy_square", toy_source()}, {"toy_rowsum", toy_source()}};
  }
  std::vector<std::string> peers() const override { return {"none (a test workload)"}; }
  std::vector<DType> dtypes() const override { return {DType::F32}; }
  std::vector<std::unique_ptr<workloads::Problem>> cases(DType) const override {
    std::vector<std::unique_ptr<workloads::Problem>> out;
    out.push_back(std::make_unique<ToyProblem>(37, 300));
    out.push_back(std::make_unique<ToyProblem>(64, 1000));
    return out;
  }
  std::unique_ptr<workloads::Problem> parse_shape(const std::map<std::string, std::string>& items,
                                                  DType) const override {
    if (!items.count("R") || !items.count("C") || items.size() != 2)
      throw Error("--shape for toy_chain takes R and C");
    return std::make_unique<ToyProblem>(std::stoll(items.at("R")), std::stoll(items.at("C")));
  }
  std::string shape_help() const override { return "R, C   rows and columns of X"; }
};

} // namespace

std::shared_ptr<const workloads::Workload> make_toy_workload() {
  return std::make_shared<ToyWorkload>();
}

} // namespace tilejit::test
