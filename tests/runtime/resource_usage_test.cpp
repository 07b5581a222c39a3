// Resource usage from ptxas reports (real NVRTC 13 text) and from cubins, and their agreement
// on fresh compiles for sm_80 and sm_90a.
#include "runtime/resource_usage.h"

#include "nvrtc_test_support.h"

#include <gtest/gtest.h>

namespace tilejit {
namespace {

// Verbatim NVRTC 13.0 log for sm_80 (kResourceKernels' spill kernel and a template kernel).
const char* kLogSm80 = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_ZN2ns4tmplIfEEvPT_' for 'sm_80'
ptxas info    : Function properties for _ZN2ns4tmplIfEEvPT_
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compile time = 1.438 ms
ptxas info    : Compiling entry function 'spill' for 'sm_80'
ptxas info    : Function properties for spill
ptxas         .     360 bytes stack frame, 584 bytes spill stores, 668 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 360 bytes cumulative stack size, 372 bytes cmem[0]
ptxas info    : Compile time = 12.006 ms
)";

// NVRTC 13.0 log lines for sm_90a, from two real compiles: a front-end warning first, static
// shared memory, and a kernel whose non-inlined callee reports its own frame after the
// kernel's (that callee's numbers made nonzero here, so mixing the two up would show).
const char* kLogSm90a =
    R"(probe3.cu(3): warning #177-D: variable "unused" was declared but never referenced
  extern "C" __global__ void kern(float* out, int n) { int unused; out[threadIdx.x] = helper(out, n); }
                                                           ^

Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"

ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'smem' for 'sm_90a'
ptxas info    : Function properties for smem
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 16 registers, used 1 barriers, 4264 bytes smem
ptxas info    : Compile time = 2.103 ms
ptxas info    : Compiling entry function 'kern' for 'sm_90a'
ptxas info    : Function properties for kern
ptxas         .     160 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 0 barriers, 160 bytes cumulative stack size
ptxas info    : Compile time = 11.068 ms
ptxas info    : Function properties for _Z6helperPfi
ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
)";

TEST(PtxasReportTest, SpillingKernelOnSm80) {
  auto u = parse_ptxas_report(kLogSm80, "spill");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->registers, 32);
  EXPECT_EQ(u->stack_bytes, 360);
  EXPECT_EQ(u->spill_store_bytes, 584);
  EXPECT_EQ(u->spill_load_bytes, 668);
  EXPECT_EQ(u->shared_bytes, 0);
  EXPECT_EQ(u->const_bytes, 372);
}

TEST(PtxasReportTest, MangledKernelName) {
  auto u = parse_ptxas_report(kLogSm80, "_ZN2ns4tmplIfEEvPT_");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->registers, 8);
  EXPECT_EQ(u->stack_bytes, 0);
  EXPECT_EQ(u->spill_store_bytes, 0);
  EXPECT_EQ(u->const_bytes, 360);
}

TEST(PtxasReportTest, StaticSharedOnSm90aWithoutCmem) {
  auto u = parse_ptxas_report(kLogSm90a, "smem");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->registers, 16);
  EXPECT_EQ(u->shared_bytes, 4264);
  EXPECT_EQ(u->stack_bytes, 0);
  EXPECT_EQ(u->const_bytes, -1) << "sm_90 reports no cmem; unknown stays -1";
}

TEST(PtxasReportTest, CalleeFrameIsNotTheKernels) {
  auto u = parse_ptxas_report(kLogSm90a, "kern");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->registers, 40);
  EXPECT_EQ(u->stack_bytes, 160);
  EXPECT_EQ(u->spill_store_bytes, 0);
  EXPECT_EQ(u->spill_load_bytes, 0);
}

TEST(PtxasReportTest, UnknownOrPrefixNamesAreNotFound) {
  EXPECT_FALSE(parse_ptxas_report(kLogSm90a, "sme").has_value());
  EXPECT_FALSE(parse_ptxas_report(kLogSm90a, "_Z6helperPfi").has_value()) << "not an entry";
  EXPECT_FALSE(parse_ptxas_report("", "smem").has_value());
  EXPECT_FALSE(parse_ptxas_report("error: something\n", "smem").has_value());
}

// ptxas's note that it serialized a kernel's wgmmas (CUDA 13.0, sm_90a: an attn_dq whose slot
// release polled an mbarrier under `threadIdx.x == 0` past a dot left running) comes before the
// kernel's report and names it; another kernel's note is not this one's.
const char* kLogSerialized =
    R"(ptxas info    : (C7518) Potential Performance Loss: wgmma.mma_async instructions are serialized due to program dependence on compiler-inserted WG.DP in divergent path in the function 'attn_dq'
ptxas info    : (C7518) Potential Performance Loss: wgmma.mma_async instructions are serialized due to program dependence on compiler-inserted WG.DP in divergent path in the function 'attn_dq_sparse'
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'attn_dq' for 'sm_90a'
ptxas info    : Function properties for attn_dq
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 222 registers, used 1 barriers
ptxas info    : Compiling entry function 'attn_dq_sparse' for 'sm_90a'
ptxas info    : Function properties for attn_dq_sparse
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 230 registers, used 1 barriers
)";

