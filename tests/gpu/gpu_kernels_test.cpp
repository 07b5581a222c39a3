// Every kernel of issue 2 on the GPU (label `gpu`): the example kernels and paged_sparse, on
// fresh random inputs at odd sizes and several configurations, every output element checked
// against a float64 C++ reference with the outputs poisoned first.
#include "attention_checks.h"
#include "compare_runs.h"
#include "dequant_checks.h"
#include "example_checks.h"
#include "gpu_runner.h"
#include "hbv_checks.h"
#include "linear_attn_checks.h"
#include "paged_sparse_checks.h"
#include "pipeline_checks.h"
#include "runtime/nccl.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tilejit::test {
namespace {

GpuRunner& gpu() {
  static GpuRunner runner;
  return runner;
}

TEST(GpuExamples, Gemm) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (DType t : {DType::F16, DType::BF16})
    for (const auto& cfg : gemm_configs()) {
      check_gemm(run, t, 37, 45, 64, cfg);
      check_gemm(run, t, 64, 64, 96, cfg);
      check_gemm(run, t, 17, 33, 40, cfg);    // K not a multiple of 8: element-wise copies
      check_gemm(run, t, 200, 136, 256, cfg); // several tiles in each direction
    }
}

// f32 GEMM on the TF32 tensor cores (error <= 2e-3 and above fp32's) and 3xTF32 (<= 1e-5):
// odd sizes, K not a multiple of BK or of 8, tiles that pad M and N.
TEST(GpuExamples, GemmF32Tf32AndExact) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (bool exact : {false, true})
    for (const auto& cfg : gemm_f32_configs()) {
      check_gemm_f32(run, exact, 37, 45, 64, cfg);
      check_gemm_f32(run, exact, 17, 33, 41, cfg);
      check_gemm_f32(run, exact, 200, 136, 512, cfg);
      check_gemm_f32(run, exact, 5, 7, 3, cfg);
    }
}

// attention's forward: GQA, causal and not, N not a multiple of the blocks, head dims 40, 64,
// 128, 256, bf16/f16 and f32 (TF32 and exact), several block shapes.
// Ring attention (issue 20) with its ranks simulated one after another on this GPU: attn_fwd
// per block and attn_merge, then attn_bwd per block and attn_add, against the float64 attention
// of the whole sequence (no NCCL here: the chunks a rank would receive are taken whole).
TEST(GpuAttention, RingOverSimulatedRanks) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  check_ring_attention(run, DType::BF16, 1, 4, 2, 512, 128, 2, true, true, {});
  check_ring_attention(run, DType::F16, 2, 2, 1, 333, 64, 3, true, true, {});
  check_ring_attention(run, DType::BF16, 1, 2, 2, 200, 72, 4, false, false, {});
}

TEST(GpuAttention, Forward) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  const std::vector<Bindings> configs = {
      {},
      {{"BM", "128"}, {"BN", "64"}, {"STAGES", "2"}, {"WARPS", "8"}},
      {{"BM", "64"}, {"BN", "32"}, {"STAGES", "3"}, {"WARPS", "4"}},
      {{"BM", "16"}, {"BN", "16"}, {"STAGES", "1"}, {"WARPS", "1"}},
      // mma.sync where wgmma would fit (WG = 0); the configurations above run both products
      // on the warpgroup tensor cores on Hopper where D is a multiple of 64 (BN 32 too).
      {{"BM", "128"}, {"BN", "64"}, {"STAGES", "2"}, {"WARPS", "8"}, {"WG", "0"}}};
  for (const auto& cfg : configs)
    for (bool causal : {false, true}) {
      check_attention_fwd(run, DType::BF16, 2, 8, 2, 1000, 128, causal, false, cfg);
      check_attention_fwd(run, DType::F16, 1, 6, 3, 333, 64, causal, false, cfg);
      check_attention_fwd(run, DType::F16, 1, 2, 1, 129, 40, causal, false, cfg);
      check_attention_fwd(run, DType::F32, 1, 4, 4, 257, 64, causal, false, cfg);
      check_attention_fwd(run, DType::F32, 1, 4, 2, 200, 64, causal, true, cfg);
    }
  check_attention_fwd(run, DType::BF16, 1, 2, 1, 300, 256, true, false,
                      {{"BM", "64"}, {"BN", "32"}, {"STAGES", "2"}, {"WARPS", "8"}});
}

// Block-sparse forward: masks per head or broadcast, GQA, causal, N not a multiple of the
// block, BN below the block, empty rows (o = 0, lse = -inf exactly), 16-bit and f32.
TEST(GpuAttention, SparseForward) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  const std::vector<Bindings> configs = {
      {},
      {{"BM", "128"}, {"BN", "32"}, {"STAGES", "2"}, {"WARPS", "4"}},
      {{"BM", "32"}, {"BN", "64"}, {"STAGES", "3"}, {"WARPS", "2"}}};
  for (const auto& cfg : configs)
    for (bool causal : {false, true}) {
      check_attention_sparse_fwd(run, DType::BF16, 2, 8, 2, 1000, 128, 128, 1, 8, 0.3, causal, cfg);
      check_attention_sparse_fwd(run, DType::F16, 2, 4, 4, 777, 64, 128, 2, 1, 0.5, causal, cfg);
    }
  check_attention_sparse_fwd(run, DType::F16, 1, 2, 1, 700, 64, 64, 1, 1, 0.5, true, {});
  check_attention_sparse_fwd(run, DType::F32, 1, 4, 2, 300, 64, 64, 1, 4, 0.5, true,
                             {{"BM", "64"}, {"BN", "32"}, {"STAGES", "2"}, {"WARPS", "4"}});
}

// Block-sparse backward: per-head masks under GQA, broadcast masks, causal, odd N, BM and BN
// below the block, empty rows (dq exactly 0), 16-bit and f32.
// The C++ ring op on a group of one rank (NCCL, no transfers): the op's own buffers, streams
// and events around the kernels the simulated-ranks test checks. Skipped without NCCL.
TEST(GpuAttention, RingOpOfOneRank) {
  REQUIRE_GPU();
  if (!Nccl::available()) GTEST_SKIP() << "no NCCL: set TILEJIT_NCCL_LIBRARY to libnccl.so.2";
  Runtime& rt = gpu().runtime();
  for (bool causal : {false, true}) {
    check_ring_op_of_one(rt, DType::BF16, 2, 4, 2, 67, 64, causal);
    check_ring_op_of_one(rt, DType::F16, 1, 3, 3, 40, 72, causal);
  }
}

