// NVRTC through dlopen: real compiles for sm_80 and sm_90a, outputs, errors, headers.
#include "runtime/nvrtc.h"

#include "nvrtc_test_support.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <regex>
#include <thread>

namespace tilejit {
namespace {

const char* kSaxpy = R"(
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

NvrtcRequest saxpy_for(const std::string& arch) {
  NvrtcRequest r;
  r.source = kSaxpy;
  r.program_name = "saxpy.cu";
  r.arch = arch;
  return r;
}

bool is_elf(const std::string& image) {
  return image.rfind("\177ELF", 0) == 0;
}

TEST(NvrtcTest, VersionAndSupportedArchs) {
  TJ_REQUIRE_NVRTC();
  const Nvrtc& nvrtc = Nvrtc::get();
  EXPECT_TRUE(std::regex_match(nvrtc.version(), std::regex(R"(\d+\.\d+)"))) << nvrtc.version();
  EXPECT_GE(std::stoi(nvrtc.version()), 12);
  std::vector<std::string> archs = nvrtc.supported_archs();
  EXPECT_NE(std::find(archs.begin(), archs.end(), "sm_80"), archs.end());
  EXPECT_NE(std::find(archs.begin(), archs.end(), "sm_90"), archs.end());
  EXPECT_FALSE(nvrtc.library_path().empty());
}

TEST(NvrtcTest, CompilesCubinAndPtxForSm80) {
  TJ_REQUIRE_NVRTC();
  NvrtcOutput out = Nvrtc::get().compile(saxpy_for("sm_80"));
  ASSERT_TRUE(out.ok) << out.log;
  EXPECT_TRUE(is_elf(out.cubin));
  EXPECT_NE(out.ptx.find(".target sm_80"), std::string::npos);
  EXPECT_NE(out.ptx.find(".entry saxpy"), std::string::npos);
  EXPECT_EQ(out.ptx.find('\0'), std::string::npos) << "PTX text must not carry the C NUL";
  // The ptxas report was asked for (resource_report defaults to true).
  EXPECT_NE(out.log.find("Compiling entry function 'saxpy' for 'sm_80'"), std::string::npos)
      << out.log;
  EXPECT_NE(out.log.find("Used "), std::string::npos) << out.log;
}

TEST(NvrtcTest, CompilesCubinAndPtxForSm90a) {
  TJ_REQUIRE_NVRTC();
  NvrtcOutput out = Nvrtc::get().compile(saxpy_for("sm_90a"));
  ASSERT_TRUE(out.ok) << out.log;
  EXPECT_TRUE(is_elf(out.cubin));
  EXPECT_NE(out.ptx.find(".target sm_90a"), std::string::npos);
  EXPECT_NE(out.log.find("for 'sm_90a'"), std::string::npos) << out.log;
}

TEST(NvrtcTest, ResourceReportSurvivesRepeatCompiles) {
  TJ_REQUIRE_NVRTC();
  // Where a driver is installed NVRTC 13 caches compiles and, on a hit, skips ptxas and its
  // report; Nvrtc::compile turns that cache off when a report is asked for.
  for (int round = 0; round < 2; ++round) {
    NvrtcOutput out = Nvrtc::get().compile(saxpy_for("sm_80"));
    ASSERT_TRUE(out.ok) << out.log;
    EXPECT_NE(out.log.find("Used "), std::string::npos) << "round " << round << ": " << out.log;
  }
}

TEST(NvrtcTest, ArchSpecificInstructionsNeedTheATarget) {
  TJ_REQUIRE_NVRTC();
  // wgmma exists only on sm_90a: this is why DeviceInfo::arch() picks it for Hopper.
  NvrtcRequest r;
  r.source = R"(extern "C" __global__ void fence() { asm volatile("wgmma.fence.sync.aligned;"); })";
  r.arch = "sm_90a";
  NvrtcOutput with_a = Nvrtc::get().compile(r);
  EXPECT_TRUE(with_a.ok) << with_a.log;
  r.arch = "sm_90";
  NvrtcOutput without_a = Nvrtc::get().compile(r);
  EXPECT_FALSE(without_a.ok);
  EXPECT_NE(without_a.log.find("wgmma"), std::string::npos) << without_a.log;
}

TEST(NvrtcTest, OutputsFollowTheRequest) {
  TJ_REQUIRE_NVRTC();
  NvrtcRequest r = saxpy_for("sm_80");
  r.want_ptx = false;
  r.resource_report = false;
  NvrtcOutput cubin_only = Nvrtc::get().compile(r);
  ASSERT_TRUE(cubin_only.ok) << cubin_only.log;
  EXPECT_TRUE(is_elf(cubin_only.cubin));
  EXPECT_TRUE(cubin_only.ptx.empty());
  EXPECT_EQ(cubin_only.log.find("ptxas"), std::string::npos) << cubin_only.log;

  r = saxpy_for("sm_90a");
  r.want_cubin = false;
  NvrtcOutput ptx_only = Nvrtc::get().compile(r);
  ASSERT_TRUE(ptx_only.ok) << ptx_only.log;
  EXPECT_TRUE(ptx_only.cubin.empty());
  EXPECT_NE(ptx_only.ptx.find(".target sm_90a"), std::string::npos);
}

TEST(NvrtcTest, CubinForVirtualArchIsAnErrorNotAThrow) {
  TJ_REQUIRE_NVRTC();
  NvrtcOutput out = Nvrtc::get().compile(saxpy_for("compute_90a"));
  EXPECT_FALSE(out.ok);
  EXPECT_NE(out.log.find("virtual architecture 'compute_90a'"), std::string::npos) << out.log;
}

TEST(NvrtcTest, CompileErrorReturnsTheLog) {
  TJ_REQUIRE_NVRTC();
  NvrtcRequest r;
  r.program_name = "broken.cu";
  r.source = "extern \"C\" __global__ void k(float* p) {\n  p[0] = undeclared_name;\n}\n";
  NvrtcOutput out;
  ASSERT_NO_THROW(out = Nvrtc::get().compile(r));
  EXPECT_FALSE(out.ok);
  EXPECT_NE(out.log.find("broken.cu(2)"), std::string::npos) << out.log;
  EXPECT_NE(out.log.find("undeclared_name"), std::string::npos) << out.log;
  EXPECT_TRUE(out.cubin.empty());
}

TEST(NvrtcTest, BadOptionIsNamed) {
  TJ_REQUIRE_NVRTC();
  NvrtcRequest r = saxpy_for("sm_80");
  r.options = {"--no-such-option"};
  NvrtcOutput out = Nvrtc::get().compile(r);
  EXPECT_FALSE(out.ok);
  EXPECT_NE(out.log.find("--no-such-option"), std::string::npos) << out.log;
}

TEST(NvrtcTest, InMemoryHeadersAndDefines) {
  TJ_REQUIRE_NVRTC();
  NvrtcRequest r;
  r.source = R"(
#include "tile/params.h"
static_assert(BLOCK == 128, "BLOCK comes from the in-memory header");
static_assert(SCALE == 3, "SCALE comes from -D");
extern "C" __global__ void k(float* p) { p[threadIdx.x] *= BLOCK * SCALE; }
)";
  r.headers = {{"tile/params.h", "#pragma once\n#define BLOCK 128\n"}};
  r.options = {"-DSCALE=3"};
  NvrtcOutput out = Nvrtc::get().compile(r);
  EXPECT_TRUE(out.ok) << out.log;

