// Every kernel of kernels_src/ compiled by NVRTC for sm_80 and sm_90a, in several
// configurations, with and without 16-byte-aligned tensors, and its resource report read back
// (registers, no spills). Runs on CI: NVRTC needs no GPU.
#include "compiler/kernel_library.h"
#include "compiler/specialise.h"
#include "nvrtc_test_support.h"
#include "runtime/jit_compiler.h"

#include <gtest/gtest.h>

namespace tilejit {
namespace {

struct Variant {
  std::string file;
  Bindings config;
  bool hopper_only = false; ///< a tile only wgmma runs without spills: sm_90a alone
};

std::vector<Variant> variants() {
  return {
      {"examples/gemm.tile", {{"T", "f16"}}},
      {"examples/gemm.tile",
       {{"T", "bf16"}, {"BM", "128"}, {"BN", "128"}, {"WARPS", "8"}, {"STAGES", "3"}}},
      {"examples/gemm.tile",
       {{"T", "f16"}, {"BM", "16"}, {"BN", "16"}, {"BK", "16"}, {"WARPS", "1"}, {"STAGES", "1"}}},
      {"examples/softmax.tile", {{"T", "f32"}}},
      {"examples/softmax.tile", {{"T", "bf16"}, {"BR", "8"}, {"BC", "512"}, {"WARPS", "8"}}},
      {"examples/cumsum.tile", {{"T", "f16"}}},
      {"examples/bucket_scan.tile", {}},
      {"workloads/paged_sparse.tile", {{"T", "f16"}, {"D", "128"}, {"G", "4"}, {"PS", "16"}}},
      {"workloads/paged_sparse.tile",
       {{"T", "bf16"},
        {"D", "256"},
        {"G", "4"},
        {"PS", "64"},
        {"CHUNK", "512"},
        {"BN", "64"},
        {"STAGES", "2"},
        {"WARPS", "8"}}},
      {"workloads/paged_sparse.tile",
       {{"T", "f16"},
        {"D", "64"},
        {"G", "8"},
        {"PS", "16"},
        {"CHUNK", "64"},
        {"BN", "16"},
        {"STAGES", "1"},
        {"WARPS", "2"},
        {"PF", "2"}}},
      {"workloads/dequant_gemm.tile#w4a16_gemv", {{"T", "f16"}}},
      {"workloads/dequant_gemm.tile#w4a16_gemv",
       {{"T", "bf16"}, {"BN", "256"}, {"BK", "32"}, {"WARPS", "8"}}},
      {"workloads/dequant_gemm.tile#w4_repack", {}},
      {"workloads/dequant_gemm.tile#w4a16_tc", {{"T", "f16"}, {"G", "128"}, {"ACT", "0"}}},
      {"workloads/dequant_gemm.tile#w4a16_tc",
       {{"T", "bf16"},
        {"G", "64"},
        {"ACT", "1"},
        {"BN", "128"},
        {"BM", "16"},
        {"BK", "64"},
        {"STAGES", "3"},
        {"WARPS", "8"}}},
      {"workloads/dequant_gemm.tile#w4a16_tc",
       {{"T", "f16"},
        {"G", "32"},
        {"ACT", "0"},
        {"BN", "32"},
        {"BM", "64"},
        {"BK", "32"},
        {"STAGES", "4"},
        {"WARPS", "2"}}},
      // WG = 1: on sm_90a the dot runs on wgmma (one warpgroup at decode's N = 8; two at
      // 128 x 128, the largest tile); on sm_80 the same variants run on mma.sync.
      {"workloads/dequant_gemm.tile#w4a16_tc",
       {{"T", "f16"}, {"G", "128"}, {"ACT", "0"}, {"WG", "1"}}},
      {"workloads/dequant_gemm.tile#w4a16_tc",
       {{"T", "bf16"},
        {"G", "128"},
        {"ACT", "0"},
        {"WG", "1"},
        {"BN", "128"},
        {"BM", "128"},
        {"STEPS", "20"},
        {"STAGES", "3"},
        {"WARPS", "8"}},
       true},
      // SA = 1: scaled unpacked weights, accumulated in place (wgmma's 128 x 128 tile; mma.sync.
      // 128 x 256 needs no spills with aligned tensors but some without: GPU-tested)
      {"workloads/dequant_gemm.tile#w4a16_tc",
       {{"T", "f16"},
        {"G", "128"},
        {"ACT", "0"},
        {"WG", "1"},
        {"SA", "1"},
        {"BN", "128"},
        {"BM", "128"},
        {"STEPS", "20"},
        {"STAGES", "2"},
        {"WARPS", "8"}},
       true},
      // 4 stages: the wgmmas left running across iterations, x by TMA (aligned); two blocks
      // per multiprocessor (OCC = 2: 128 registers; BM 64 spills 188 bytes with 64-bit
      // indices and unaligned tensors, BM 32 none)
      {"workloads/dequant_gemm.tile#w4a16_tc",
       {{"T", "bf16"},
        {"G", "128"},
        {"ACT", "0"},
        {"WG", "1"},
        {"SA", "1"},
        {"BN", "128"},
        {"BM", "256"},
        {"BK", "64"},
        {"STEPS", "40"},
        {"STAGES", "4"},
        {"WARPS", "8"}},
       true},
      {"workloads/dequant_gemm.tile#w4a16_tc",
       {{"T", "f16"},
        {"G", "128"},
        {"ACT", "0"},
        {"WG", "1"},
        {"SA", "1"},
        {"BN", "128"},
        {"BM", "32"},
        {"STEPS", "10"},
        {"STAGES", "3"},
        {"WARPS", "8"},
        {"OCC", "2"}},
       true},
      {"workloads/dequant_gemm.tile#w4a16_tc",
       {{"T", "bf16"}, {"G", "64"}, {"ACT", "0"}, {"SA", "1"}, {"BK", "64"}, {"BM", "32"}}},
      {"workloads/dequant_gemm.tile#w8a16_mma", {{"T", "f16"}}},
      {"workloads/dequant_gemm.tile#permute_cols", {{"T", "f16"}}},
      {"workloads/dequant_gemm.tile#permute_cols",
       {{"T", "bf16"}, {"BM", "16"}, {"BK", "1024"}, {"WARPS", "8"}}},
      {"workloads/hbv.tile#hbv_forward", {}},
      {"workloads/hbv.tile#hbv_forward", {{"BB", "256"}, {"WARPS", "8"}}},
      // (At the largest tiles, 128 weights per thread, the unaligned path's element-wise loads
      // need about 255 registers on sm_90a and ptxas spills some; aligned tensors do not.)
      {"workloads/dequant_gemm.tile#w8a16_mma",
       {{"T", "bf16"}, {"BN", "128"}, {"BK", "64"}, {"WARPS", "4"}, {"STEPS", "1"}}},
      // attention with both products on wgmma (sm_90a), and the transposed backward (four).
      {"workloads/attention.tile#attn_fwd",
       {{"T", "bf16"}, {"D", "128"}, {"CAUSAL", "1"}, {"EXACT", "0"}, {"WG", "1"}}},
      {"workloads/attention.tile#attn_bwd",
       {{"T", "f16"},
        {"D", "64"},
        {"CAUSAL", "0"},
        {"EXACT", "0"},
        {"TR", "1"},
        {"WG", "1"},
        {"BN", "64"},
        {"BM", "64"},
        {"WARPS", "4"}}},
      // (At D = 128, BN = 128 and 8 warps the transposed form spills on sm_80 and unaligned,
      // 64-288 bytes; aligned on sm_90a it does not.)
      {"workloads/attention.tile#attn_bwd_sparse",
       {{"T", "bf16"},
        {"D", "64"},
        {"CAUSAL", "1"},
        {"EXACT", "0"},
        {"TR", "1"},
        {"BN", "64"},
        {"BM", "64"},
        {"WARPS", "4"}}},
      // Block-sparse dq in its own kernel (the dq_kernel plan). (Its wide tile, BM = BN = 128 on
      // 8 warps, needs Hopper's shared memory and spills 128 bytes with unaligned tensors;
      // GpuAttention.SparseBackward runs it.)
      {"workloads/attention.tile#attn_dq_sparse",
       {{"T", "bf16"},
        {"D", "128"},
        {"CAUSAL", "1"},
        {"EXACT", "0"},
        {"BM", "64"},
        {"BN", "64"},
        {"WARPS", "4"}}},
      // Ring attention's merge of a partial result (16-bit output, and f32 at an odd width).
      {"workloads/attention.tile#attn_merge", {{"T", "bf16"}, {"D", "128"}}},
      {"workloads/attention.tile#attn_merge",
       {{"T", "f32"}, {"D", "48"}, {"BM", "16"}, {"WARPS", "1"}}},
      {"workloads/attention.tile#attn_add", {{"T", "f16"}, {"D", "64"}}},
      // gated_delta's linear attention, causal and anti-causal (the backward's form).
      {"workloads/gated_delta.tile#linear_attn", {{"T", "bf16"}, {"DK", "128"}}},
      {"workloads/gated_delta.tile#linear_attn",
       {{"T", "f16"}, {"DK", "64"}, {"REV", "1"}, {"C", "32"}, {"BV", "32"}, {"WARPS", "2"}}},
      {"workloads/gated_delta.tile#gated_delta_recurrent", {{"T", "bf16"}, {"DK", "128"}}},
      // The gated delta rule in chunks (solve_tril in the first), the long shapes' and the
      // small shapes' head dims.
      {"workloads/gated_delta.tile#gated_delta_prepare", {{"T", "bf16"}, {"DK", "128"}}},
      {"workloads/gated_delta.tile#gated_delta_prepare",
       {{"T", "f16"}, {"DK", "32"}, {"C", "32"}, {"NORM", "0"}, {"BV", "32"}, {"WARPS", "2"}}},
      // (Its default, BV = 64 with 8 warps, spills 72 bytes on sm_80 with unaligned tensors;
      // aligned, and on sm_90a, it does not.)
      {"workloads/gated_delta.tile#gated_delta_chunk",
       {{"T", "bf16"}, {"DK", "128"}, {"BV", "32"}, {"WARPS", "8"}}},
      {"workloads/gated_delta.tile#gated_delta_chunk",
       {{"T", "f16"},
        {"DK", "32"},
        {"C", "32"},
        {"H0", "1"},
        {"SAVE", "1"},
        {"BV", "32"},
        {"WARPS", "4"}}},
      // The rule's backward, step 1 (the state gradients, chunk by chunk from the last).
      {"workloads/gated_delta.tile#gated_delta_bwd_state",
       {{"T", "bf16"}, {"DK", "128"}, {"DHT", "1"}, {"BV", "32"}, {"WARPS", "8"}}},
      {"workloads/gated_delta.tile#gated_delta_bwd_state",
       {{"T", "f16"}, {"DK", "32"}, {"C", "16"}, {"NORM", "0"}, {"BV", "64"}, {"WARPS", "4"}}},
      // Step 2 at C = 32 (at C = 64 it spills: see the kernel).
      {"workloads/gated_delta.tile#gated_delta_bwd_chunk",
       {{"T", "bf16"}, {"DK", "128"}, {"C", "32"}, {"BV", "32"}, {"WARPS", "8"}}},
      {"workloads/gated_delta.tile#gated_delta_bwd_chunk",
       {{"T", "f16"}, {"DK", "32"}, {"C", "32"}, {"NORM", "0"}, {"BV", "16"}, {"WARPS", "8"}}},
      {"workloads/gated_delta.tile#gated_delta_recurrent",
       {{"T", "f16"}, {"DK", "48"}, {"NORM", "0"}, {"H0", "1"}, {"BV", "128"}, {"WARPS", "8"}}},
  };
}

TEST(NvrtcKernels, EveryKernelCompilesForSm80AndSm90a) {
  TJ_REQUIRE_NVRTC();
  for (const Variant& v : variants()) {
    // "file#kernel" picks one kernel of a file that holds several.
    const size_t hash = v.file.find('#');
    LoadedModule m = load_embedded_tile(v.file.substr(0, hash));
    const dsl::Kernel& k =
        m.kernel(hash == std::string::npos ? std::string() : v.file.substr(hash + 1));
    for (const char* arch : {"sm_80", "sm_90a"})
      for (bool aligned : {true, false}) {
        if (v.hopper_only && std::string(arch) != "sm_90a") continue;
        SCOPED_TRACE(v.file + " " + arch + (aligned ? " aligned" : " unaligned"));
        JitRequest r;
        r.kernel = &k;
        r.source_hash = m.source_hash;
        r.bindings = complete_bindings(k, v.config);
        r.options.arch = arch;
        r.options.smem_limit = std::string(arch) == "sm_80" ? 163 * 1024 : 227 * 1024;
        // Scratch tensors are the runtime's own allocations, aligned whatever the caller's
        // tensors are (Runtime marks them so): only the caller's tensors are left unaligned.
        for (const auto& p : k.params) {
          if (aligned || p.is_scratch) r.options.vector_aligned.insert(p.name);
          // As the runtime says of aligned, well-formed arguments on a driver with tensor maps.
          if (aligned && !p.is_scratch) r.options.tma_params.insert(p.name);
        }
        CompiledVariant c = jit_compile(r);
        EXPECT_FALSE(c.binary.empty());
        EXPECT_GT(c.resources.registers, 0) << "no resource report";
        EXPECT_LE(c.resources.registers, 255);
        // The 16-byte paths must not spill; the element-wise fallback for unaligned tensors
        // may spill a little (large unrolled copies), but never much.
        int allowed = aligned ? 0 : 64;
        EXPECT_LE(c.resources.spill_store_bytes, allowed) << c.compile_log;
        EXPECT_LE(c.resources.stack_bytes, allowed) << "local memory in use:\n" << c.compile_log;
        EXPECT_NE(c.source.find("#line"), std::string::npos);
        // WG = 1 is a request: Hopper's sm_90a takes it, other archs keep mma.sync.
        const auto wg = r.bindings.find("WG");
        if (wg != r.bindings.end() && wg->second == "1") {
          const bool on_wgmma = c.source.find("tj::dot_q4_wgmma<") != std::string::npos ||
                                c.source.find("tj::dot_wgmma_") != std::string::npos;
          EXPECT_EQ(on_wgmma, std::string(arch) == "sm_90a");
        }
        // The x tile of a wgmma dot comes by TMA where the argument allows it (aligned).
        const bool tma = c.source.find("tj::tma_load_2d_sw128<") != std::string::npos;
        EXPECT_EQ(tma, c.tma_maps.size() > 0);
        if (tma) {
          EXPECT_TRUE(aligned && std::string(arch) == "sm_90a");
        }
      }
  }
}

} // namespace
} // namespace tilejit