TEST(GpuAttention, SparseBackward) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  const std::vector<Bindings> configs = {
      {},
      {{"BN", "128"}, {"BM", "32"}, {"STAGES", "2"}, {"WARPS", "8"}},
      {{"BN", "32"}, {"BM", "64"}, {"STAGES", "3"}, {"WARPS", "2"}},
      // The transposed form (TR = 1; wgmma on Hopper at D = 128 and 64 with 8 and 4 warps).
      {{"BN", "128"}, {"BM", "64"}, {"STAGES", "2"}, {"WARPS", "8"}, {"TR", "1"}},
      {{"BN", "64"}, {"BM", "32"}, {"STAGES", "3"}, {"WARPS", "4"}, {"TR", "1"}}};
  for (const auto& cfg : configs)
    for (bool causal : {false, true}) {
      check_attention_sparse_bwd(run, DType::BF16, 1, 8, 2, 600, 128, 128, 1, 8, 0.4, causal, cfg);
      check_attention_sparse_bwd(run, DType::F16, 2, 3, 3, 333, 64, 128, 2, 1, 0.5, causal, cfg);
    }
  // f32 (TF32), causal and not (not causal, query rows past N are read as zeros, not masked).
  for (bool causal : {true, false})
    check_attention_sparse_bwd(run, DType::F32, 1, 4, 2, 300, 64, 64, 1, 1, 0.5, causal,
                               {{"BN", "64"}, {"BM", "32"}, {"STAGES", "2"}, {"WARPS", "4"}});
  check_attention_sparse_bwd(
      run, DType::F16, 1, 4, 2, 300, 64, 64, 1, 4, 0.3, true,
      {{"BN", "64"}, {"BM", "64"}, {"STAGES", "2"}, {"WARPS", "4"}, {"TR", "1"}});
  // The dq_kernel plan: attn_bwd_sparse without atomics, dq by attn_dq_sparse (the tile is both
  // kernels'; on Hopper the wide one takes wgmma and TMA in both; BM = BN = 128 at D = 128
  // needs 272 KB in attn_bwd_sparse, over a block's 227 KB).
  for (const Bindings& cfg :
       {Bindings{}, Bindings{{"BN", "128"}, {"BM", "64"}, {"STAGES", "2"}, {"WARPS", "8"}},
        Bindings{{"BN", "64"}, {"BM", "64"}, {"STAGES", "2"}, {"WARPS", "4"}, {"TR", "1"}},
        // The ops' Hopper tile (producer warps, both score products issued at once): its
        // threads never read the index when not causal (rows past N are read as zeros).
        Bindings{{"BN", "128"},
                 {"BM", "64"},
                 {"STAGES", "2"},
                 {"WARPS", "8"},
                 {"TR", "1"},
                 {"ISSUE", "1"},
                 {"PRODUCER", "1"}}})
    for (bool causal : {false, true}) {
      check_attention_sparse_bwd(run, DType::BF16, 1, 8, 2, 600, 128, 128, 1, 8, 0.4, causal, cfg,
                                 /*dq_kernel=*/true);
      check_attention_sparse_bwd(run, DType::F16, 2, 3, 3, 333, 64, 128, 2, 1, 0.5, causal, cfg,
                                 /*dq_kernel=*/true);
    }
}

// attention's backward (pre-pass, dk/dv with dq atomics and dq conversion, or dq by attn_dq):
// GQA, causal and not,
// odd N and head dims, 16-bit and f32 (TF32 and exact), several block shapes.
TEST(GpuAttention, Backward) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  const std::vector<Bindings> configs = {
      {},
      {{"BN", "128"}, {"BM", "32"}, {"STAGES", "2"}, {"WARPS", "8"}},
      {{"BN", "32"}, {"BM", "64"}, {"STAGES", "3"}, {"WARPS", "2"}},
      {{"BN", "16"}, {"BM", "16"}, {"STAGES", "1"}, {"WARPS", "1"}},
      // The transposed form (TR = 1): on Hopper four of its five products on wgmma where D
      // is a multiple of 64 (8 and 4 warps), and with WG = 0 on mma.sync.
      {{"BN", "128"}, {"BM", "64"}, {"STAGES", "2"}, {"WARPS", "8"}, {"TR", "1"}},
      {{"BN", "64"}, {"BM", "32"}, {"STAGES", "3"}, {"WARPS", "4"}, {"TR", "1"}},
      {{"BN", "64"}, {"BM", "64"}, {"STAGES", "2"}, {"WARPS", "4"}, {"TR", "1"}, {"WG", "0"}}};
  // Both of the workload's plans: dq by atomics (attn_bwd_dq after), and by attn_dq.
  for (auto check : {check_attention_bwd, check_attention_bwd_dq_kernel})
    for (const auto& cfg : configs)
      for (bool causal : {false, true}) {
        check(run, DType::BF16, 1, 4, 2, 300, 128, causal, false, cfg);
        check(run, DType::F16, 2, 3, 3, 129, 40, causal, false, cfg);
        // TR = 1 stages seven [BN, D] tiles: at BN = 128 f32 needs 238 KiB of shared memory,
        // over the 227 KiB a block may use (the tuner prunes it; here it is not a test case).
        if (cfg.count("TR") && cfg.at("TR") == "1" && cfg.at("BN") == "128") continue;
        check(run, DType::F32, 1, 2, 1, 100, 64, causal, false, cfg);
        check(run, DType::F32, 1, 2, 2, 77, 32, causal, true, cfg);
      }
}

