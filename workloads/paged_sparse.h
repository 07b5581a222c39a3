// paged_sparse (WORKLOADS.md section 1): the workload's shapes, random paged KV caches and kept
// sets, a float64 reference of sparse decode attention, and the HBM floor. Used by the CLI
// (run, tune, bench) and by the tests.
#pragma once

#include "compiler/ref/run_tile.h"
#include "compiler/specialise.h"

#include <tilejit/tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tilejit::workloads {

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

/// Sizes that follow from a shape: longest kept list, pages per sequence, pages in the cache.
struct PagedSparseDims {
  int64_t max_kept = 0, max_pages = 0, num_pages = 0;
};
PagedSparseDims paged_sparse_dims(const PagedSparseShape& s);
/// The kernel's arguments as shape-only views (no data): enough to key the tuning database.
std::vector<Tensor> paged_sparse_arg_views(const PagedSparseShape& s);

/// Draws caches, tables and queries for `shape` (multi-threaded: caches can be gigabytes).
std::unique_ptr<PagedSparseData> make_paged_sparse_data(const PagedSparseShape& shape,
                                                        uint64_t seed);
/// Draws a new kept set (and queries) for the same caches.
void redraw_kept(PagedSparseData& d, const std::vector<int64_t>& kept_lens, uint64_t seed);

/// The embedded kernel source.
inline constexpr const char* kPagedSparseSource = "embedded:workloads/paged_sparse.tile";

/// Generic values a problem fixes that no single tensor dimension does (G = Hq / Hkv).
Bindings paged_sparse_generics(const PagedSparseShape& s);

/// float64 reference: o [B, Hq, D] and lse [B, Hq] (-inf where nothing is kept).
struct PagedSparseReference {
  std::vector<double> o, lse;
};
PagedSparseReference paged_sparse_reference(const PagedSparseData& d);

/// How d.o and d.lse compare with the reference: every element.
struct PagedSparseErrors {
  double o = 0, lse = 0;     ///< ||out - ref|| / ||ref||
  int64_t nan_o = 0;         ///< NaN in o (unwritten, or wrong)
  int64_t nonzero_empty = 0; ///< o != 0 where nothing is kept
  int64_t bad_lse = 0;       ///< lse not finite where it should be, or not -inf where it should be
  bool ok(double tol = 1e-2) const {
    return nan_o == 0 && nonzero_empty == 0 && bad_lse == 0 && o <= tol && lse <= tol;
  }
  std::string describe() const;
};
PagedSparseErrors compare_paged_sparse(const PagedSparseData& d, const PagedSparseReference& ref);

/// One shape of WORKLOADS.md section 1 (uniform context and kept ratio).
struct PagedSparseCase {
  int64_t head_dim, page_size, context;
  double ratio;
  std::string name() const; ///< "D128/ps16/ctx131072/r0.05"
  PagedSparseShape shape(DType dtype) const;
};
/// The 24 shapes: D in {128, 256}, page size in {16, 64}, context in {32768, 131072}, kept
/// ratio in {0.02, 0.04, 0.05}; B=3, Hq=32, Hkv=8. Longest contexts first.
std::vector<PagedSparseCase> paged_sparse_cases();

/// Bytes of kept K and V rows the kernel must read (the floor's numerator).
double paged_sparse_floor_bytes(const PagedSparseShape& s);

} // namespace tilejit::workloads