  r.headers.clear();
  NvrtcOutput missing = Nvrtc::get().compile(r);
  EXPECT_FALSE(missing.ok);
  EXPECT_NE(missing.log.find("tile/params.h"), std::string::npos) << missing.log;
}

TEST(NvrtcTest, LoweredNamesOfTemplateKernels) {
  TJ_REQUIRE_NVRTC();
  NvrtcRequest r;
  r.source = R"(
namespace ops { template <int N> __global__ void scale(float* p) { p[threadIdx.x] *= N; } }
)";
  r.name_expressions = {"ops::scale<4>"};
  NvrtcOutput out = Nvrtc::get().compile(r);
  ASSERT_TRUE(out.ok) << out.log;
  ASSERT_EQ(out.lowered_names.size(), 1u);
  EXPECT_EQ(out.lowered_names[0].first, "ops::scale<4>");
  EXPECT_EQ(out.lowered_names[0].second, "_ZN3ops5scaleILi4EEEvPf");
}

TEST(NvrtcTest, ConcurrentCompiles) {
  TJ_REQUIRE_NVRTC();
  // The tuner compiles candidates on a thread pool.
  std::vector<NvrtcOutput> outs(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < outs.size(); ++i)
    threads.emplace_back([&, i] {
      NvrtcRequest r = saxpy_for(i % 2 ? "sm_90a" : "sm_80");
      r.options = {"-DVARIANT=" + std::to_string(i)};
      outs[i] = Nvrtc::get().compile(r);
    });
  for (auto& t : threads) t.join();
  for (const NvrtcOutput& o : outs) {
    EXPECT_TRUE(o.ok) << o.log;
    EXPECT_TRUE(is_elf(o.cubin));
  }
}

} // namespace
} // namespace tilejit