// gated_delta's linear attention: causal and anti-causal, odd T and head dims, Dk != Dv, VH
// split over programs, both 16-bit dtypes, several chunk sizes; the backward's three launches,
// and dk, dv from linear_attn_bwd_kv.
TEST(GpuLinearAttn, ForwardAndBackward) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  const std::vector<Bindings> configs = {
      {},
      {{"C", "32"}, {"BV", "32"}, {"STAGES", "3"}, {"WARPS", "2"}},
      {{"C", "64"}, {"BV", "128"}, {"STAGES", "2"}, {"WARPS", "8"}},
      {{"C", "128"}, {"BV", "64"}, {"STAGES", "1"}, {"WARPS", "8"}},
      {{"C", "16"}, {"BV", "16"}, {"STAGES", "1"}, {"WARPS", "1"}}};
  for (const auto& cfg : configs)
    for (bool rev : {false, true}) {
      check_linear_attn(run, DType::BF16, 2, 1000, 3, 128, 128, rev, cfg);
      check_linear_attn(run, DType::F16, 3, 257, 2, 40, 72, rev, cfg);
      check_linear_attn(run, DType::F16, 1, 1, 1, 8, 8, rev, cfg);
    }
  check_linear_attn_backward(run, DType::BF16, 2, 300, 2, 64, 64, {});
  check_linear_attn_backward(run, DType::F16, 1, 129, 3, 24, 40, configs[1]);
  // dk and dv in one reverse pass (linear_attn_bwd_kv), its configurations.
  for (const Bindings& kv : {Bindings{}, Bindings{{"C", "32"}, {"STAGES", "3"}, {"WARPS", "2"}},
                             Bindings{{"C", "64"}, {"STAGES", "1"}, {"WARPS", "8"}},
                             Bindings{{"C", "16"}, {"STAGES", "2"}, {"WARPS", "1"}}}) {
    check_linear_attn_backward(run, DType::BF16, 3, 1000, 4, 32, 32, {}, &kv);
    check_linear_attn_backward(run, DType::F16, 1, 129, 3, 24, 40, {}, &kv);
    check_linear_attn_backward(run, DType::BF16, 2, 77, 2, 128, 64, {}, &kv);
  }
}

// The gated delta rule's recurrent form: normalised or not, with h0 or not, odd sizes, several
// splits of VH, the long shapes' head dims.
TEST(GpuGatedDelta, RecurrentForward) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  const std::vector<Bindings> configs = {{},
                                         {{"BV", "16"}, {"WARPS", "1"}},
                                         {{"BV", "64"}, {"WARPS", "8"}},
                                         {{"BV", "128"}, {"WARPS", "4"}}};
  for (const auto& cfg : configs) {
    check_gated_delta_recurrent(run, DType::BF16, 2, 500, 3, 128, 128, true, true, cfg);
    check_gated_delta_recurrent(run, DType::F16, 3, 257, 2, 40, 72, true, false, cfg);
    check_gated_delta_recurrent(run, DType::F16, 1, 100, 2, 32, 32, false, true, cfg);
    check_gated_delta_recurrent(run, DType::BF16, 1, 1, 1, 8, 8, true, false, cfg);
  }
}

// The gated delta rule in chunks (gated_delta_prepare, then gated_delta_chunk): normalised or
// not, h0 or not, T not a multiple of the chunk, one step, odd head dims, chunks of 16, 32, 64,
// several splits of VH, the long shapes' head dims.
TEST(GpuGatedDelta, ChunkedForward) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  const std::vector<std::pair<Bindings, Bindings>> configs = {
      {{}, {}},
      {{{"BV", "32"}, {"WARPS", "2"}}, {{"BV", "32"}, {"STAGES", "3"}, {"WARPS", "4"}}},
      {{{"BV", "128"}, {"WARPS", "8"}}, {{"BV", "128"}, {"STAGES", "1"}, {"WARPS", "8"}}},
      {{{"BV", "16"}, {"WARPS", "1"}}, {{"BV", "16"}, {"STAGES", "2"}, {"WARPS", "1"}}}};
  for (const auto& [prep, chunk] : configs)
    for (int64_t c : {64, 32, 16}) {
      check_gated_delta_chunked(run, DType::BF16, 2, 500, 3, 128, 128, true, true, c, prep, chunk);
      check_gated_delta_chunked(run, DType::F16, 3, 257, 2, 40, 72, true, false, c, prep, chunk);
      check_gated_delta_chunked(run, DType::F16, 1, 100, 2, 32, 32, false, true, c, prep, chunk);
      check_gated_delta_chunked(run, DType::BF16, 1, 1, 1, 8, 8, true, false, c, prep, chunk);
    }
}

// The rule's backward, step 1: the state gradients at every chunk's end and h0's against the
// float64 reverse of the recurrence; chunks of 64, 32 and 16, odd sizes, dht or not.
TEST(GpuGatedDelta, BackwardStateGradients) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (const Bindings& cfg : std::vector<Bindings>{
           {}, {{"BV", "32"}, {"STAGES", "3"}, {"WARPS", "4"}}, {{"BV", "128"}, {"STAGES", "1"}}})
    for (int64_t c : {64, 32, 16}) {
      check_gated_delta_bwd_state(run, DType::BF16, 2, 500, 3, 128, 128, true, true, c, cfg);
      check_gated_delta_bwd_state(run, DType::F16, 3, 257, 2, 40, 72, false, false, c, cfg);
      check_gated_delta_bwd_state(run, DType::BF16, 1, 1, 1, 8, 8, true, true, c, cfg);
    }
}

// The rule's whole backward (prepare, the forward saving states, step 1, step 2): every
// gradient against the float64 reverse of the recurrence; chunks of 32 and 16 (64: step 2
// spills, also checked), odd sizes, h0 and dht or not.
TEST(GpuGatedDelta, Backward) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (const Bindings& cfg :
       std::vector<Bindings>{{}, {{"BV", "16"}, {"WARPS", "4"}}, {{"BV", "64"}, {"WARPS", "8"}}})
    for (int64_t c : {32, 16, 64}) {
      check_gated_delta_backward(run, DType::BF16, 2, 500, 3, 128, 128, true, true, true, c, cfg);
      check_gated_delta_backward(run, DType::F16, 3, 257, 2, 40, 72, false, false, true, c, cfg);
      check_gated_delta_backward(run, DType::F16, 2, 1, 3, 8, 8, true, true, false, c, cfg);
    }
}

TEST(GpuExamples, Softmax) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (const auto& cfg : softmax_configs()) {
    check_softmax(run, DType::F32, 5, 300, cfg, 1e-5);
    check_softmax(run, DType::F32, 37, 1000, cfg, 1e-5);
    check_softmax(run, DType::F16, 5, 300, cfg, 1e-2);
    check_softmax(run, DType::BF16, 9, 129, cfg, 1e-2);
  }
}

