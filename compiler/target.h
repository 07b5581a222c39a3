// A compile target: what differs between GPUs, in one place, so that the passes ask the target
// instead of assuming an NVIDIA GPU, and a second backend (HIP for AMD: wave64 gfx90a with MFMA,
// wave32 gfx1030 without matrix cores) is a new Target, not a fork of the compiler.
//
// The compiler side lives here (warp size, matrix-instruction shapes and the layout of their
// accumulators, shared memory, asynchronous copies, the emitter); the run-time side (the
// run-time compiler, the module loader) is runtime/toolchain.h, which picks its half by the same
// arch string.
#pragma once

#include "compiler/layout.h"
#include "dsl/source.h"

#include <tilejit/dtype.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tilejit {

namespace ir {
struct Kernel;
}

/// A subscript checked in debug mode (ir::Kernel::debug_bounds): what the runtime names when
/// the check fails. The kernel records the first failure as this site's number (1-based).
struct BoundsSite {
  dsl::SourceLoc loc; ///< the access's '['
  std::string tensor;
  int dim = 0;
  std::string dim_name; ///< as declared ("B", "1|B", "128")
  bool gather = false;
};

/// A tensor map (CUtensorMap) a kernel takes after its parameters, one per tensor and box
/// that its TMA copies fetch: the launcher encodes it from the argument (runtime/tma_map.h).
struct TmaMapSpec {
  int param = -1;    ///< which parameter (a tensor of rank 2 to 5)
  int box_rows = 0;  ///< the box: rows (outer) x box_cols (inner) elements
  int box_cols = 64; ///< 128 bytes of 16-bit elements: one swizzle span
  int elem_bytes = 2;
  /// 128: the 128-byte swizzle (a 2-D tile wgmma reads); 0: none (a run of one row, box_rows 1).
  int swizzle = 128;
  bool operator==(const TmaMapSpec& o) const {
    return param == o.param && box_rows == o.box_rows && box_cols == o.box_cols &&
           elem_bytes == o.elem_bytes && swizzle == o.swizzle;
  }
};

/// Source code one backend generated for one kernel variant, and what a launch needs.
struct GeneratedKernel {
  std::string source;
  std::string entry;             ///< the kernel function's name
  std::string language = "cuda"; ///< which run-time compiler takes it ("cuda"; "hip" later)
  int threads = 128;
  int64_t smem_bytes = 0; ///< dynamic shared memory to launch with
  /// Debug mode: the kernel takes one more argument, a tj::BoundsRecord* (zeroed), after the
  /// parameters; a nonzero `site` there after the launch is bounds_sites[site - 1].
  bool debug_bounds = false;
  std::vector<BoundsSite> bounds_sites;
  /// Tensor maps passed after the parameters (before the debug record), in this order.
  std::vector<TmaMapSpec> tma_maps;
};

/// The tile one matrix instruction computes: M x N outputs, K deep.
struct MatrixShape {
  int m = 16, n = 8, k = 16;
};

class Target {
public:
  virtual ~Target() = default;
  /// "sm_90a", "sm_80", "gfx90a": what the run-time compiler is asked for.
  virtual const std::string& arch() const = 0;
  /// The language its emitter writes, which names the run-time toolchain ("cuda").
  virtual const std::string& language() const = 0;
  /// Threads that run in lockstep (32 on NVIDIA GPUs, 64 or 32 on AMD ones).
  virtual int warp_size() const = 0;
  virtual int max_threads_per_block() const { return 1024; }
  /// Resident threads one multiprocessor holds (sm_80 and sm_90: 2048).
  virtual int max_threads_per_sm() const { return 2048; }
  /// Bytes of kernel parameters a launch may pass (CUDA 12.1+ on Volta and newer: 32764).
  virtual int64_t max_parameter_bytes() const { return 32764; }
  /// Shared memory a block may use when the device does not say (its limit when it does).
  virtual int shared_memory_per_block() const = 0;
  /// The matrix instruction `dot` lowers to for `operand` inputs, or nullopt-like {0,0,0} when
  /// the target has none (dot then runs on FMA).
  virtual MatrixShape matrix_shape(DType operand) const = 0;
  /// The register layout of a dot's M x N accumulator with `wm` x `wn` warps.
  virtual const ir::Layout* accumulator_layout(ir::LayoutTable& table, int64_t m, int64_t n, int wm,
                                               int wn, int threads) const = 0;
  /// Whether `dot` runs on NVIDIA's tensor cores, whose operand fragments can come from
  /// registers (an earlier dot's accumulator, unpacked int4). Without them (the AMD targets)
  /// both operands are staged in shared memory and the dot reads them from there: on gfx1030
  /// each thread sums its own accumulator elements' products on the FMA units (tj::dot_fma),
  /// on gfx90a each wave feeds the MFMA matrix cores (tj::dot_mfma).
  virtual bool matrix_units() const { return true; }
  /// Whether copies into shared memory can run asynchronously (cp.async).
  virtual bool async_copy() const = 0;
  /// Whether programs can form thread block clusters that read each other's shared memory.
  virtual bool clusters() const { return false; }
  /// Whether a warpgroup (4 warps) can run one matrix instruction over 64 rows with B read
  /// from swizzled shared memory, asynchronously (Hopper's wgmma: sm_90a only).
  virtual bool warpgroup_mma() const { return false; }
  /// Whether shared memory can be added into global memory by the bulk copy engine, one
  /// instruction per contiguous run (cp.reduce.async.bulk .add.f32: sm_90 and later).
  virtual bool bulk_reduce() const { return false; }
  /// The backend: source text for a fully lowered kernel (every pass run).
  virtual GeneratedKernel emit(const ir::Kernel& k) const = 0;
};

/// `limit` (a caller's or a GPU's shared memory per block) within what `target` allows at all:
/// 64 KiB of LDS on the AMD targets, whatever an NVIDIA default said.
inline int64_t shared_memory_within(const Target& target, int64_t limit) {
  return limit < target.shared_memory_per_block() ? limit : target.shared_memory_per_block();
}

/// The target for an arch name ("sm_80", "sm_90", "sm_90a", "sm_100a"...). Throws tilejit::Error
/// naming the supported ones for anything else.
const Target& target_for(const std::string& arch);
/// The arch compiled for when neither the caller nor a GPU says: sm_90a (Hopper).
const std::string& default_arch();

} // namespace tilejit
