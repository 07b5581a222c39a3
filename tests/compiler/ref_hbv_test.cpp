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

} // namespace
} // namespace tilejit::test