TEST(GpuExamples, CumsumRows) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (const auto& cfg : cumsum_configs()) {
    check_cumsum(run, DType::F32, 7, 150, cfg, 1e-5);
    check_cumsum(run, DType::F16, 33, 257, cfg, 1e-2);
    check_cumsum(run, DType::BF16, 7, 150, cfg, 1e-2);
  }
}

TEST(GpuExamples, BucketScan) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (const char* bb : {"32", "64", "128", "256"}) {
    check_bucket_scan(run, 77, 33, {{"BB", bb}});
    check_bucket_scan(run, 1000, 365, {{"BB", bb}});
  }
}

// Pipelined loops as expand-pipelines writes them out: counting down, copies under `if` (a
// block-sparse stream), a copy the body does itself beside a pipelined one; odd sizes.
TEST(GpuPipelines, CountingDown) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (const char* stages : {"2", "3", "4"})
    for (const char* bc : {"32", "64"}) {
      check_reverse_blocks(run, 77, 100, {{"STAGES", stages}, {"BC", bc}});
      check_reverse_blocks(run, 1000, 129, {{"STAGES", stages}, {"BC", bc}});
      check_reverse_blocks(run, 5, 33, {{"STAGES", stages}, {"BC", bc}});
    }
}

TEST(GpuPipelines, CopiesUnderIf) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (const char* stages : {"2", "3"})
    for (double share : {0.0, 0.1, 0.5, 1.0}) {
      check_kept_blocks(run, 2000, 70, share, {{"STAGES", stages}});
      check_kept_blocks(run, 77, 64, share, {{"STAGES", stages}, {"BC", "32"}});
    }
}

TEST(GpuPipelines, ListedBlocks) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (const char* stages : {"2", "3"})
    for (const char* bc : {"32", "64"}) {
      check_listed_blocks(run, 2000, 70, 60, 60, {{"STAGES", stages}, {"BC", bc}});
      check_listed_blocks(run, 77, 129, 9, 12, {{"STAGES", stages}, {"BC", bc}});
      check_listed_blocks(run, 40, 33, 4, 0, {{"STAGES", stages}, {"BC", bc}});
      check_listed_blocks(run, 40, 33, 4, 1, {{"STAGES", stages}, {"BC", bc}});
    }
}

// A persistent kernel's tiles taken in turn (tests/data/pipelines.tile, tiles_in_turn): on
// Hopper the producer warps issue each tile's copies before the loop too (q's, released after
// the loop; x0's, released after the first products) while the threads finish the tile before.
// Repeated entries and tiles never named, loops with no iteration (N <= BN), one program and more
// programs than entries, the threads' copies (PRODUCER 0) beside.
TEST(GpuPipelines, TilesInTurn) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (const char* producer : {"1", "0"})
    for (const char* bn : {"64", "128"})
      for (const char* stages : {"2", "3"})
        for (const char* programs : {"1", "3", "7"}) {
          const Bindings config = {
              {"PRODUCER", producer}, {"BN", bn}, {"STAGES", stages}, {"PROGRAMS", programs}};
          check_tiles_in_turn(run, 1000, 9, 12, config);
          check_tiles_in_turn(run, 50, 5, 4, config);
        }
}

// A loop over (row block, column block) items whose row block repeats (tests/data/pipelines.tile,
// reused_rows): on Hopper, with producer warps, copy(..., reuse = 1) skips the copy into a
// slot that holds the block already. Runs, a block recurring two items back (what a 2-stage
// ring's slot holds, not the slot before), rows and columns past the tensors; the threads'
// copies (PRODUCER 0) beside.
TEST(GpuPipelines, ReusedRows) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (const char* producer : {"1", "0"})
    for (const char* stages : {"2", "3"}) {
      const Bindings config = {{"PRODUCER", producer}, {"STAGES", stages}};
      check_reused_rows(run, 300, 500, 40, config);
      check_reused_rows(run, 64, 70, 7, config);
      check_reused_rows(run, 100, 100, 1, config);
    }
}

TEST(GpuPipelines, ACopyTheBodyDoesItself) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (const char* stages : {"2", "3"}) {
    check_trailing_copy(run, 77, 100, {{"STAGES", stages}});
    check_trailing_copy(run, 1000, 200, {{"STAGES", stages}});
  }
}

// Runs of one row copied into rank-1 tiles by the TMA (tests/data/pipelines.tile, row_runs;
// tests/filecheck/tma_rows.tile), against the interpreter: the last box reaching past N (zeros
// arrive there), N not a multiple of 4 (rows not 16-byte aligned: cp.async instead), runs
// counting down, 2 and 3 stages.
TEST(GpuPipelines, RowRunsByTheTma) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  const std::string src = test_data_path("tests/data/pipelines.tile");
  using ref::HostBuffer;
  for (int64_t n : {256, 100, 77})
    for (const char* bm : {"32", "64"})
      for (const char* stages : {"2", "3"})
        for (const char* down : {"0", "1"})
          expect_matches_interpreter(run, src + "#row_runs",
                                     {{"BM", bm}, {"STAGES", stages}, {"DOWN", down}},
                                     {{HostBuffer(DType::BF16, {2, 3, 128, 64})},
                                      {HostBuffer(DType::BF16, {2, 3, n, 64})},
                                      {HostBuffer(DType::F32, {2, 3, n})},
                                      {HostBuffer(DType::F32, {2, 3, 128}), true}},
                                     1e-3);
}

// dot with register tiles read transposed (staged in shared memory): as A (dV = trans(P) @ dO)
// and as B (P @ trans(P)), against the interpreter; odd sizes, 1 to 4 warps.
TEST(GpuTransposedRegisterOperands, AsAAndB) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  const std::string src = test_data_path("tests/data/trans_operands.tile");
  for (const char* w : {"1", "2", "4"})
    for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{64, 32}, {50, 20}, {64, 7}}) {
      using ref::HostBuffer;
      expect_matches_interpreter(run, src + "#trans_a", {{"WARPS", w}},
                                 {{HostBuffer(DType::F16, {m, 64})},
                                  {HostBuffer(DType::F16, {n, 64})},
                                  {HostBuffer(DType::F16, {m, 64})},
                                  {HostBuffer(DType::F32, {n, 64}), true}},
                                 1e-2);
      expect_matches_interpreter(run, src + "#trans_b", {{"WARPS", w}},
                                 {{HostBuffer(DType::F16, {m, 64})},
                                  {HostBuffer(DType::F16, {n, 64})},
                                  {HostBuffer(DType::F32, {m, m}), true}},
                                 1e-2);
    }
}

