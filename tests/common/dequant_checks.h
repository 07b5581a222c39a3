// The dequant_gemm kernels (kernels_src/workloads/dequant_gemm.tile) on fresh random GPTQ
// weights, every output element against a float64 reference, outputs poisoned first. Each check
// takes the runner to use (interpreter or GPU).
#pragma once

#include "kernel_runner.h"

#include <cstdint>

namespace tilejit::test {

/// int4 GPTQ: y[M, N] = x @ W^T, W[n, k] = (q[k, n] - z[g(k), n]) * s[g(k), n]; group size
/// `group` (-1: one group), `act_order`: g_idx a random permutation of the groups' rows.
/// K must be a multiple of 8 (the format's), N anything (qzeros is padded to whole words).
/// The kernel is w4a16_gemv, which reads the GPTQ tensors as they are (g_idx included).
void check_w4a16(const KernelRunner& run, DType t, int64_t m, int64_t n, int64_t k, int64_t group,
                 bool act_order, const Bindings& config);

/// int4 GPTQ through the packed path: w4_repack (K permuted by the act-order permutation, the
/// rows sorted by group; the identity without act-order) and then w4a16_tc on the packed form,
/// ACT = 1 reading x through the permutation. One group (-1) runs as groups of 128 with the
/// scales and zeros repeated, as the ops layer does. `repack_config` and `config` are forced on
/// the two kernels.
void check_w4a16_packed(const KernelRunner& run, DType t, int64_t m, int64_t n, int64_t k,
                        int64_t group, bool act_order, const Bindings& config,
                        const Bindings& repack_config = {});

/// int8 weight-only: y[M, N] = x @ (w * s)^T with w [N, K] int8 and per-row scales s [N]
/// (w8a16_mma); any M, N, K.
void check_w8a16(const KernelRunner& run, DType t, int64_t m, int64_t n, int64_t k,
                 const Bindings& config);

} // namespace tilejit::test
