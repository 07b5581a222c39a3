// DeviceInfo::arch(): the NVRTC target picked for a compute capability.
#include "runtime/device_info.h"

#include <gtest/gtest.h>

namespace tilejit {
namespace {

std::string arch_of(int major, int minor) {
  DeviceInfo info;
  info.cc_major = major;
  info.cc_minor = minor;
  return info.arch();
}

TEST(DeviceInfoTest, ArchSpecificTargetsForHopperAndBlackwell) {
  // The 'a' targets unlock wgmma/setmaxnreg (Hopper) and tcgen05 (Blackwell datacenter).
  EXPECT_EQ(arch_of(9, 0), "sm_90a");
  EXPECT_EQ(arch_of(10, 0), "sm_100a");
}

TEST(DeviceInfoTest, PlainTargetsOtherwise) {
  EXPECT_EQ(arch_of(7, 5), "sm_75");
  EXPECT_EQ(arch_of(8, 0), "sm_80");
  EXPECT_EQ(arch_of(8, 6), "sm_86");
  EXPECT_EQ(arch_of(8, 9), "sm_89");
  EXPECT_EQ(arch_of(12, 0), "sm_120");
}

} // namespace
} // namespace tilejit