// Accumulators written a pair of columns per store to shared tiles and added into an f32
// tensor by pairs (tests/data/accumulator_writes.tile) against the interpreter: sizes that cut
// tiles at odd edges (the pairs tested one by one, an edge pair element by element) beside
// whole tiles (no test per pair), programs adding into the same elements at once, mma.sync and
// (on Hopper) wgmma.
TEST(GpuAccumulatorWrites, MatchTheInterpreter) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  const std::string src = test_data_path("tests/data/accumulator_writes.tile");
  using ref::HostBuffer;
  for (auto [dt, t] :
       std::vector<std::pair<DType, const char*>>{{DType::F16, "f16"}, {DType::BF16, "bf16"}})
    for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{77, 101}, {128, 64}, {5, 130}})
      for (const char* warps : {"4", "8"})
        for (const char* rep : {"1", "3"})
          expect_matches_interpreter(run, src + "#pairs_and_adds",
                                     {{"T", t}, {"WARPS", warps}, {"REP", rep}},
                                     {{HostBuffer(dt, {m, 64})},
                                      {HostBuffer(dt, {64, n})},
                                      {HostBuffer(dt, {n, 64})},
                                      {HostBuffer(dt, {m, n}), true},
                                      {HostBuffer(DType::F32, {m, n}), true},
                                      {HostBuffer(DType::F32, {m, n}), true, true}},
                                     2e-2);
}

// atomic_add(..., bulk = 1) (tests/data/bulk_atomic.tile) against the interpreter, the outputs
// starting from random values: rows and runs cut short at odd edges, runs misaligned (OFF = 1)
// or starting before column 0 (OFF = -1) that take element atomics, programs adding into the
// same elements at once, a staged tile rewritten every iteration, a shared tile added as it
// is into a rank-3 tensor, and fence() waiting for the sums before the last program reads them.
TEST(GpuBulkAtomics, MatchTheInterpreter) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  const std::string src = test_data_path("tests/data/bulk_atomic.tile");
  using ref::HostBuffer;
  for (const char* off : {"0", "1", "-1"})
    for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{77, 100}, {64, 128}, {5, 33}})
      for (const Bindings& tile : std::vector<Bindings>{
               {{"BM", "32"}, {"BN", "64"}}, {{"BM", "64"}, {"BN", "128"}, {"SLICE", "1"}}}) {
        Bindings config = tile;
        config["OFF"] = off;
        expect_matches_interpreter(
            run, src + "#bulk_rows", config,
            {{HostBuffer(DType::F32, {7, m, n})}, {HostBuffer(DType::F32, {m, n + 1}), true, true}},
            1e-5);
      }
  for (int64_t m : {50, 64})
    expect_matches_interpreter(
        run, src + "#bulk_shared", {},
        {{HostBuffer(DType::F32, {3, m, 64})}, {HostBuffer(DType::F32, {3, m, 64}), true, true}},
        1e-5);
  for (int round = 0; round < 5; ++round)
    expect_matches_interpreter(run, src + "#bulk_last_arrival", {},
                               {{HostBuffer(DType::F32, {9, 40, 64})},
                                {HostBuffer(DType::F32, {40, 64}), true, true},
                                {HostBuffer(DType::I32, {3}), true, false, true},
                                {HostBuffer(DType::F32, {40, 64}), true}},
                               1e-5);
}

// Dots whose warpgroups split N on wgmma, a tile read as one dot's A through a descriptor and
// as another's B, A read transposed (MN-major) through a descriptor from a tile copied or
// written from registers (tests/data/wgmma_split.tile) against the interpreter: 4 and 8 warps,
// both 16-bit types, N per warpgroup 32 to 128, odd tensor sizes (the tiles' edges zero-filled,
// the stores cut short).
TEST(GpuWgmmaSplit, MatchTheInterpreter) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  const std::string src = test_data_path("tests/data/wgmma_split.tile");
  using ref::HostBuffer;
  for (DType t : {DType::BF16, DType::F16})
    for (const char* warps : {"4", "8"}) {
      const Bindings base = {{"T", t == DType::BF16 ? "bf16" : "f16"}, {"WARPS", warps}};
      for (const char* nt : {"64", "128"}) {
        Bindings c = base;
        c["NT"] = nt;
        for (const char* kt : {"64", "128"}) {
          c["KT"] = kt;
          expect_matches_interpreter(run, src + "#split_mn", c,
                                     {{HostBuffer(t, {100, 150})},
                                      {HostBuffer(t, {100, 200})},
                                      {HostBuffer(DType::F32, {150, 200}), true}},
                                     1e-5);
        }
        c.erase("KT");
        for (const char* stages : {"1", "3"}) {
          c["STAGES"] = stages;
          expect_matches_interpreter(run, src + "#split_k", c,
                                     {{HostBuffer(t, {130, 200})},
                                      {HostBuffer(t, {77, 200})},
                                      {HostBuffer(DType::F32, {130, 77}), true}},
                                     1e-5);
        }
      }
      expect_matches_interpreter(run, src + "#staged_a", base,
                                 {{HostBuffer(DType::F32, {3, 50, 60})},
                                  {HostBuffer(t, {50, 100})},
                                  {HostBuffer(t, {40, 50})},
                                  {HostBuffer(DType::F32, {60, 100}), true},
                                  {HostBuffer(DType::F32, {60, 40}), true}},
                                 1e-5);
      expect_matches_interpreter(run, src + "#shared_both", base,
                                 {{HostBuffer(t, {60, 128})},
                                  {HostBuffer(t, {50, 128})},
                                  {HostBuffer(t, {50, 60})},
                                  {HostBuffer(DType::F32, {60, 50}), true},
                                  {HostBuffer(DType::F32, {50, 128}), true}},
                                 1e-5);
    }
}

// Two phases whose shared tiles share storage: phase two's write must wait for phase one's
// reads (many rounds: a missing barrier shows as an occasional wrong sum).
TEST(GpuSharedReuse, TwoPhases) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (int round = 0; round < 20; ++round) {
    check_two_phases(run, 100);
    check_two_phases(run, 128);
  }
}

