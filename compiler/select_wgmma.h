// Pass select-wgmma: dots that Hopper's warpgroup tensor cores (wgmma, sm_90a) can run take
// them instead of mma.sync, and their B tiles are stored the way wgmma reads them (the 128-byte
// swizzle). A dot qualifies when the target has wgmma and
//   - it is a 4-bit dot, dot(unpack4<f16|bf16>(shared words, zero, interleaved = 1),
//     trans(shared b)), whose A fragments each warp unpacks into registers (tj::dot_q4), N (b's
//     rows) a wgmma size and K a multiple of 64; or
//   - it is a 16-bit dot (f16 or bf16 operands) with A a shared tile (read by ldmatrix as
//     dot_ss does) or a register tile (as dot_rs), and B a whole shared tile read either as
//     trans(b) with b [N, K] (K-major: K a multiple of 64) or as b [K, N] (MN-major: N a
//     multiple of 64, K of 16); N a wgmma size (8, 16, 32, 64, 96, 128, 192 or 256);
//   - its warps own 16 rows each in whole warpgroups (the accumulator's M = 16 * WM rows, WM a
//     multiple of 4: the wgmma's M per warpgroup), so its register layout is unchanged; where
//     the warps also split N (WN > 1, assign-layouts' choice for a dot of fewer rows than 16
//     per warp, see wgmma_rows_warps), each warpgroup computes N / WN columns (a wgmma size; a
//     multiple of 64 for an MN-major B) and A comes from shared memory;
//   - b is written only by copies and read only by such dots, as their B or as an A read
//     through a descriptor (below) (the swizzle is their contract; every orientation reads the
//     same swizzled bytes).
// Anything else keeps mma.sync, and so does a dot written with `wgmma = 0`. A selected dot's A,
// when it is a whole 16-bit shared tile read as it lies ([M, K], K a multiple of 64) or
// transposed (trans(a), a [K, M]: MN-major, M a multiple of 64), read by nothing but selected
// dots and written by copies or whole from registers (`shared x = cast<T>(frag)`, stored through
// the swizzle), is swizzled too: the tensor cores then read it through a descriptor
// (tj::dot_wgmma_ss) instead of each warp loading its fragments into registers
// (attention's q k^T: q's tile; its backward's ds^T for dq), unless a dot reading it as A says
// `shared_a = 0` (the registers saved against A's bytes read from shared memory at every
// wgmma: attention's forward at width 128 is 5% slower with it, its backward 2-3% faster on
// the H200). After assign-layouts
// (it needs the dot's layout) and before plan-shared-memory (which sizes and aligns the swizzled
// tiles).
#pragma once

#include "compiler/ir.h"

namespace tilejit {

void select_wgmma(ir::Kernel& k);

/// For assign-layouts, before any dot is selected: the warps along M (each owning 16 rows; the
/// other warps / WM split N between warpgroups) with which `dot`, whose rows are too few for
/// every warp to own 16 (attention backward's dq: 64 query rows on 8 warps), still fits the
/// warpgroup tensor cores, its B tile read only by dots and written only by copies; 0 where it
/// would not (the dot then takes mma.sync's balanced split).
int wgmma_rows_warps(ir::Kernel& k, const ir::Expr& dot, int warps);

} // namespace tilejit
