// Pass expand-pipelines: writes out each pipelined loop (after pipeline-loops marked its
// producers and plan-shared-memory placed its rings) as the loops the GPU runs, so that the
// backends only print:
//
//   lo, hi                                 the bounds, once
//   for s in [0, S-1):                     prologue: the first S-1 iterations' copies
//     if lo + s*step < hi: producers -> slot s
//     async_commit
//   for v in [lo, hi) step:                the loop
//     async_wait S-2; barrier              this iteration's copies landed; last reads done
//     read = it % S; write = (it + S-1) % S
//     if v + (S-1)*step < hi: producers -> slot write
//     async_commit
//     the body, reading ring buffers at slot `read`
//   async_wait 0; barrier                  the rings may be reused after the loop
//
// A wgmma dot the body runs as `acc = dot(a, b, acc)` on one of the loop's rings is left
// running when its iteration ends (wgmma = 2, S >= 3): the producers then run D = S-2
// iterations ahead instead of S-1 (the slot the running wgmmas read is not the next one
// filled), and the loop sits in `if lo < hi { loop; wgmma_wait acc }`.
//
// A producer's copy the tensor memory accelerator can do (async_choices.h: tma_copy) is issued
// by one thread with the loop's mbarriers, one per slot after the planned shared memory: an
// `mbarrier_init` (and a barrier) before the prologue, an `mbarrier_wait` for slot `read`'s
// phase (it / S) % 2 after the loop's barrier (nested loops carry each slot's parity in a bit
// of a counter).
//
// Where every ring is filled by TMA and no wgmma runs past its iteration, the slots are
// released through a second set of mbarriers instead of the loop's top barrier:
//
//   for v in [lo, hi) step:
//     async_wait S-2; mbarrier_wait full[read]        this iteration's copies landed
//     if v + (S-1)*step < hi:
//       mbarrier_wait producer empty[write]           (the copying thread only) slot read out
//       producers -> slot write
//     the body
//     mbarrier_arrive empty[read]                     every thread: done with slot read
//
// so the warps are not held in step by a block barrier every iteration (insert-barriers still
// orders the body's other shared tiles). TILEJIT_PIPELINE_RELEASE=barrier turns this off.
//
// Where the producers' inputs are scalars some of which are loads (a block-sparse loop's next
// kept block, read from its index list), the loop reads them an iteration before the copies
// that use them and carries them in registers (x_early, updated from x_next each iteration),
// so the copies are issued without waiting for a load. Likewise the body's own leading scalar
// declarations that load from tensors the kernel never writes (the block index a block-sparse
// body's mask tests) are read an iteration ahead and carried (x = x_c at the top, x_c read for
// the next iteration right after), so the body does not start by waiting for them.
// TILEJIT_PIPELINE_EARLY_INPUTS=0 turns both off.
//
// (`<` is `>` for a loop that counts down.) Producers are cloned with fresh variables; `if`s
// around producers are kept (a block-sparse loop that skips a block neither copies nor reads
// it). It also decides which copies run asynchronously: a copy the body does for itself is
// made synchronous, since waiting for it would wait for the prefetched stages too.
#pragma once

#include "compiler/ir.h"

namespace tilejit {

void expand_pipelines(ir::Kernel& k);

/// Whether pipelines may release ring slots through mbarriers: the environment's
/// TILEJIT_PIPELINE_RELEASE, 'mbarrier' (the default) or 'barrier' (the block barrier at every
/// iteration's top, for comparison); another value throws tilejit::Error naming it.
bool slot_release_enabled();

/// Whether the scalar inputs a pipeline's copies load their addresses from (a block-sparse
/// loop's index list) are read an iteration before the copies and carried: the environment's
/// TILEJIT_PIPELINE_EARLY_INPUTS, '1' (the default) or '0' (read with the copies, for
/// comparison); another value throws tilejit::Error naming it.
bool early_inputs_enabled();

} // namespace tilejit
