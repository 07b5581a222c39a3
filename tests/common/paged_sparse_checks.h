// paged_sparse checked through a runner (interpreter or GPU) against the float64 reference.
#pragma once

#include "kernel_runner.h"
#include "workloads/paged_sparse.h"

namespace tilejit::test {

using workloads::make_paged_sparse_data;
using workloads::PagedSparseData;
using workloads::PagedSparseShape;
using workloads::redraw_kept;

/// Runs paged_sparse_decode on `d` with `config` and checks every element of o and lse
/// (poisoned first; kept_len 0 must give o = 0 and lse = -inf). Returns the worst error.
double check_paged_sparse(const KernelRunner& run, PagedSparseData& d, const Bindings& config);

} // namespace tilejit::test
