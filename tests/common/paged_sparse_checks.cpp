#include "paged_sparse_checks.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tilejit::test {

double check_paged_sparse(const KernelRunner& run, PagedSparseData& d, const Bindings& config) {
  SCOPED_TRACE(d.shape.describe() + " config " + config_text(config));
  d.o.poison();
  d.lse.poison();
  Bindings given = config;
  for (const auto& [k, v] : workloads::paged_sparse_generics(d.shape)) given[k] = v;
  run(workloads::kPagedSparseSource, given,
      {TestArg::input(d.q), TestArg::input(d.k_cache), TestArg::input(d.v_cache),
       TestArg::input(d.block_table), TestArg::input(d.seq_lens), TestArg::input(d.kept_idx),
       TestArg::input(d.kept_len), TestArg::of(d.o), TestArg::of(d.lse), TestArg::f32(d.scale)});
  workloads::PagedSparseErrors e =
      workloads::compare_paged_sparse(d, workloads::paged_sparse_reference(d));
  EXPECT_EQ(e.nan_o, 0) << "o has NaN (unwritten or wrong)";
  EXPECT_EQ(e.nonzero_empty, 0) << "kept_len = 0 must give o = 0";
  EXPECT_EQ(e.bad_lse, 0) << "lse must be finite for kept tokens and -inf for none";
  EXPECT_LE(e.o, 1e-2) << "o relative error";
  EXPECT_LE(e.lse, 1e-2) << "lse relative error";
  return std::max(e.o, e.lse);
}

} // namespace tilejit::test
