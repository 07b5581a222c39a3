// dequant_gemm (WORKLOADS.md section 2): weight-only int4 (GPTQ) and int8 linears. Shapes (the
// Qwen3-4B linears and the user's own), random weights in the formats as stored, the packed
// form the per-call kernel reads, a float64 reference, the comparison and the HBM floor. Used
// by the workload (dequant_gemm_workload.cpp) and the tests.
#pragma once

#include "compiler/ref/run_tile.h"

#include <tilejit/tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tilejit::workloads {

/// y[M, N] = x[M, K] @ W[N, K]^T.
struct DequantShape {
  int64_t m = 1, n = 0, k = 0;
  int bits = 4;           ///< 4: GPTQ int4; 8: int8 with per-row scales
  int64_t group = 128;    ///< int4: 32, 64, 128, or -1 (one group)
  bool act_order = false; ///< int4: g_idx shuffles the rows among the groups
  DType dtype = DType::F16;
  std::string layer; ///< "qkv", "o", ... for WORKLOADS.md shapes; empty for the user's
  /// "int4 f16 M=1 N=6144 K=2560 G=128" (act-order added when on).
  std::string describe() const;
  /// The packed kernel's group: -1 (one group) runs as groups of 128 with the scales repeated.
  int64_t kernel_group() const { return group < 0 ? 128 : group; }
  /// Groups of K as stored (GPTQ's scales rows): ceil(K / G), 1 for one group.
  int64_t groups() const;
  /// Groups of K in the packed form: ceil(K / kernel_group()).
  int64_t kernel_groups() const;
};

/// Host data of one problem. int4: the GPTQ tensors as stored (qweight, g_idx, true scales and
/// zeros: what the reference reads), the permutation of K the ops layer computes at load time,
/// the scales and zeros in the packed kernel's grouping (a host copy, as the op makes), and
/// qweight_t for the repack to fill. int8: w and its per-row scales.
struct DequantData {
  DequantShape shape;
  ref::HostBuffer x, y;
  ref::HostBuffer qweight, g_idx, gptq_scales, gptq_zeros, perm, scales, qzeros, qweight_t;
  ref::HostBuffer xp; ///< act-order: x's columns in the repacked order (permute_tc; else empty)
  ref::HostBuffer w, w_scales;
};

/// Draws x in [-1, 1), nibbles and zeros uniform in 0..15, scales in [0.002, 0.03), int8
/// weights uniform in -128..127 (multi-threaded: lm_head's weights are 195 million values).
std::unique_ptr<DequantData> make_dequant_data(const DequantShape& shape, uint64_t seed);

/// The rows of y the float64 reference computes: all of them up to 2^33 multiply-adds; for
/// larger problems the first and last 16 rows and 32 spread between (every column of each;
/// every element of y is still checked for NaN, so an unwritten tile cannot pass).
std::vector<int64_t> dequant_reference_rows(const DequantShape& s);

/// float64 reference of y on dequant_reference_rows (row-major, those rows in that order).
std::vector<double> dequant_reference(const DequantData& d, const std::vector<int64_t>& rows);

struct DequantErrors {
  double y = 0;      ///< ||y - ref|| / ||ref|| over the reference rows
  int64_t nan_y = 0; ///< NaN anywhere in y (unwritten, or wrong)
  bool ok(double tol = 1e-2) const { return nan_y == 0 && y <= tol; }
};
DequantErrors compare_dequant(const DequantData& d, const std::vector<int64_t>& rows,
                              const std::vector<double>& ref);

/// One WORKLOADS.md shape: a Qwen3-4B linear at one M, int4 (G = 128) or int8.
struct DequantCase {
  std::string layer;
  int64_t n, k, m;
  int bits;
  std::string name() const; ///< "int4/M1/qkv"
  DequantShape shape(DType dtype) const;
};
/// The 60 shapes: int4 and int8 for qkv 6144x2560, o 2560x4096, gate_up 19456x2560, down
/// 2560x9728, lm_head 151936x2560, each at M in {1, 4, 16, 64, 256, 2048}; small M first
/// (decode, where quantized weights pay off).
std::vector<DequantCase> dequant_cases();

/// Bytes the per-call kernel must move at least: packed weights, scales, zeros, x and y.
double dequant_floor_bytes(const DequantShape& s);
/// 2 * M * N * K.
double dequant_flops(const DequantShape& s);

inline constexpr const char* kDequantSource = "embedded:workloads/dequant_gemm.tile";

} // namespace tilejit::workloads
