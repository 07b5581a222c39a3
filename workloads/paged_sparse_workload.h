// paged_sparse behind the workload interface: one kernel (split-K decode with an in-kernel
// merge), the 24 WORKLOADS.md shapes, and the user's own shapes (any head counts with a group
// size of 1 to 16, ragged sequence lengths and kept counts).
#pragma once

#include "workloads/paged_sparse.h"
#include "workloads/workload.h"

#include <map>
#include <memory>
#include <string>

namespace tilejit::workloads {

std::shared_ptr<const Workload> make_paged_sparse_workload();

/// The problem of one paged_sparse shape (a WORKLOADS.md case when `grid_case` is given).
std::unique_ptr<Problem> make_paged_sparse_problem(const PagedSparseShape& shape,
                                                   const PagedSparseCase* grid_case = nullptr);

/// Parses --shape items for paged_sparse (keys case-insensitive):
///   HQ, HKV (or G = HQ / HKV with one of them), D, PS (default 16), B (default: one sequence,
///   or as many as SEQ lists), CTX (every sequence's length) or SEQ=a:b:c (one per sequence),
///   R (kept share of each sequence) or KEPT=n | a:b:c (one per sequence, or one per
///   (sequence, kv head)).
PagedSparseShape parse_paged_sparse_shape(const std::map<std::string, std::string>& items,
                                          DType dtype);

} // namespace tilejit::workloads
