// paged_sparse (WORKLOADS.md section 1): random paged KV caches, random kept sets, and a
// float64 reference of sparse decode attention; shared by the interpreter and GPU tests.
#pragma once

#include "kernel_runner.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace tilejit::test {

/// A problem: sizes, per-sequence lengths and per-(b, kv head) kept counts.
struct PagedSparseShape {
  int64_t batch = 3, heads_q = 32, heads_kv = 8, head_dim = 128, page_size = 16;
  std::vector<int64_t> seq_lens;  ///< per b
  std::vector<int64_t> kept_lens; ///< per (b, kv head), row-major
  DType dtype = DType::F16;
  std::string describe() const;
};

/// Host data for one problem: caches and tables drawn at random (kept positions distinct,
/// ascending, uniform over the sequence; padding entries of kept_idx are -1).
struct PagedSparseData {
  PagedSparseShape shape;
  int64_t max_kept = 0, max_pages = 0, num_pages = 0;
  ref::HostBuffer q, k_cache, v_cache, block_table, seq_lens, kept_idx, kept_len, o, lse;
  double scale = 0;
};

/// Draws caches, tables and queries for `shape` (multi-threaded: caches can be gigabytes).
std::unique_ptr<PagedSparseData> make_paged_sparse_data(const PagedSparseShape& shape, uint64_t seed);
/// Draws a new kept set (and queries) for the same caches.
void redraw_kept(PagedSparseData& d, const std::vector<int64_t>& kept_lens, uint64_t seed);

/// Runs paged_sparse_decode on `d` with `config` and checks every element of o and lse
/// against the float64 reference (o and lse poisoned first; kept_len 0 must give o = 0 and
/// lse = -inf). Returns the worst relative error.
double check_paged_sparse(const KernelRunner& run, PagedSparseData& d, const Bindings& config);

} // namespace tilejit::test
