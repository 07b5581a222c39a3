// The pipelined loops of tests/data/pipelines.tile (counting down, a copy under `if`, a copy the
// body does itself) and the shared-storage reuse of tests/data/shared_reuse.tile, checked on fresh
// random inputs against plain C++ references, every output element, outputs poisoned first; with
// the runner to use (interpreter or GPU).
#pragma once

#include "kernel_runner.h"

#include <cstdint>

namespace tilejit::test {

void check_reverse_blocks(const KernelRunner& run, int64_t n, int64_t c, const Bindings& config);
/// `keep_share`: the share of 16-row blocks kept (0: none, so the result is 0).
void check_kept_blocks(const KernelRunner& run, int64_t n, int64_t c, double keep_share,
                       const Bindings& config);
void check_trailing_copy(const KernelRunner& run, int64_t n, int64_t c, const Bindings& config);
/// listed_blocks: `count` block indices drawn from [-2, blocks + 2) (outside ones add nothing),
/// `listed` entries in the list (count may exceed it: the loop stops at the list's end).
void check_listed_blocks(const KernelRunner& run, int64_t n, int64_t c, int64_t listed,
                         int64_t count, const Bindings& config);

/// tiles_in_turn: `listed` entries of a tile order drawn from the tiles (repeats, and tiles no
/// entry names, whose outputs keep their poison), x of `n` rows in 3 batches.
void check_tiles_in_turn(const KernelRunner& run, int64_t n, int64_t tiles, int64_t listed,
                         const Bindings& config);

/// reused_rows: `items` (row block, column block) pairs, the row blocks in runs of 1 to 4 and
/// recurring after other ones (the same block `stages` items back, not the one before), some
/// past the `rows` rows of a; x of `n` rows.
void check_reused_rows(const KernelRunner& run, int64_t rows, int64_t n, int64_t items,
                       const Bindings& config);

/// tests/data/shared_reuse.tile: two phases whose shared tiles share storage.
void check_two_phases(const KernelRunner& run, int64_t n);

/// The source of those kernels for a runner ("path#kernel").
std::string pipelines_source(const char* kernel);

} // namespace tilejit::test
