// hbv's forward kernel on the reference interpreter against the float64 reference: odd
// numbers of basins (a partial last program), one day, a year, several configurations
// (tests/common/hbv_checks.cpp).
#include "hbv_checks.h"

#include <gtest/gtest.h>

namespace tilejit::test {
namespace {

TEST(RefHbv, ForwardMatchesTheFloat64Reference) {
  check_hbv_forward(cpu(), 37, 365, {{"BB", "32"}, {"WARPS", "1"}});
  check_hbv_forward(cpu(), 70, 100, {{"BB", "64"}, {"WARPS", "2"}});
  check_hbv_forward(cpu(), 5, 1, {});
}

// The backward the compiler derives from hbv_forward (reverse mode, checkpoints every CK days)
// against the hand-written float64 adjoint: T a multiple of CK and not, one day, CK past T.
TEST(RefHbv, DerivedBackwardMatchesTheFloat64Adjoint) {
  check_hbv_gradient(cpu(), 37, 100, {{"BB", "32"}, {"WARPS", "1"}, {"CK", "16"}});
  check_hbv_gradient(cpu(), 40, 64, {{"BB", "32"}, {"WARPS", "1"}, {"CK", "32"}});
  check_hbv_gradient(cpu(), 5, 1, {{"CK", "8"}});
  check_hbv_gradient(cpu(), 33, 20, {{"BB", "64"}, {"WARPS", "2"}, {"CK", "256"}});
}

// The same at the ranges' edges: in each basin some parameters sit at the low or the high end of
// WORKLOADS.md's range (CFR = 0 makes max(rr, 0) a tie every cold day, PERC = 0, UZL = 0,
// CWH = 0, BETA = 1 or 6...), and every fifth day's temperature equals TT exactly (ties in
// TEMP >= TT and in max(CFMAX * (TEMP - TT), 0)). DISABLED: it fails, and that is issue 17's
// open finding of 2026-11-25: on the TEMP == TT days the derived d_TEMP is exactly 0 where the
// hand-written adjoint's is not (e.g. 0 against 3.35), and with parameters at their edges alone
// d_params and d_P differ by 1e-3 to 1e-2 on about half the seeds. Which side is wrong at these
// ties (the derived kernel's rules, the reference's, or f32 meeting a tie float64 does not) is
// not settled. Found so far: on cold dry days with no melt, w = mw2 - CWH * sp3 is a tie by
// construction (yesterday's tosoil left mw = CWH * sp), decided by rounding in either
// precision; float64 often computes it as an exact 0, which nearest_tie now counts as a tie
// (with CWH at an edge that flags nearly half the basins); and gradients much smaller than the
// terms they are summed from (1e-5 from O(1) terms at FC near 1000) carry f32's cancellation.
// Reproduce: TILEJIT_TEST_SEED=4 ref_hbv_test --gtest_also_run_disabled_tests
// --gtest_filter='*RangesEdges*'.
TEST(RefHbv, DISABLED_DerivedBackwardAtTheRangesEdges) {
  using namespace workloads;
  auto at_edges = [](HbvInputs& in) {
    for (int64_t b = 0; b < in.b; ++b) {
      for (int p = 0; p < kHbvParams; ++p) {
        const int which = static_cast<int>((b * 7 + p * 5) % 3); // 0 low, 1 high, 2 as drawn
        if (which < 2) in.params[b * kHbvParams + p] = which ? kHbvParamHigh[p] : kHbvParamLow[p];
      }
      for (int64_t d = b % 5; d < in.t; d += 5) in.temp[b * in.t + d] = in.param(b, kTt);
    }
  };
  check_hbv_gradient(cpu(), 37, 100, {{"BB", "32"}, {"WARPS", "1"}, {"CK", "16"}}, 1e-3, at_edges);
  check_hbv_gradient(cpu(), 9, 365, {{"BB", "32"}, {"WARPS", "1"}, {"CK", "32"}}, 1e-3, at_edges);
}

} // namespace
} // namespace tilejit::test