// WORKLOADS.md section 1, every shape: B=3, Hq=32, Hkv=8, D in {128, 256}, page size in
// {16, 64}, context in {32768, 131072}, kept ratio in {0.02, 0.04, 0.05}; f16 and bf16.
TEST(GpuPagedSparse, EveryWorkloadShape) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (DType t : {DType::F16, DType::BF16})
    for (int64_t ctx : {32768, 131072})
      for (int64_t D : {128, 256})
        for (int64_t ps : {16, 64}) {
          PagedSparseShape s;
          s.dtype = t;
          s.head_dim = D;
          s.page_size = ps;
          s.seq_lens = {ctx, ctx, ctx};
          s.kept_lens.assign(24, static_cast<int64_t>(std::lround(0.02 * ctx)));
          gpu().forget_inputs();
          auto d = make_paged_sparse_data(s, fresh_seed());
          for (double ratio : {0.02, 0.04, 0.05}) {
            redraw_kept(*d, std::vector<int64_t>(24, std::lround(ratio * ctx)), fresh_seed());
            gpu().forget_inputs();
            check_paged_sparse(run, *d, {});
          }
        }
}

// Ragged cases: sequence lengths differ per b, kept counts differ per (b, kv head), with 0
// and 1 among them; several configurations (chunk, tile, stages, warps).
TEST(GpuPagedSparse, RaggedAndConfigurations) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (DType t : {DType::F16, DType::BF16})
    for (int64_t D : {64, 128, 256}) {
      PagedSparseShape s;
      s.dtype = t;
      s.head_dim = D;
      s.page_size = D == 64 ? 64 : 16;
      s.seq_lens = {5003, 77, 1999};
      std::vector<int64_t> kept;
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t h = 0; h < 8; ++h)
          kept.push_back(std::min<int64_t>(s.seq_lens[b], 13 + 211 * h + 7 * b));
      kept[0] = 0;
      kept[9] = 1;
      kept[23] = s.seq_lens[2]; // everything kept
      s.kept_lens = kept;
      gpu().forget_inputs();
      auto d = make_paged_sparse_data(s, fresh_seed());
      for (const Bindings& cfg : std::vector<Bindings>{
               {},
               {{"CHUNK", "64"}, {"BN", "16"}, {"STAGES", "1"}, {"WARPS", "2"}, {"PF", "2"}},
               {{"CHUNK", "128"}, {"BN", "64"}, {"STAGES", "2"}, {"WARPS", "4"}, {"PF", "0"}},
               // one tile per chunk: up to 157 chunks for one (b, kv head) to merge
               {{"CHUNK", "32"}, {"BN", "16"}, {"STAGES", "2"}, {"WARPS", "4"}, {"PF", "0"}},
               {{"CHUNK", "512"}, {"BN", "32"}, {"STAGES", "4"}, {"WARPS", "8"}},
               {{"CHUNK", "1024"}, {"BN", "64"}, {"STAGES", "3"}, {"WARPS", "4"}},
               // more warps than a small tile has columns: padding warps must read nothing
               {{"CHUNK", "256"}, {"BN", "16"}, {"STAGES", "2"}, {"WARPS", "8"}},
               // one warp: P stays in registers for the second dot, no cross-warp reductions
               {{"CHUNK", "128"}, {"BN", "32"}, {"STAGES", "3"}, {"WARPS", "1"}, {"PF", "2"}},
               // chunk sizes that are not powers of two
               {{"CHUNK", "192"}, {"BN", "64"}, {"STAGES", "2"}, {"WARPS", "4"}, {"PF", "2"}},
               {{"CHUNK", "768"}, {"BN", "16"}, {"STAGES", "4"}, {"WARPS", "2"}, {"PF", "8"}}})
        check_paged_sparse(run, *d, cfg);
    }
}

// dequant_gemm's int4 GEMV: decode shapes (M = 1, 4, 16 on a Qwen3-4B linear), odd sizes,
// every group size, act-order, both dtypes.
// int8 weight-only on tensor cores: decode shapes, odd sizes, the split along K twice in a row.
TEST(GpuDequant, W8A16) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (int64_t m : {1, 4, 16, 17}) check_w8a16(run, DType::F16, m, 2560, 4096, {});
  check_w8a16(run, DType::BF16, 3, 6144, 2560, {{"BN", "128"}});
  for (int again = 0; again < 2; ++again) {
    check_w8a16(run, DType::F16, 1, 2560, 9728, {{"STEPS", "1"}});
    check_w8a16(run, DType::BF16, 7, 301, 1157, {{"STEPS", "2"}, {"BK", "64"}});
  }
}

