// The generated CUDA of a kernel is the same text every time it is generated, whatever the
// heap looked like: the module cache (and the tuning database's binaries) are keyed on that
// text, so a text that varied would turn cache hits into recompiles from process to process.
#include "compiler/cuda/cuda_emitter.h"
#include "compiler/kernel_library.h"
#include "compiler/pipeline.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace tilejit {
namespace {

std::string generate(const LoadedModule& m, const Bindings& b) {
  CompileOptions o;
  o.index32 = true;
  for (const auto& p : m.kernel().params) o.vector_aligned.insert(p.name);
  return cuda::generate_cuda(*lower_to_ir(m.kernel(), b, o)).source;
}

TEST(CodegenDeterminism, TheSameKernelPrintsTheSameText) {
  LoadedModule m = load_embedded_tile("workloads/paged_sparse.tile");
  const Bindings b = {{"T", "f16"}, {"D", "128"},    {"G", "4"},     {"PS", "16"}, {"CHUNK", "256"},
                      {"BN", "32"}, {"STAGES", "2"}, {"WARPS", "4"}, {"PF", "4"}};
  const std::string first = generate(m, b);
  // Allocations of assorted sizes between generations move where the IR's layouts land.
  std::vector<std::unique_ptr<char[]>> noise;
  for (int i = 0; i < 40; ++i) {
    for (int j = 0; j < 7 * i % 23 + 1; ++j) noise.emplace_back(new char[size_t(16) << (j % 9)]);
    if (i % 3 == 0) noise.erase(noise.begin(), noise.begin() + noise.size() / 2);
    ASSERT_EQ(generate(m, b), first) << "generation " << i;
  }
}

} // namespace
} // namespace tilejit
