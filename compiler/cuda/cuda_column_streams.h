// Column streams: a serial loop whose every step reads (or writes, or adds into) one column of a
// row-major [rows, steps] tensor, `X[r0 : r0 + R, t + c]`, touches R rows that lie a whole row
// apart: each warp-wide access is 32 separate memory transactions, one 4-byte element each, and
// the next step's element waits behind the same latency again. (hbv's forcings are [B, T]: on
// an H100 the forward spent two thirds of its time on these reads, 2026-11-25.)
//
// The CUDA backend stages such accesses through shared memory TB steps at a time: at the start
// of every window of TB steps the block copies the next window's [R, TB] block with coalesced
// asynchronous copies (row segments of TB elements), while this window's block, copied one
// window earlier, is read from shared memory; written and atomically added columns collect in
// shared memory and go out a window at a time, coalesced. Results are exactly those of the
// per-step accesses: bounds and masks are applied as the step itself would.
//
// This file decides which accesses of which loops are staged (the analysis); the emitter
// (cuda_emitter.cpp, cuda_access.cpp) prints them, and `tilejit inspect --stage cuda` shows the
// windows with a comment naming the streamed tensors.
#pragma once

#include "compiler/ir.h"

#include <cstdint>
#include <map>
#include <vector>

namespace tilejit::cuda {

struct ColumnStream {
  enum class Kind { Load, Store, Atomic } kind = Kind::Load;
  const ir::Expr* expr = nullptr; ///< the Load, or the AtomicAdd
  const ir::Stmt* stmt = nullptr; ///< the Store, or the Eval of the AtomicAdd
  const ir::Access* access = nullptr;
  int64_t rows = 0;     ///< R: the tile's extent along the tensor's first axis
  int dir = 1;          ///< +1: the column grows by one per iteration; -1: it shrinks by one
  int64_t offset = 0;   ///< bytes into the staging area (two windows for loads, one otherwise)
  int element_size = 4; ///< bytes per element (cp.async copies 4 or 8)
};

struct StagedLoop {
  std::vector<ColumnStream> streams;
  int tb = 0;       ///< steps per window (a power of two)
  size_t first = 0; ///< index of the first body statement with a stream: the windows turn there
  int64_t bytes = 0;
};

/// Per serial loop (keyed by its For statement), the accesses staged and the window size. A
/// loop is left as written when the kernel runs asynchronous copies or clusters of its own
/// (their waits and barriers would meet the windows'), when the loop holds another loop, or
/// when even 4-step windows do not fit in `static_budget` bytes of shared memory.
std::map<const ir::Stmt*, StagedLoop> plan_column_streams(const ir::Kernel& k,
                                                          int64_t static_budget);

/// Element index of (row r, window column k) in a stream's [R, TB] buffer: rows of TB
/// elements, the column XOR-swizzled by the row so that the 32 rows a warp reads at one step
/// fall in 32 different banks (the prelude's tj::cs_index computes the same).
int64_t column_stream_index(int tb, int64_t r, int64_t k);

} // namespace tilejit::cuda
