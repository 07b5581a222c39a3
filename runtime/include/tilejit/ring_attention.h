// Ring (context-parallel) attention over several processes, one GPU each: the sequence split
// over the ranks, each rank's key/value chunks passed around the ring with NCCL while the
// attention kernels work on the chunks a rank holds, partial results merged through their
// log-sum-exps (workloads/ring_attention.h has the schedule).
//
// The split is the zigzag one: a sequence of N = 2 * world * C positions in 2 * world chunks of
// C, rank r holding chunks r and 2 * world - 1 - r, concatenated along the sequence ([B, H, 2C,
// D]), so that under a causal mask every rank has the same work. ring_local_positions says
// which positions a rank holds.
//
//   tilejit::ops::RingGroup ring(rt, id, world, rank); // every rank, the same id
//   auto out = tilejit::ops::ring_attention_forward(rt, ring, {q, k, v, ...});
#pragma once

#include <tilejit/ops.h>
#include <tilejit/tilejit.h>

#include <array>
#include <memory>
#include <optional>

namespace tilejit::ops {

/// A ring of `world` ranks (processes, one GPU each: the Runtime's) over an NCCL communicator,
/// with the streams, events and work buffers its calls reuse. One call at a time per group.
class RingGroup {
public:
  using Id = std::array<char, 128>;
  /// A new communicator id (ncclGetUniqueId), made by one rank and given to all. Throws
  /// tilejit::Error when NCCL cannot be loaded (TILEJIT_NCCL_LIBRARY points at it).
  static Id new_id();
  /// Joins the communicator: every rank calls this with the same id and world, each with its
  /// own rank, and it returns when all have joined (NCCL's ncclCommInitRank). Throws
  /// tilejit::Error for world < 1, a rank outside [0, world), no NCCL, NoGpuError without a GPU.
  RingGroup(Runtime& rt, const Id& id, int world, int rank);
  ~RingGroup();
  RingGroup(const RingGroup&) = delete;
  RingGroup& operator=(const RingGroup&) = delete;

  int world() const;
  int rank() const;
  /// The GPU (the Runtime's device).
  int device() const;

  struct Impl;
  Impl& impl() { return *impl_; }

private:
  std::unique_ptr<Impl> impl_;
};

/// The positions of the whole sequence (N = 2 * world * chunk) that rank `rank` holds, in its
/// local order: [rank * chunk, (rank + 1) * chunk) then [(2 * world - 1 - rank) * chunk, ...).
std::array<std::array<int64_t, 2>, 2> ring_local_positions(int world, int rank, int64_t chunk);

/// This rank's share of the attention o = softmax(q k^T scale [causal]) v of the whole
/// sequence: q [B, Hq, 2C, D], k and v [B, Hkv, 2C, D] its two zigzag chunks (dtypes, GQA and
/// head dims as attention_forward; k and v dense, since they travel as they lie). Writes o
/// [B, Hq, 2C, D] and lse [B, Hq, 2C] f32 of its query positions.
struct RingAttentionForwardArgs {
  Tensor q, k, v;
  std::optional<Tensor> o, lse; ///< written when given; allocated otherwise
  bool causal = false;
  std::optional<double> scale;
  void* stream = nullptr; ///< the caller's stream: the result is ready in its order
};

AttentionForwardResult ring_attention_forward(Runtime& rt, RingGroup& ring,
                                              const RingAttentionForwardArgs& args);
/// The checks alone (no GPU, no NCCL needed): errors name the tensor.
void check_ring_attention_forward(const RingAttentionForwardArgs& args);

/// The gradients of sum(dout * o) over the whole sequence, this rank's share: dq of its query
/// positions, dk and dv of its key positions (summed over every rank's queries, which is why
/// each key chunk's gradient travels the ring with it and comes home at the end).
struct RingAttentionBackwardArgs {
  Tensor q, k, v, o, lse, dout;
  std::optional<Tensor> dq, dk, dv; ///< written when given; allocated otherwise
  bool causal = false;
  std::optional<double> scale;
  void* stream = nullptr;
};

AttentionBackwardResult ring_attention_backward(Runtime& rt, RingGroup& ring,
                                                const RingAttentionBackwardArgs& args);
void check_ring_attention_backward(const RingAttentionBackwardArgs& args);

} // namespace tilejit::ops
