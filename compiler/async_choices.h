// What in a pipelined loop may run asynchronously beyond cp.async: a wgmma dot left running
// past its iteration, and copies the tensor memory accelerator can do. expand-pipelines asks
// (it knows the stages and where the mbarriers fit) and writes the loop out accordingly.
#pragma once

#include "compiler/ir.h"

#include <vector>

namespace tilejit {

/// The dot a pipelined loop of `stages` stages may leave running past its iteration: a wgmma
/// dot the body runs every iteration as `acc = dot(a, b, acc)` (emitted in place), acc touched
/// by nothing else in the loop, b one of the loop's `rings`. Its wgmmas then overlap the next
/// iteration's barrier, copies and unpacking, which the ring allows when the producer writes
/// one slot further behind (the slot the running wgmmas read is not the next one it fills).
/// Needs 3+ stages so that a copy is still issued ahead; otherwise (nullptr) the dot waits for
/// itself.
ir::Stmt* in_flight_dot(ir::Block& body, const std::vector<ir::Var*>& rings, int stages);

/// Whether a pipelined loop's producer statement `s` may copy on the tensor memory
/// accelerator: on Hopper, a plain rank-2 range (no mask, no other) of a tensor the launcher
/// can describe (Param::tma) into a 128-byte-swizzled tile of 16-bit values whose rows are
/// whole swizzle spans (TMA writes that swizzle itself), or a run of the last dimension into a
/// plain rank-1 tile of 32-bit values of whole 128-byte pieces (one box, no swizzle), with
/// 32-bit coordinates. One thread then issues the tile instead of every thread its 16-byte
/// pieces (addresses, bounds checks).
bool tma_copy(const ir::Kernel& k, const ir::Stmt& s);

/// The same test for any copy statement, whatever its pipeline role (a copy the producer warps
/// issue before their loop: producer_warps.h).
bool tma_copy_fits(const ir::Kernel& k, const ir::Stmt& s);

} // namespace tilejit
