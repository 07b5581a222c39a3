// Pass plan-shared-memory: places every shared tile (declared ones, ring buffers of pipelined
// copies, operands staged for the tensor cores) and the scratch area that reductions, layout
// conversions and scans share. Tiles whose lifetimes do not overlap share storage (ring
// buffers excepted: the pipeline synchronises them itself). Rows of 2-D tiles are padded by 16
// bytes so that ldmatrix and column accesses avoid bank conflicts; tiles have at least 16 rows so
// that padded MMA fragments read inside the tile.
#pragma once

#include "compiler/ir.h"

namespace tilejit {

/// Throws ConstraintError (compiler/specialise.h) when the kernel needs more shared memory
/// than the target allows: the tuner prunes such configurations.
void plan_shared_memory(ir::Kernel& k);

/// Bytes one buffer of a shared tile occupies (rows x padded row stride).
int64_t shared_tile_bytes(const ir::Var& v);

} // namespace tilejit
