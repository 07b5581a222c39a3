#include "workloads/ring_attention.h"

#include "support/error.h"

namespace tilejit::workloads {

int ring_chunk(int world, int rank, int local) {
  return local == 0 ? rank : 2 * world - 1 - rank;
}

std::vector<RingStep> ring_schedule(int world, int rank, bool causal) {
  if (world < 1 || world > 65536)
    throw Error(str("ring attention: world = ", world, " ranks is not in 1..65536"));
  if (rank < 0 || rank >= world)
    throw Error(str("ring attention: rank ", rank, " is not one of the world's 0..", world - 1));
  std::vector<RingStep> steps;
  for (int s = 0; s < world; ++s) {
    RingStep step;
    step.kv_rank = ((rank - s) % world + world) % world;
    for (int ql = 0; ql < 2; ++ql)
      for (int kl = 0; kl < 2; ++kl) {
        RingBlock b;
        b.q_local = ql, b.kv_local = kl;
        b.q_chunk = ring_chunk(world, rank, ql);
        b.kv_chunk = ring_chunk(world, step.kv_rank, kl);
        if (causal && b.kv_chunk > b.q_chunk) continue; // every key after every query
        b.causal = causal && b.kv_chunk == b.q_chunk;
        step.blocks.push_back(b);
      }
    steps.push_back(std::move(step));
  }
  return steps;
}

} // namespace tilejit::workloads
