// dequant_gemm's int4 kernels on the reference interpreter: every group size, act-order, odd M
// and N, K not a multiple of the tile, split along K, several configurations
// (tests/common/dequant_checks.cpp).
#include "dequant_checks.h"
#include "support/text.h"

#include <gtest/gtest.h>

namespace tilejit::test {
namespace {

TEST(RefDequant, W4A16GroupSizesAndActOrder) {
  for (int64_t group : {32, 64, 128, -1})
    for (bool act_order : {false, true})
      check_w4a16(cpu(), DType::F16, 1, 70, 256, group, act_order, {{"BN", "64"}, {"BK", "64"}});
}

TEST(RefDequant, W4A16OddShapesAndConfigurations) {
  // M = 3 rows, N = 37 (a partial zero word), K = 136 (not a multiple of BK).
  for (const Bindings& cfg : {Bindings{{"BN", "32"}, {"BK", "32"}, {"WARPS", "1"}},
                              Bindings{{"BN", "128"}, {"BK", "128"}, {"WARPS", "4"}},
                              Bindings{{"BN", "64"}, {"BK", "256"}, {"WARPS", "8"}}}) {
    check_w4a16(cpu(), DType::F16, 3, 37, 136, 8 * 17, true, cfg);
    check_w4a16(cpu(), DType::BF16, 2, 45, 64, 32, false, cfg);
  }
}

TEST(RefDequant, W4A16PackedGroupSizesAndActOrder) {
  // The repack and the per-call kernel: every group size, act-order (a random permutation of
  // the groups' rows), odd N (a partial zero word), K past the tile, M = 1 and 9 (two row
  // blocks of 8), split along K with a partial last slice.
  for (int64_t group : {32, 64, 128, -1})
    for (bool act_order : {false, true})
      check_w4a16_packed(cpu(), DType::F16, 1, 37, 320, group, act_order,
                         {{"BN", "32"}, {"BK", "32"}, {"STEPS", "2"}, {"WARPS", "1"}},
                         {{"BW", "256"}});
  check_w4a16_packed(cpu(), DType::BF16, 9, 70, 384, 128, true,
                     {{"BN", "64"}, {"BM", "8"}, {"BK", "128"}, {"STEPS", "1"}});
  check_w4a16_packed(cpu(), DType::F16, 17, 64, 1160, 128, false,
                     {{"BN", "64"}, {"BM", "16"}, {"BK", "64"}, {"STEPS", "4"}, {"STAGES", "3"}});
}

TEST(RefDequant, W4A16OnHopperAfterTheLoweringPasses) {
  // WG = 1, SA = 1 on sm_90a, compiled as a launch with well-formed tensors would be: the dot
  // on wgmma, left running across iterations at 3+ stages (the ring's producer one slot
  // further behind), x fetched by TMA (its mbarriers). Run after expand-pipelines and after
  // the last pass, with fewer tiles than stages, a split K and a partial last slice.
  for (const char* pass : {"expand-pipelines", "place-scratch"}) {
    SCOPED_TRACE(str("after ", pass));
    KernelRunner run = interpreter_runner(pass, /*as_launched=*/true);
    for (const char* stages : {"2", "3", "4"}) {
      const Bindings cfg = {{"WG", "1"},  {"SA", "1"},    {"BN", "64"},      {"BM", "16"},
                            {"BK", "64"}, {"STEPS", "3"}, {"STAGES", stages}};
      check_w4a16_packed(run, DType::F16, 17, 64, 448, 64, false, cfg);
      check_w4a16_packed(run, DType::BF16, 5, 70, 128, 128, false, cfg);
    }
  }
}

TEST(RefDequant, W8A16OnTensorCores) {
  // M = 1, 5, 17; odd N; K neither a multiple of BK nor of 8; split along K.
  for (const Bindings& cfg : {Bindings{{"BN", "32"}, {"BK", "64"}, {"STEPS", "1"}},
                              Bindings{{"BN", "64"}, {"BK", "128"}, {"STEPS", "4"}},
                              Bindings{{"BN", "128"}, {"BK", "128"}, {"WARPS", "4"}}}) {
    check_w8a16(cpu(), DType::F16, 1, 70, 300, cfg);
    check_w8a16(cpu(), DType::BF16, 5, 37, 517, cfg);
    check_w8a16(cpu(), DType::F16, 17, 64, 128, cfg);
  }
}

} // namespace
} // namespace tilejit::test
