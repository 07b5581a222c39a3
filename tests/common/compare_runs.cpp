#include "compare_runs.h"

#include "support/text.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace tilejit::test {

void expect_matches_interpreter(const KernelRunner& run, const std::string& source,
                                const Bindings& config, std::vector<CompareBuffer> buffers,
                                double tol) {
  uint32_t seed = fresh_seed();
  SCOPED_TRACE(str(source, " ", config_text(config), "seed=", seed));
  std::mt19937 rng(seed);
  for (CompareBuffer& b : buffers) {
    if (b.zeroed) {
      for (int64_t i = 0; i < b.buffer.numel(); ++i) b.buffer.set_int(i, 0);
    } else if (b.output && !b.accumulate) {
      b.buffer.poison();
    } else if (dtype_is_float(b.buffer.dtype())) {
      fill_uniform(b.buffer, rng, -1, 1);
    } else {
      std::uniform_int_distribution<int> d(0, 15);
      for (int64_t i = 0; i < b.buffer.numel(); ++i) b.buffer.set_int(i, d(rng));
    }
  }
  std::vector<CompareBuffer> expected = buffers;
  auto args_of = [](std::vector<CompareBuffer>& bs) {
    std::vector<TestArg> args;
    for (CompareBuffer& b : bs) args.push_back(TestArg::of(b.buffer));
    return args;
  };
  interpreter_runner()(source, config, args_of(expected));
  run(source, config, args_of(buffers));
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (!buffers[i].output) continue;
    const ref::HostBuffer& got = buffers[i].buffer;
    const ref::HostBuffer& want = expected[i].buffer;
    double diff = 0, norm = 0;
    int64_t nan_mismatch = 0;
    for (int64_t k = 0; k < got.numel(); ++k) {
      double x = got.get(k), y = want.get(k);
      if (std::isnan(x) != std::isnan(y)) ++nan_mismatch;
      if (std::isnan(x) || std::isnan(y)) continue;
      diff += (x - y) * (x - y);
      norm += y * y;
    }
    EXPECT_EQ(nan_mismatch, 0) << "output " << i << ": NaN where the interpreter has none";
    double rel = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
    EXPECT_LE(rel, tol) << "output " << i << " differs from the interpreter's";
  }
}

} // namespace tilejit::test
