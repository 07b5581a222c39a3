// Pass assign-layouts: picks a layout (compiler/layout.h) for every register tile and
// inserts conversions where a value must move between layouts or into shared memory.
//
// Anchors fix layouts: a dot's result is an MmaAcc tile; a reduction's result is a Slice of
// its operand's layout. Loads, iota and shared-memory reads are free: they take whatever
// layout their consumer wants. A variable takes the strongest layout assigned to it (MmaAcc,
// then Slice, then Blocked) so loop-carried accumulators stay in tensor-core fragments.
#pragma once

#include "compiler/ir.h"

namespace tilejit {

/// Throws dsl::CompileError for programs the CUDA backend cannot lay out (e.g. a dot whose
/// shared dimension is not a multiple of 16).
void assign_layouts(ir::Kernel& k);

/// True for expressions that read a shared tile in place (a shared variable, a window of one,
/// or a transposed view of either): dot operands of this form need no staging.
bool is_shared_operand(const ir::Expr& e);

/// A 4-bit dot's A operand as each warp unpacks it into tensor-core registers (tj::dot_q4):
/// unpack4<T>(words[, zero]) alone, or times a scale per row (`unpack4(...) * s[:, None]`, s a
/// T tile: one packed multiply of the unpacked pairs, rounded to T once as a register A is).
struct Q4Operand {
  ir::Expr* unpack = nullptr; ///< the unpack4 node (nullptr: `a` is not of this form)
  ir::Expr* scale = nullptr;  ///< the rank-1 scale over the rows, or nullptr
};
Q4Operand q4_operand(const ir::Expr& a);

/// The layout a value with none of its own (a scalar, a constant tile) is stored to `to` in:
/// vectors of 16 bytes where the launcher proved `to`'s rows 16-byte aligned, else one element
/// per thread along the row, so that each warp's element-wise store is one contiguous run.
/// (assign-layouts places such stores' masks in it; the CUDA backend writes them in it.)
const ir::Layout* free_store_layout(ir::LayoutTable& table, const std::vector<int64_t>& shape,
                                    const ir::Param& to, int threads);

} // namespace tilejit