TEST(PtxasReportTest, PerformanceLossNotesNameTheirKernel) {
  auto u = parse_ptxas_report(kLogSerialized, "attn_dq");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->registers, 222);
  ASSERT_EQ(u->performance_notes.size(), 1u);
  EXPECT_EQ(u->performance_notes[0],
            "wgmma.mma_async instructions are serialized due to program dependence on "
            "compiler-inserted WG.DP in divergent path in the function 'attn_dq'");
  EXPECT_EQ(parse_ptxas_report(kLogSerialized, "attn_dq_sparse")->performance_notes.size(), 1u);
  EXPECT_TRUE(parse_ptxas_report(kLogSm90a, "smem")->performance_notes.empty());
}

TEST(CubinResourcesTest, RejectsWhatIsNotACubin) {
  EXPECT_FALSE(read_cubin_resources("", "k").has_value());
  EXPECT_FALSE(read_cubin_resources("not an ELF file at all", "k").has_value());
  std::string fake_elf = "\177ELF";
  fake_elf.resize(64, '\0');
  EXPECT_FALSE(read_cubin_resources(fake_elf, "k").has_value());
}

NvrtcOutput compile_resource_kernels(const std::string& arch) {
  NvrtcRequest r;
  r.source = test_kernels::kResourceKernels;
  r.program_name = "resources.cu";
  r.arch = arch;
  r.want_ptx = false;
  return Nvrtc::get().compile(r);
}

TEST(CubinResourcesTest, SurvivesTruncationAndCorruption) {
  TJ_REQUIRE_NVRTC();
  NvrtcOutput out = compile_resource_kernels("sm_80");
  ASSERT_TRUE(out.ok) << out.log;
  // Every prefix and a sprinkling of flipped bytes: no crash, and never a wrong kernel.
  for (size_t len = 0; len < out.cubin.size(); len += 97)
    (void)read_cubin_resources(out.cubin.substr(0, len), "smem");
  std::string damaged = out.cubin;
  for (size_t i = 16; i < damaged.size(); i += 13)
    damaged[i] = static_cast<char>(damaged[i] ^ 0x5a);
  (void)read_cubin_resources(damaged, "smem");
  EXPECT_FALSE(read_cubin_resources(out.cubin, "no_such_kernel").has_value());
  EXPECT_FALSE(read_cubin_resources(out.cubin, "helper").has_value());
}

class ResourceAgreementTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ResourceAgreementTest, LogAndCubinAgree) {
  TJ_REQUIRE_NVRTC();
  const std::string arch = GetParam();
  NvrtcOutput out = compile_resource_kernels(arch);
  ASSERT_TRUE(out.ok) << out.log;
  for (const char* kernel : {"spill", "smem", "calls_helper", "dyn_smem"}) {
    SCOPED_TRACE(std::string(kernel) + " on " + arch);
    auto from_log = parse_ptxas_report(out.log, kernel);
    auto from_cubin = read_cubin_resources(out.cubin, kernel);
    ASSERT_TRUE(from_log.has_value()) << out.log;
    ASSERT_TRUE(from_cubin.has_value());
    EXPECT_GT(from_log->registers, 0);
    EXPECT_EQ(from_log->registers, from_cubin->registers);
    EXPECT_EQ(from_log->shared_bytes, from_cubin->shared_bytes);
    EXPECT_EQ(from_log->stack_bytes, from_cubin->stack_bytes);
    if (from_log->const_bytes >= 0) {
      EXPECT_EQ(from_log->const_bytes, from_cubin->const_bytes);
    }
    EXPECT_GT(from_cubin->const_bytes, 0) << "parameters live in constant bank 0";
    EXPECT_EQ(from_cubin->spill_store_bytes, -1) << "a cubin does not record spills";
  }
  auto spill = parse_ptxas_report(out.log, "spill");
  EXPECT_LE(spill->registers, 32) << "__launch_bounds__(1024, 2) caps registers at 32";
  EXPECT_GT(spill->spill_store_bytes, 0);
  EXPECT_GT(spill->spill_load_bytes, 0);
  EXPECT_GT(spill->stack_bytes, 0);
  // 33*32 floats + 5 doubles = 4264 bytes, plus whatever alignment padding ptxas adds.
  int smem = read_cubin_resources(out.cubin, "smem")->shared_bytes;
  EXPECT_GE(smem, 33 * 32 * 4 + 5 * 8);
  EXPECT_LT(smem, 33 * 32 * 4 + 5 * 8 + 64);
  // Dynamic shared memory is sized at launch, so the static size is 0 even on sm_90a where
  // the cubin's section also spans the driver's reserved 1 KiB.
  EXPECT_EQ(read_cubin_resources(out.cubin, "dyn_smem")->shared_bytes, 0);
  EXPECT_EQ(read_cubin_resources(out.cubin, "spill")->shared_bytes, 0);
}

INSTANTIATE_TEST_SUITE_P(Archs, ResourceAgreementTest, ::testing::Values("sm_80", "sm_90a"),
                         [](const auto& info) { return info.param; });

} // namespace
} // namespace tilejit
