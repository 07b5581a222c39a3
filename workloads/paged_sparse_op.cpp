// tilejit::ops::paged_sparse_decode (<tilejit/ops.h>): the paged_sparse kernel for an
// application's own tensors. The checks come first and name the tensor; the launch is the
// Runtime's (tuned configuration, argument checks against the kernel's declaration).
#include "runtime/device_buffer.h"
#include "support/error.h"
#include "workloads/op_checks.h"
#include "workloads/paged_sparse.h"

#include <tilejit/ops.h>

#include <cmath>
#include <utility>

namespace tilejit::ops {
namespace {
const OpChecks checks("paged_sparse_decode");
} // namespace

void check_paged_sparse_decode(const PagedSparseDecodeArgs& a) {
  checks.rank_and_dtype("q", a.q, 3, {DType::F16, DType::BF16}, "[B, Hq, D]");
  checks.rank_and_dtype("k_cache", a.k_cache, 4, {a.q.dtype}, "[pages, page_size, Hkv, D]");
  checks.rank_and_dtype("v_cache", a.v_cache, 4, {a.q.dtype}, "[pages, page_size, Hkv, D]");
  checks.rank_and_dtype("block_table", a.block_table, 2, {DType::I32}, "[B, max_pages]");
  checks.rank_and_dtype("seq_lens", a.seq_lens, 1, {DType::I32}, "[B]");
  checks.rank_and_dtype("kept_idx", a.kept_idx, 3, {DType::I32}, "[B, Hkv, max_kept]");
  checks.rank_and_dtype("kept_len", a.kept_len, 2, {DType::I32}, "[B, Hkv]");
  const int64_t B = a.q.shape[0], HQ = a.q.shape[1], D = a.q.shape[2];
  const int64_t PS = a.k_cache.shape[1], HKV = a.k_cache.shape[2];
  if (D != 64 && D != 96 && D != 128 && D != 256)
    throw Error(
        str(checks.named("q", a.q), ": head dim D = ", D, " is not one of 64, 96, 128, 256"));
  for (int d = 0; d < 4; ++d)
    if (a.v_cache.shape[d] != a.k_cache.shape[d])
      throw Error(str(checks.named("v_cache", a.v_cache), " must have k_cache's shape [",
                      a.k_cache.shape[0], ", ", PS, ", ", HKV, ", ", a.k_cache.shape[3], "]"));
  checks.size("k_cache", a.k_cache, 3, D, "q's head dim D");
  if (PS != 8 && PS != 16 && PS != 32 && PS != 64 && PS != 128 && PS != 256)
    throw Error(str(checks.named("k_cache", a.k_cache), ": page size ", PS,
                    " (dimension 1) is not one of 8, 16, 32, 64, 128, 256"));
  if (HKV < 1 || HQ % HKV != 0 || HQ / HKV > 16)
    throw Error(str(checks.named("q", a.q), " has Hq = ", HQ, " heads and k_cache Hkv = ", HKV,
                    ": Hq must be a multiple of Hkv, at most 16 times it"));
  checks.size("block_table", a.block_table, 0, B, "q's batch B");
  checks.size("seq_lens", a.seq_lens, 0, B, "q's batch B");
  checks.size("kept_idx", a.kept_idx, 0, B, "q's batch B");
  checks.size("kept_idx", a.kept_idx, 1, HKV, "k_cache's kv heads Hkv");
  checks.size("kept_len", a.kept_len, 0, B, "q's batch B");
  checks.size("kept_len", a.kept_len, 1, HKV, "k_cache's kv heads Hkv");
  if (a.o) {
    checks.rank_and_dtype("o", *a.o, 3, {a.q.dtype}, "[B, Hq, D], q's shape");
    for (int d = 0; d < 3; ++d) checks.size("o", *a.o, d, a.q.shape[d], "q's size");
    checks.rows_dense("o", *a.o);
  }
  if (a.lse) {
    checks.rank_and_dtype("lse", *a.lse, 2, {DType::F32}, "[B, Hq]");
    checks.size("lse", *a.lse, 0, B, "q's batch B");
    checks.size("lse", *a.lse, 1, HQ, "q's heads Hq");
  }
  checks.rows_dense("q", a.q);
  checks.rows_dense("k_cache", a.k_cache);
  checks.rows_dense("v_cache", a.v_cache);
  if (a.scale && !std::isfinite(*a.scale))
    throw Error(str("paged_sparse_decode: scale = ", *a.scale, " is not finite"));
  // Devices last: the shapes are the likelier mistake, and they can be checked on any machine.
  checks.on_one_gpu({{"q", &a.q},
                     {"k_cache", &a.k_cache},
                     {"v_cache", &a.v_cache},
                     {"block_table", &a.block_table},
                     {"seq_lens", &a.seq_lens},
                     {"kept_idx", &a.kept_idx},
                     {"kept_len", &a.kept_len},
                     {"o", a.o ? &*a.o : nullptr},
                     {"lse", a.lse ? &*a.lse : nullptr}});
}

PagedSparseDecodeResult paged_sparse_decode(Runtime& rt, const PagedSparseDecodeArgs& a) {
  check_paged_sparse_decode(a);
  PagedSparseDecodeResult out;
  const int64_t B = a.q.shape[0], HQ = a.q.shape[1];
  struct Outputs {
    DeviceBuffer o, lse;
  };
  std::shared_ptr<Outputs> owned;
  if (!a.o || !a.lse) owned = std::make_shared<Outputs>();
  // An empty output (B = 0) needs no memory: cuMemAlloc refuses zero bytes.
  auto allocate = [&](DeviceBuffer& buffer, DType dtype, std::vector<int64_t> shape) {
    Tensor t = Tensor::contiguous(nullptr, dtype, std::move(shape));
    t.device_index = a.q.device_index;
    if (size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(dtype)) {
      buffer = DeviceBuffer(bytes, a.q.device_index);
      t.data = buffer.data();
    }
    return t;
  };
  out.o = a.o ? *a.o : allocate(owned->o, a.q.dtype, a.q.shape);
  out.lse = a.lse ? *a.lse : allocate(owned->lse, DType::F32, {B, HQ});
  if (!a.o || !a.lse) out.storage = owned;
  const double scale = a.scale ? *a.scale : 1.0 / std::sqrt(static_cast<double>(a.q.shape[2]));
  static const std::string source = workloads::kPagedSparseSource;
  KernelRef k = rt.load(source); // a lookup after the first call
  // The thread's own argument list, copy-assigned: after the first call of a shape nothing is
  // allocated here (the host cost of a launch is a Python caller's budget too).
  thread_local std::vector<Arg> args(10);
  thread_local LaunchOptions lo;
  const Tensor* views[] = {&a.q,        &a.k_cache,  &a.v_cache, &a.block_table, &a.seq_lens,
                           &a.kept_idx, &a.kept_len, &out.o,     &out.lse};
  for (int i = 0; i < 9; ++i) {
    args[i].is_tensor = true;
    args[i].tensor = *views[i];
  }
  args[9] = Arg::f32(static_cast<float>(scale));
  lo.stream = a.stream;
  if (!a.config.empty() || lo.config.size() != 1) lo.config = a.config;
  lo.config["G"] = std::to_string(HQ / a.k_cache.shape[2]);
  rt.launch(k, args, lo);
  return out;
}

} // namespace tilejit::ops
