// Pass select-wgmma: dots that Hopper's warpgroup tensor cores (wgmma, sm_90a) can run take
// them instead of mma.sync, and their B tiles are stored the way wgmma reads them (K-major,
// the 128-byte swizzle). A dot qualifies when the target has wgmma and
//   - it is a 4-bit dot, dot(unpack4<f16|bf16>(shared words, zero, interleaved = 1),
//     trans(shared b)), whose A fragments each warp unpacks into registers (tj::dot_q4);
//   - its warps own 16 rows each in whole warpgroups (the accumulator is M = 16 * WARPS rows,
//     a multiple of 64: the wgmma's M per warpgroup), so its register layout is unchanged;
//   - N (b's rows) is a wgmma size (8, 16, 32, 64, 96, 128, 192 or 256) and K a multiple of 64;
//   - b is written only by copies and read only by such dots (the swizzle is their contract).
// Anything else keeps mma.sync, and so does a dot written with `wgmma = 0`. After assign-layouts
// (it needs the dot's layout) and before plan-shared-memory (which sizes and aligns the swizzled
// tiles).
#pragma once

#include "compiler/ir.h"

namespace tilejit {

void select_wgmma(ir::Kernel& k);

} // namespace tilejit
