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

} // namespace
} // namespace tilejit::test