// int4 through the packed path (w4_repack, then w4a16_tc): decode shapes at the defaults, every
// group size, act-order, both dtypes, odd M, N and K, several configurations, the split along
// K twice in a row (the scratch must be left clean).
TEST(GpuDequant, W4A16Packed) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (int64_t m : {1, 4, 16, 17})
    check_w4a16_packed(run, DType::F16, m, 2560, 4096, 128, false, {});
  check_w4a16_packed(run, DType::BF16, 1, 6144, 2560, 128, true, {});
  check_w4a16_packed(run, DType::F16, 64, 512, 1024, 128, true, {{"BM", "64"}, {"BN", "128"}});
  for (int64_t group : {32, 64, -1})
    for (bool act : {false, true})
      check_w4a16_packed(run, DType::F16, 3, 37, 136 + 8 * 15, group, act,
                         {{"BN", "32"}, {"BK", "32"}, {"WARPS", "2"}});
  for (int again = 0; again < 2; ++again)
    for (const Bindings& cfg :
         {Bindings{{"BN", "128"},
                   {"BM", "16"},
                   {"BK", "64"},
                   {"STEPS", "2"},
                   {"STAGES", "3"},
                   {"WARPS", "8"}},
          Bindings{{"BN", "64"}, {"BM", "32"}, {"BK", "128"}, {"STEPS", "3"}, {"STAGES", "4"}},
          Bindings{{"BN", "256"}, {"BM", "8"}, {"BK", "128"}, {"STEPS", "16"}, {"WARPS", "8"}},
          // one warp, all of K in one slice, 8 stages
          Bindings{{"BN", "32"},
                   {"BM", "8"},
                   {"BK", "128"},
                   {"STEPS", "32"},
                   {"STAGES", "8"},
                   {"WARPS", "1"}},
          // clusters: 3 slices in one cluster of 4 (one slice empty); 4 slices in one cluster;
          // 8 slices in 4 clusters of 2 (the clusters' sums meet in the scratch)
          Bindings{{"BN", "64"}, {"BM", "8"}, {"STEPS", "3"}, {"CLUSTER", "4"}},
          Bindings{{"BN", "32"}, {"BM", "16"}, {"STEPS", "2"}, {"WARPS", "2"}, {"CLUSTER", "4"}},
          Bindings{{"BN", "64"}, {"BM", "8"}, {"STEPS", "1"}, {"STAGES", "1"}, {"CLUSTER", "2"}}})
      check_w4a16_packed(run, DType::BF16, 5, 300, 1000 + 24, 128, again == 1, cfg);
  // Decode with the K slices in clusters (8 slices: clusters of 2 and 4).
  for (const char* cluster : {"2", "4"})
    check_w4a16_packed(run, DType::F16, 1, 2560, 4096, 128, false,
                       {{"STEPS", "4"}, {"CLUSTER", cluster}});
  // Clusters at BM 32 (two slices in one) and 64, odd sizes, act-order, bf16.
  check_w4a16_packed(run, DType::F16, 70, 300, 1024, 128, false,
                     {{"BN", "128"}, {"BM", "32"}, {"STEPS", "4"}, {"CLUSTER", "2"}});
  check_w4a16_packed(run, DType::BF16, 77, 200, 768, 64, true,
                     {{"BN", "64"}, {"BM", "64"}, {"BK", "64"}, {"STEPS", "3"}, {"CLUSTER", "4"}});
}

// w4a16_tc with WG = 1: on Hopper (sm_90a) the 4-bit dot runs on the warpgroup tensor cores
// (wgmma, B swizzled in shared memory) wherever it fits: one and two warpgroups, N (BM) from 8
// to 128, K slices, clusters, odd M, N and K, both dtypes, every group size (groups of 32 take
// BK 32, which keeps mma.sync: the same answer either way), act-order (x gathered as [K, M]:
// mma.sync too). Elsewhere WG = 1 is mma.sync.
TEST(GpuDequant, W4A16PackedOnWarpgroupTensorCores) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  const std::vector<Bindings> configs = {
      {{"WG", "1"}, {"BN", "64"}, {"BM", "8"}, {"STEPS", "2"}},
      {{"WG", "1"}, {"BN", "64"}, {"BM", "64"}, {"STEPS", "3"}, {"STAGES", "3"}},
      {{"WG", "1"}, {"BN", "128"}, {"BM", "128"}, {"WARPS", "8"}, {"STEPS", "20"}, {"STAGES", "3"}},
      {{"WG", "1"}, {"BN", "128"}, {"BM", "32"}, {"WARPS", "8"}, {"BK", "64"}, {"STEPS", "4"}},
      {{"WG", "1"}, {"BN", "64"}, {"BM", "16"}, {"STEPS", "1"}, {"STAGES", "1"}},
      {{"WG", "1"}, {"BN", "64"}, {"BM", "32"}, {"STEPS", "2"}, {"CLUSTER", "2"}},
      // SA = 1: the scales applied to the unpacked weights, the dot accumulating in place
      {{"WG", "1"}, {"SA", "1"}, {"BN", "128"}, {"BM", "256"}, {"WARPS", "8"}, {"STEPS", "20"}},
      {{"WG", "1"}, {"SA", "1"}, {"BN", "64"}, {"BM", "8"}, {"STEPS", "3"}, {"STAGES", "3"}},
      {{"WG", "0"}, {"SA", "1"}, {"BN", "64"}, {"BM", "32"}, {"STEPS", "4"}},
      {{"WG", "0"}, {"SA", "1"}, {"BN", "128"}, {"BM", "16"}, {"WARPS", "8"}, {"CLUSTER", "2"}}};
  for (int again = 0; again < 2; ++again)
    for (const Bindings& cfg : configs) {
      check_w4a16_packed(run, DType::F16, 300, 300, 1000 + 24, 128, false, cfg);
      check_w4a16_packed(run, DType::BF16, 77, 200, 768, 128, again == 1, cfg);
    }
  check_w4a16_packed(run, DType::BF16, 33, 136, 640, 64, false, configs[3]);
  check_w4a16_packed(run, DType::F16, 1, 2560, 4096, 128, false, configs[0]);
  check_w4a16_packed(run, DType::BF16, 2048, 384, 2560, 128, false, configs[2]);
  check_w4a16_packed(run, DType::F16, 2048, 640, 2560, 128, false, configs[6]);
  for (int64_t group : {32, -1})
    check_w4a16_packed(run, DType::F16, 5, 37, 136 + 8 * 15, group, true,
                       {{"WG", "1"}, {"BN", "64"}, {"BM", "8"}, {"BK", "32"}});
}

