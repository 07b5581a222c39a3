#include "compiler/target.h"

#include "compiler/cuda/cuda_emitter.h"
#include "compiler/ir.h"
#include "support/error.h"
#include "support/text.h"

#include <map>
#include <mutex>
#include <regex>

namespace tilejit {
namespace {

/// NVIDIA GPUs: warps of 32, m16n8k16 tensor-core instructions (mma.sync) whose accumulators
/// are the MmaAcc layout, cp.async from sm_80 on, CUDA C++ for NVRTC.
class CudaTarget final : public Target {
public:
  CudaTarget(std::string arch, int cc) : arch_(std::move(arch)), cc_(cc) {}
  const std::string& arch() const override { return arch_; }
  const std::string& language() const override {
    static const std::string s = "cuda";
    return s;
  }
  int warp_size() const override { return 32; }
  int shared_memory_per_block() const override {
    // The opt-in limits of the architectures (a GPU's own limit replaces this at run time).
    if (cc_ >= 90) return 227 * 1024;
    if (cc_ == 80 || cc_ == 87) return 163 * 1024;
    if (cc_ >= 86) return 99 * 1024;
    if (cc_ >= 70) return 96 * 1024;
    return 48 * 1024;
  }
  MatrixShape matrix_shape(DType operand) const override {
    if ((operand == DType::F16 || operand == DType::BF16) && cc_ >= 80) return {16, 8, 16};
    if (operand == DType::F32 && cc_ >= 80) return {16, 8, 8}; // TF32 (and 3xTF32 when exact)
    return {0, 0, 0};
  }
  const ir::Layout* accumulator_layout(ir::LayoutTable& table, int64_t m, int64_t n, int wm, int wn,
                                       int threads) const override {
    return table.mma_acc(m, n, wm, wn, threads);
  }
  bool async_copy() const override { return cc_ >= 80; }
  bool clusters() const override { return cc_ >= 90; }
  // wgmma is an sm_90a feature: plain sm_90 code (and Blackwell's sm_100a) has none.
  bool warpgroup_mma() const override { return cc_ == 90 && arch_.back() == 'a'; }
  bool bulk_reduce() const override { return cc_ >= 90; }
  GeneratedKernel emit(const ir::Kernel& k) const override { return cuda::generate_cuda(k); }

private:
  std::string arch_;
  int cc_;
};

/// AMD GPUs through HIP (issue 19): the same emitted C++ with the portable prelude. gfx90a
/// (MI200) runs wavefronts of 64 with 64 KiB of LDS per workgroup, dot on its matrix cores
/// (MFMA, 16 x 16 blocks: the MfmaAcc layout, tj::dot_mfma); gfx1030 (RDNA2) wavefronts of 32,
/// dot on the FMA units in the m16n8 layout (tj::dot_fma). Both read dot's operands from shared
/// memory (no register-A path yet). No asynchronous copy.
class HipTarget final : public Target {
public:
  HipTarget(std::string arch, int wave) : arch_(std::move(arch)), wave_(wave) {}
  const std::string& arch() const override { return arch_; }
  const std::string& language() const override {
    static const std::string s = "hip";
    return s;
  }
  int warp_size() const override { return wave_; }
  int max_threads_per_sm() const override { return 2048; }
  int shared_memory_per_block() const override { return 64 * 1024; }
  /// gfx1030: dot on the FMA units in the m16n8 accumulator layout (its wavefront of 32 is the
  /// layout's warp). gfx90a: v_mfma_f32_16x16x16 (f16, bf16_1k) and 16x16x4 (f32).
  MatrixShape matrix_shape(DType operand) const override {
    const bool half = operand == DType::F16 || operand == DType::BF16;
    if (wave_ == 64)
      return half                    ? MatrixShape{16, 16, 16}
             : operand == DType::F32 ? MatrixShape{16, 16, 4}
                                     : MatrixShape{0, 0, 0};
    if (half) return {16, 8, 16};
    if (operand == DType::F32) return {16, 8, 8};
    return {0, 0, 0};
  }
  bool matrix_units() const override { return false; }
  const ir::Layout* accumulator_layout(ir::LayoutTable& table, int64_t m, int64_t n, int wm, int wn,
                                       int threads) const override {
    return wave_ == 64 ? table.mfma_acc(m, n, wm, wn, threads)
                       : table.mma_acc(m, n, wm, wn, threads);
  }
  bool async_copy() const override { return false; }
  GeneratedKernel emit(const ir::Kernel& k) const override { return cuda::generate_cuda(k); }

private:
  std::string arch_;
  int wave_;
};

} // namespace

const std::string& default_arch() {
  static const std::string arch = "sm_90a";
  return arch;
}

const Target& target_for(const std::string& arch) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Target>> targets;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = targets.find(arch);
  if (it != targets.end()) return *it->second;
  static const std::regex sm(R"(sm_([0-9]{2,3})a?)");
  std::smatch m;
  if (std::regex_match(arch, m, sm)) {
    int cc = std::stoi(m[1].str());
    if (cc < 80)
      throw Error(str("target '", arch, "': tilejit needs compute capability 8.0 or newer ",
                      "(tensor-core mma.sync on f16/bf16, cp.async)"));
    auto t = std::make_unique<CudaTarget>(arch, cc);
    return *(targets[arch] = std::move(t));
  }
  if (arch == "gfx90a" || arch == "gfx1030")
    return *(targets[arch] = std::make_unique<HipTarget>(arch, arch == "gfx90a" ? 64 : 32));
  throw Error(str("unknown target '", arch,
                  "': tilejit compiles for NVIDIA GPUs named sm_80, sm_86, sm_89, sm_90, sm_90a, "
                  "sm_100a and so on, and AMD GPUs gfx90a and gfx1030"));
}

} // namespace tilejit
