// Ring (context-parallel) attention's schedule (issue 20): a sequence of N positions split over
// `world` ranks in 2 * world chunks of N / (2 * world), rank r holding chunks r and
// 2 * world - 1 - r (the zigzag split: under a causal mask every rank then has the same work,
// one early chunk and one late). Each step a rank works on the key/value chunks it holds while
// passing them to the next rank (r + 1) and receiving the previous rank's: at step s it holds
// rank (r - s) mod world's. Each (query chunk, key chunk) pair is one attn_fwd launch (causal
// on the diagonal, whole below it, skipped above it), its partial result folded into the query
// chunk's by attn_merge (kernels_src/workloads/attention.tile).
#pragma once

#include <vector>

namespace tilejit::workloads {

/// The global chunk index of rank `rank`'s local chunk `local` (0 or 1).
int ring_chunk(int world, int rank, int local);

/// One attn_fwd launch: local query chunk `q_local` of this rank against local key/value chunk
/// `kv_local` of the rank whose chunks it holds at this step.
struct RingBlock {
  int q_local = 0, kv_local = 0;
  int q_chunk = 0, kv_chunk = 0; ///< their global indices
  bool causal = false;           ///< the diagonal block of a causal mask
};

struct RingStep {
  int kv_rank = 0;               ///< whose key/value chunks this rank holds at this step
  std::vector<RingBlock> blocks; ///< the launches of this step (none skipped ones)
};

/// The `world` steps of rank `rank`. Throws tilejit::Error for world < 1 or rank outside it.
std::vector<RingStep> ring_schedule(int world, int rank, bool causal);

} // namespace tilejit::workloads