// SA = 1 with 3+ stages: each tile's last wgmmas run on into the next iteration (the ring's
// producer one slot further behind), and x's tiles come by TMA (the test's tensors are
// aligned and contiguous: tma_compatible); OCC = 2 caps the registers for two programs per
// multiprocessor. A whole K, split K, more stages than a slice has tiles, a cluster whose last
// slice lies past K (a loop of no iterations), odd M and N, partial tiles of the TMA's boxes,
// clusters that add whole accumulators through the ring's bytes after the loop.
TEST(GpuDequant, W4A16WgmmaInFlightWithTma) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  const std::vector<Bindings> configs = {
      {{"WG", "1"},
       {"SA", "1"},
       {"BN", "128"},
       {"BM", "256"},
       {"WARPS", "8"},
       {"BK", "64"},
       {"STEPS", "40"},
       {"STAGES", "3"}},
      {{"WG", "1"},
       {"SA", "1"},
       {"BN", "128"},
       {"BM", "64"},
       {"WARPS", "8"},
       {"BK", "64"},
       {"STEPS", "5"},
       {"STAGES", "4"}},
      {{"WG", "1"}, {"SA", "1"}, {"BN", "64"}, {"BM", "128"}, {"STEPS", "2"}, {"STAGES", "3"}},
      {{"WG", "1"},
       {"SA", "1"},
       {"BN", "64"},
       {"BM", "32"},
       {"STEPS", "2"},
       {"STAGES", "3"},
       {"CLUSTER", "2"}},
      {{"WG", "1"},
       {"SA", "1"},
       {"BN", "128"},
       {"BM", "128"},
       {"WARPS", "8"},
       {"BK", "64"},
       {"STEPS", "40"},
       {"STAGES", "3"},
       {"OCC", "2"}},
      {{"WG", "1"}, {"SA", "0"}, {"BN", "64"}, {"BM", "8"}, {"STEPS", "2"}, {"STAGES", "2"}},
      // Accumulator-sized cluster sums over the dead ring's bytes (scratch=exchange): 128 x 256
      // in clusters of 2, 128 x 128 in clusters of 4 (with an empty slice at K = 768).
      {{"WG", "1"},
       {"SA", "1"},
       {"BN", "128"},
       {"BM", "256"},
       {"WARPS", "8"},
       {"STEPS", "5"},
       {"STAGES", "3"},
       {"CLUSTER", "2"}},
      {{"WG", "1"},
       {"SA", "1"},
       {"BN", "128"},
       {"BM", "128"},
       {"WARPS", "8"},
       {"BK", "64"},
       {"STEPS", "4"},
       {"STAGES", "3"},
       {"CLUSTER", "4"}}};
  for (const Bindings& cfg : configs) {
    check_w4a16_packed(run, DType::F16, 300, 300, 1000 + 24, 128, false, cfg);
    check_w4a16_packed(run, DType::BF16, 77, 200, 768, 128, false, cfg);
  }
  check_w4a16_packed(run, DType::BF16, 2048, 640, 2560, 128, false, configs[0]);
  check_w4a16_packed(run, DType::F16, 256, 2560, 9728, 128, false, configs[1]);
  check_w4a16_packed(run, DType::BF16, 1000, 384, 2560, 128, false, configs[4]);
  check_w4a16_packed(run, DType::F16, 256, 6144, 2560, 128, false, configs[6]);
}

TEST(GpuDequant, W4A16) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  for (int64_t m : {1, 4, 16}) check_w4a16(run, DType::F16, m, 2560, 4096, 128, false, {});
  check_w4a16(run, DType::BF16, 1, 6144, 2560, 128, true, {});
  for (int64_t group : {32, 64, -1})
    check_w4a16(run, DType::F16, 3, 37, 136 + 8 * 15, group, true, {{"BN", "32"}, {"BK", "64"}});
  for (const Bindings& cfg : {Bindings{{"BN", "256"}, {"BK", "32"}, {"WARPS", "8"}},
                              Bindings{{"BN", "64"}, {"BK", "256"}, {"WARPS", "2"}}})
    check_w4a16(run, DType::F16, 5, 300, 1000, 40, false, cfg);
}

TEST(GpuHbv, ForwardMatchesTheFloat64Reference) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  check_hbv_forward(run, 1000, 1461, {}); // a partial last program, four years of days
  check_hbv_forward(run, 37, 365, {{"BB", "32"}, {"WARPS", "1"}});
  check_hbv_forward(run, 300, 100, {{"BB", "256"}, {"WARPS", "8"}});
  check_hbv_forward(run, 5, 1, {});
}

// The backward reverse mode derives from hbv_forward, on the GPU, against the float64 adjoint.
TEST(GpuHbv, DerivedBackwardMatchesTheFloat64Adjoint) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  check_hbv_gradient(run, 1000, 1461, {});
  check_hbv_gradient(run, 37, 365, {{"BB", "32"}, {"WARPS", "1"}, {"CK", "16"}});
  check_hbv_gradient(run, 300, 100, {{"BB", "256"}, {"WARPS", "8"}, {"CK", "128"}});
  check_hbv_gradient(run, 5, 1, {{"CK", "4"}});
  check_hbv_gradient(run, 77, 256, {{"CK", "64"}});
  check_hbv_gradient(run, 9, 30, {{"CK", "128"}});
  // The segment form (hbv_forward_grad_lin, then _seg): T a multiple of SEG and not, one day.
  check_hbv_gradient(run, 1000, 1461, {{"SEG", "64"}});
  check_hbv_gradient(run, 37, 365, {{"SEG", "16"}});
  check_hbv_gradient(run, 300, 128, {{"BB", "64"}, {"WARPS", "2"}, {"SEG", "32"}});
  check_hbv_gradient(run, 5, 1, {{"SEG", "8"}});
  // The checkpointed reverse on the training forward's starts (hbv_forward_grad_ck).
  check_hbv_gradient(run, 1000, 1461, {{"SEG", "64"}, {"ON_STARTS", "1"}});
  check_hbv_gradient(run, 37, 365, {{"SEG", "32"}, {"ON_STARTS", "1"}});
  check_hbv_gradient(run, 5, 1, {{"SEG", "128"}, {"ON_STARTS", "1"}});
}

// NM components per basin in one kernel and its derived backward in every form, on the GPU
// (the shuffles of the mean, the forcings broadcast over the components, the atomics that sum
// their gradients), against the float64 reference on the B * NM models.
TEST(GpuHbv, ComponentsInOneKernelForwardAndEveryBackwardForm) {
  REQUIRE_GPU();
  KernelRunner run = gpu().runner();
  check_hbv_nmul(run, 100, 365, 16, {}, "forward");
  check_hbv_nmul(run, 37, 100, 4, {{"BB", "8"}, {"WARPS", "1"}}, "forward");
  check_hbv_nmul(run, 9, 200, 2, {{"BB", "32"}, {"WARPS", "2"}}, "forward");
  check_hbv_nmul(run, 100, 365, 16, {{"CK", "64"}}, "whole");
  check_hbv_nmul(run, 37, 100, 8, {{"BB", "4"}, {"CK", "16"}}, "whole");
  check_hbv_nmul(run, 100, 365, 16, {{"SEG", "64"}}, "ck");
  check_hbv_nmul(run, 21, 130, 4, {{"BB", "8"}, {"SEG", "32"}}, "segments");
  check_hbv_nmul(run, 3, 1, 2, {{"BB", "16"}, {"SEG", "8"}}, "ck");
}

} // namespace
} // namespace tilejit::test
