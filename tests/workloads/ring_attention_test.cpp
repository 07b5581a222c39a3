// Ring attention's schedule (workloads/ring_attention.h): over all ranks and steps every (query
// chunk, key chunk) pair a mask keeps is computed exactly once, on the rank that holds the query
// chunk and at the step it holds the key chunk, causal only on the diagonal; under a causal mask
// every rank has the same work; bad worlds and ranks are named.
#include "workloads/ring_attention.h"

#include "support/error.h"

#include <gtest/gtest.h>

#include <map>

namespace tilejit::workloads {
namespace {

TEST(RingAttention, EveryKeptPairOnceWhereItsChunksAre) {
  for (int world : {1, 2, 3, 4, 7, 8})
    for (bool causal : {false, true}) {
      SCOPED_TRACE(testing::Message() << "world " << world << (causal ? " causal" : ""));
      std::map<std::pair<int, int>, int> seen;
      std::vector<double> work(world, 0.0);
      for (int rank = 0; rank < world; ++rank) {
        const std::vector<RingStep> steps = ring_schedule(world, rank, causal);
        ASSERT_EQ(steps.size(), size_t(world));
        for (size_t s = 0; s < steps.size(); ++s) {
          EXPECT_EQ(steps[s].kv_rank, ((rank - int(s)) % world + world) % world);
          for (const RingBlock& b : steps[s].blocks) {
            EXPECT_EQ(b.q_chunk, ring_chunk(world, rank, b.q_local));
            EXPECT_EQ(b.kv_chunk, ring_chunk(world, steps[s].kv_rank, b.kv_local));
            EXPECT_EQ(b.causal, causal && b.q_chunk == b.kv_chunk);
            EXPECT_TRUE(!causal || b.kv_chunk <= b.q_chunk);
            ++seen[{b.q_chunk, b.kv_chunk}];
            work[rank] += b.causal ? 0.5 : 1.0;
          }
        }
      }
      const int chunks = 2 * world;
      for (int qc = 0; qc < chunks; ++qc)
        for (int kc = 0; kc < chunks; ++kc) {
          const bool kept = !causal || kc <= qc;
          EXPECT_EQ(seen[std::make_pair(qc, kc)], kept ? 1 : 0) << qc << ", " << kc;
        }
      for (int rank = 1; rank < world; ++rank) EXPECT_EQ(work[rank], work[0]) << rank;
    }
}

TEST(RingAttention, TheZigzagSplit) {
  EXPECT_EQ(ring_chunk(4, 0, 0), 0);
  EXPECT_EQ(ring_chunk(4, 0, 1), 7);
  EXPECT_EQ(ring_chunk(4, 3, 0), 3);
  EXPECT_EQ(ring_chunk(4, 3, 1), 4);
}

TEST(RingAttention, BadWorldsAndRanksAreNamed) {
  auto error_of = [](int world, int rank) {
    try {
      ring_schedule(world, rank, true);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of(0, 0).find("world = 0 ranks is not in 1..65536"), std::string::npos);
  EXPECT_NE(error_of(4, 4).find("rank 4 is not one of the world's 0..3"), std::string::npos);
  EXPECT_NE(error_of(4, -1).find("rank -1"), std::string::npos);
}

} // namespace
} // namespace tilejit::workloads
