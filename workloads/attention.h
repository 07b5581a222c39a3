// attention (WORKLOADS.md section 3), dense: shapes (the grid's and the user's), random inputs,
// a float64 reference of the forward and the gradients on sampled heads, and the FLOP count.
// Used by the workload (attention_workload.cpp) and the tests.
#pragma once

#include "compiler/ref/run_tile.h"

#include <tilejit/tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tilejit::workloads {

struct AttentionShape {
  int64_t batch = 1, heads_q = 8, heads_kv = 8, seq = 512, head_dim = 64;
  bool causal = false;
  bool exact = false; ///< f32 inputs: 3xTF32 instead of TF32
  DType dtype = DType::BF16;
  /// Block-sparse when under 100: each query block of `block` rows keeps this percent of the
  /// key blocks (rounded, at least 1: its diagonal block, then others at random), per head.
  int64_t density_percent = 100;
  int64_t block = 128;
  bool sparse() const { return density_percent < 100; }
  int64_t blocks() const { return (seq + block - 1) / block; }
  /// Key blocks each query block keeps.
  int64_t kept_blocks() const;
  std::string describe() const; ///< "bf16 B=4 Hq=16 Hkv=16 N=8192 D=128 causal"
  /// The kernels' tile width: the head dim rounded up to 16.
  int64_t tile_width() const { return (head_dim + 15) / 16 * 16; }
};

/// Inputs (q, k, v, dout drawn at random: q and k in [-2, 2), v and dout in [-1, 1)), the
/// outputs (o, lse, dq, dk, dv) and the backward's work buffers (delta, dq_acc).
struct AttentionData {
  AttentionShape shape;
  ref::HostBuffer q, k, v, dout, o, lse, dq, dk, dv, delta, dq_acc;
  /// Block-sparse: keep[(h * NB + query block) * NB + key block], and the kernels' lists of it
  /// ([1, Hq, NB] counts and [1, Hq, NB, NB] indices): per query block (forward) and per key
  /// block (backward).
  std::vector<char> keep;
  ref::HostBuffer kv_cnt, kv_idx, q_cnt, q_idx;
};

std::unique_ptr<AttentionData> make_attention_data(const AttentionShape& shape, uint64_t seed);

/// The kv heads whose groups the reference computes in full (o, lse and dq of their query
/// heads, dk and dv of the kv head): (0, 0) and (B - 1, Hkv - 1). Every element of every
/// output is still checked for NaN, so an unwritten tile cannot pass.
std::vector<std::pair<int64_t, int64_t>> attention_reference_groups(const AttentionShape& s);

struct AttentionErrors {
  double o = 0, lse = 0, dq = 0, dk = 0, dv = 0; ///< relative L2 (lse: largest absolute)
  int64_t nan = 0;                               ///< NaN or inf in any output
  /// What the inputs' precision allows: 16-bit inputs 1e-2 (o), 2e-3 (lse), 3e-2 (gradients);
  /// f32 through TF32 5e-3, 3e-3 (a causal first row: one score), 1e-2; exact f32 1e-5, 1e-5, 1e-4.
  double tol_o = 0, tol_lse = 0, tol_grad = 0;
  bool ok() const {
    return nan == 0 && o <= tol_o && lse <= tol_lse && dq <= tol_grad && dk <= tol_grad &&
           dv <= tol_grad;
  }
};

/// The float64 forward and gradients of the sampled groups (attention_reference_groups): the
/// expensive part of a check, computed once per inputs and reused for every configuration the
/// tuner tries (it only reads q, k, v and dout).
struct AttentionReference {
  struct Group {
    int64_t batch = 0, kv_head = 0;
    std::vector<double> o, dq;  ///< the group's G query heads, [G, N, D]
    std::vector<double> lse;    ///< [G, N]
    std::vector<double> dk, dv; ///< the kv head's, [N, D]
  };
  std::vector<Group> groups;
};
AttentionReference attention_reference(const AttentionData& d);

/// Compares the outputs in `d` with the reference on its groups (and every element for NaN).
AttentionErrors compare_attention(const AttentionData& d, const AttentionReference& ref);

/// One WORKLOADS.md shape.
struct AttentionCase {
  int64_t batch, heads, seq, head_dim;
  bool causal;
  int64_t heads_kv = 0;          ///< 0: heads (multi-head); fewer: GQA
  int64_t density_percent = 100; ///< under 100: block-sparse, blocks of 128
  std::string name() const;      ///< "B4/H16/N8192/D128/causal", "B1/H8/HKV2/N512/D64"
  AttentionShape shape(DType dtype) const;
};
/// f32: the 16 seed shapes (B in {1, 2}, N in {512, 1024}, H in {8, 16}, D = 64, each with
/// H kv heads and, GQA, H/4 of them); f16/bf16: the long shapes (B = 4, H = 16, N in {2048,
/// 8192, 16384}, D in {64, 128}, causal and not).
std::vector<AttentionCase> attention_cases(DType dtype);

/// FLOPs of the forward and backward: 4*B*H*N^2*D (halved when causal; times the kept share
/// of the blocks when block-sparse) times 3.5.
double attention_flops(const AttentionShape& s);

inline constexpr const char* kAttentionSource = "embedded:workloads/attention.tile";

} // namespace tilejit::workloads
