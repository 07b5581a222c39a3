// Typed operations: one call per workload, on tensor views, checked argument by argument with
// errors that name the tensor. Each op is the workload's DSL kernel launched through the
// Runtime, so it takes the tuned configuration from the runtime's tuning database.
#pragma once

#include <tilejit/tilejit.h>

#include <memory>
#include <optional>

namespace tilejit::ops {

/// Sparse decode attention over a paged KV cache (WORKLOADS.md section 1).
///   q [B, Hq, D], k_cache / v_cache [pages, page_size, Hkv, D] (f16 or bf16, all the same),
///   block_table [B, max_pages] i32, seq_lens [B] i32, kept_idx [B, Hkv, max_kept] i32 (token
///   positions, ascending), kept_len [B, Hkv] i32.
/// Writes o [B, Hq, D] (q's dtype) and lse [B, Hq] f32 (natural log; -inf where nothing is
/// kept, with o = 0 there). Hq must be a multiple of Hkv (group size 1..16); D in {64, 96,
/// 128, 256}; page_size in {8, 16, 32, 64, 128, 256}.
struct PagedSparseDecodeArgs {
  Tensor q, k_cache, v_cache, block_table, seq_lens, kept_idx, kept_len;
  std::optional<Tensor> o, lse; ///< written when given; allocated on the device otherwise
  std::optional<double> scale;  ///< default 1 / sqrt(D)
  void* stream = nullptr;       ///< CUstream (null: the legacy default stream)
  Config config;                ///< forced tunables (CHUNK, BN, ...): none to use the tuned ones
};

struct PagedSparseDecodeResult {
  Tensor o, lse;
  /// Owns o and lse when the op allocated them (null when the caller gave both).
  std::shared_ptr<void> storage;
};

/// Checks the arguments (every tensor: device, dtype, rank, sizes against the others) and
/// launches. Throws tilejit::Error naming the tensor, its shape and what was expected.
PagedSparseDecodeResult paged_sparse_decode(Runtime& rt, const PagedSparseDecodeArgs& args);

/// The checks alone (no GPU needed): throws what paged_sparse_decode would.
void check_paged_sparse_decode(const PagedSparseDecodeArgs& args);

} // namespace tilejit::ops
