// The kernels of tests/data/semantics.tile (outer-product and zipped gathers, broadcast
// dimensions, [N, 1] register tiles, out-of-range subscripts) compiled by NVRTC for sm_80 and
// sm_90a in several configurations, aligned and not, with and without the debug mode's bounds
// checks. Runs on CI: NVRTC needs no GPU.
#include "compiler/cuda/cuda_emitter.h"
#include "compiler/kernel_library.h"
#include "compiler/specialise.h"
#include "nvrtc_test_support.h"
#include "runtime/jit_compiler.h"

#include <gtest/gtest.h>

namespace tilejit {
namespace {

struct Variant {
  std::string kernel;
  Bindings config;
};

std::vector<Variant> variants() {
  return {
      {"outer_gather", {}},
      {"outer_gather", {{"BK", "32"}, {"BN", "8"}, {"WARPS", "1"}}},
      {"outer_gather", {{"BK", "16"}, {"BN", "64"}}},
      {"outer_gather_shared", {}},
      {"outer_gather_shared", {{"BK", "64"}, {"BN", "16"}}},
      {"zip_gather", {}},
      {"zip_gather", {{"BR", "32"}, {"BD", "64"}}},
      {"broadcast_dims", {}},
      {"broadcast_dims", {{"BS", "32"}}},
      {"unit_axis", {}},
      {"unit_axis", {{"BR", "1"}, {"BC", "128"}, {"WARPS", "1"}}},
      {"unit_axis", {{"BR", "2"}, {"BC", "128"}, {"WARPS", "4"}}},
      {"unit_axis_sums", {}},
      {"unit_axis_sums", {{"BR", "1"}, {"BC", "32"}}},
      {"unit_dot", {}},
      {"unit_dot", {{"BM", "64"}, {"BC", "64"}}},
      {"point_index", {}},
      {"unit_corner", {}},
      {"unit_corner", {{"BR", "1"}}},
  };
}

TEST(NvrtcSemantics, EveryKernelCompilesWithAndWithoutBoundsChecks) {
  TJ_REQUIRE_NVRTC();
  LoadedModule m = load_tile_file(TILEJIT_SOURCE_DIR "/tests/data/semantics.tile");
  for (const Variant& v : variants()) {
    const dsl::Kernel& k = m.kernel(v.kernel);
    for (const char* arch : {"sm_80", "sm_90a"})
      for (bool aligned : {true, false})
        for (bool debug : {false, true}) {
          SCOPED_TRACE(
              str(v.kernel, " ", arch, aligned ? " aligned" : " unaligned", debug ? " debug" : ""));
          JitRequest r;
          r.kernel = &k;
          r.source_hash = m.source_hash;
          r.bindings = complete_bindings(k, v.config);
          r.options.arch = arch;
          r.options.smem_limit = std::string(arch) == "sm_80" ? 163 * 1024 : 227 * 1024;
          r.options.debug_bounds = debug;
          if (aligned)
            for (const auto& p : k.params) r.options.vector_aligned.insert(p.name);
          CompiledVariant c = jit_compile(r);
          EXPECT_FALSE(c.binary.empty());
          EXPECT_GT(c.resources.registers, 0) << "no resource report";
          EXPECT_EQ(c.debug_bounds, debug);
          bool has_points = v.kernel != "unit_axis" && v.kernel != "unit_dot" &&
                            v.kernel != "unit_corner" && v.kernel != "unit_axis_sums";
          // Every checked subscript is a site the runtime can name; none without the mode.
          EXPECT_EQ(!c.bounds_sites.empty(), debug && has_points);
          EXPECT_EQ(c.source.find("tj::check_index") != std::string::npos, debug && has_points);
          for (const auto& s : c.bounds_sites) {
            EXPECT_TRUE(s.loc.known());
            EXPECT_FALSE(s.tensor.empty());
          }
        }
  }
}

// The shipped kernels compile with the debug mode's checks too (what TILEJIT_DEBUG=1 runs).
TEST(NvrtcSemantics, ShippedKernelsCompileInTheDebugMode) {
  TJ_REQUIRE_NVRTC();
  for (auto [file, config] : std::vector<std::pair<std::string, Bindings>>{
           {"examples/gemm.tile", {{"T", "f16"}}},
           {"examples/softmax.tile", {{"T", "bf16"}}},
           {"examples/cumsum.tile", {{"T", "f32"}}},
           {"examples/bucket_scan.tile", {}},
           {"workloads/paged_sparse.tile", {{"T", "f16"}, {"D", "128"}, {"G", "4"}, {"PS", "16"}}},
       }) {
    SCOPED_TRACE(file);
    LoadedModule m = load_embedded_tile(file);
    JitRequest r;
    r.kernel = &m.kernel();
    r.source_hash = m.source_hash;
    r.bindings = complete_bindings(m.kernel(), config);
    r.options.arch = "sm_90a";
    r.options.debug_bounds = true;
    for (const auto& p : m.kernel().params) r.options.vector_aligned.insert(p.name);
    CompiledVariant c = jit_compile(r);
    EXPECT_FALSE(c.binary.empty());
    EXPECT_TRUE(c.debug_bounds);
  }
}

// The debug mode only adds: without it, the generated source is what it was (no include, no
// extra parameter), so kernels that never asked for it do not change.
TEST(NvrtcSemantics, TheDebugModeOnlyAddsChecks) {
  LoadedModule m = load_embedded_tile("workloads/paged_sparse.tile");
  const dsl::Kernel& k = m.kernel();
  Bindings b = complete_bindings(k, {{"T", "f16"}, {"D", "128"}, {"G", "4"}, {"PS", "16"}});
  CompileOptions plain, debug;
  debug.debug_bounds = true;
  std::string a = cuda::generate_cuda(*lower_to_ir(k, b, plain)).source;
  cuda::GeneratedKernel g = cuda::generate_cuda(*lower_to_ir(k, b, debug));
  EXPECT_EQ(a.find("tj/debug.cuh"), std::string::npos);
  EXPECT_EQ(a.find("tj_bounds"), std::string::npos);
  EXPECT_NE(g.source.find("#include \"tj/debug.cuh\""), std::string::npos);
  EXPECT_NE(g.source.find("tj::BoundsRecord* tj_bounds) {"), std::string::npos);
  // paged_sparse's subscripts: kept_len[b, h], seq_lens[b], the gathers of block_table and of
  // the K/V rows, the scratch partials, the arrival counter... The merge loop's loads for
  // chunks past the last (unroll = 8 runs them ahead) are not checked.
  EXPECT_GT(g.bounds_sites.size(), 10u);
  for (const auto& s : g.bounds_sites) {
    EXPECT_FALSE(s.tensor.empty());
    EXPECT_TRUE(s.loc.known());
  }
}

} // namespace
} // namespace tilejit
