// The example kernels (kernels_src/examples) checked on fresh random inputs against plain C++
// references computed in double: every output element, outputs poisoned (NaN) first. Each
// check takes the runner to use (interpreter or GPU).
#pragma once

#include "kernel_runner.h"

#include <cstdint>

namespace tilejit::test {

void check_gemm(const KernelRunner& run, DType t, int64_t m, int64_t n, int64_t k,
                const Bindings& config);
/// examples/gemm_f32.tile: TF32 (relative error <= 2e-3, and above fp32's 1e-5) or, `exact`,
/// 3xTF32 (<= 1e-5) against float64.
void check_gemm_f32(const KernelRunner& run, bool exact, int64_t m, int64_t n, int64_t k,
                    const Bindings& config);
void check_softmax(const KernelRunner& run, DType t, int64_t rows, int64_t cols,
                   const Bindings& config, double tol);
void check_cumsum(const KernelRunner& run, DType t, int64_t rows, int64_t cols,
                  const Bindings& config, double tol);
void check_bucket_scan(const KernelRunner& run, int64_t basins, int64_t steps,
                       const Bindings& config);

/// Configurations the checks sweep (small and large tiles, 1..8 warps, 1..4 stages).
const std::vector<Bindings>& gemm_configs();
const std::vector<Bindings>& gemm_f32_configs();
const std::vector<Bindings>& softmax_configs();
const std::vector<Bindings>& cumsum_configs();

} // namespace tilejit::test
