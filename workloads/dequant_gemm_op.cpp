// tilejit::ops::repack_int4, dequant_linear and int8_linear (<tilejit/ops.h>): dequant_gemm's
// kernels (kernels_src/workloads/dequant_gemm.tile) for an application's own tensors. The checks
// come first and name the tensor; the launches are the Runtime's (tuned configurations).
#include "runtime/cuda_driver.h"
#include "runtime/device_buffer.h"
#include "support/error.h"
#include "workloads/op_buffers.h"
#include "workloads/op_checks.h"

#include <tilejit/ops.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

namespace tilejit::ops {
namespace {

const char* const kSource = "embedded:workloads/dequant_gemm.tile";
const OpChecks repack_checks("repack_int4");
const OpChecks linear_checks("dequant_linear");
const OpChecks int8_checks("int8_linear");

int64_t cdiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// The packed form's group: one group (-1) is stored as groups of 128 rows, repeated.
int64_t packed_group(int64_t group_size) {
  return group_size < 0 ? 128 : group_size;
}

/// A contiguous tensor's bytes, copied to the host (synchronously).
std::vector<char> download(const Tensor& t) {
  std::vector<char> host(static_cast<size_t>(t.numel()) * dtype_size(t.dtype));
  if (host.empty()) return host;
  CudaDriver& d = CudaDriver::get();
  d.ensure_context(t.device_index);
  d.check(d.cuMemcpyDtoH(host.data(), reinterpret_cast<cu::CUdeviceptr>(t.data), host.size()),
          "cuMemcpyDtoH");
  return host;
}

void upload(const Tensor& t, const void* host, size_t bytes) {
  if (bytes == 0) return;
  CudaDriver& d = CudaDriver::get();
  d.ensure_context(t.device_index);
  d.check(d.cuMemcpyHtoD(reinterpret_cast<cu::CUdeviceptr>(t.data), host, bytes), "cuMemcpyHtoD");
}

/// The permutation that makes act-order groups contiguous: rows sorted by group (stable).
/// Every g_idx entry must name a group and every group hold G rows (the last the rest), as
/// GPTQ's act-order writes them: the packed kernel reads G consecutive rows per group.
std::vector<int32_t> act_order_permutation(const std::vector<int32_t>& g_idx, int64_t groups,
                                           int64_t group, int64_t k) {
  std::vector<int64_t> count(static_cast<size_t>(groups), 0);
  for (size_t i = 0; i < g_idx.size(); ++i) {
    if (g_idx[i] < 0 || g_idx[i] >= groups)
      throw Error(str("repack_int4: tensor 'g_idx': g_idx[", i, "] = ", g_idx[i],
                      " is out of range for ", groups, " groups (scales has ", groups, " rows)"));
    ++count[static_cast<size_t>(g_idx[i])];
  }
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t want = std::min(group, k - g * group);
    if (count[static_cast<size_t>(g)] != want)
      throw Error(str("repack_int4: tensor 'g_idx' puts ", count[static_cast<size_t>(g)],
                      " rows in group ", g, " but a group of size ", group, " holds ", want,
                      " (GPTQ act-order gives every group G rows; the packed kernel needs "
                      "that)"));
  }
  std::vector<int32_t> perm(static_cast<size_t>(k));
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int32_t a, int32_t b) { return g_idx[a] < g_idx[b]; });
  return perm;
}

/// A linear's output: the caller's y, or [M, N] in x's dtype allocated beside x.
LinearResult output_for(const std::optional<Tensor>& y, const Tensor& x, int64_t n) {
  LinearResult out;
  if (y) {
    out.y = *y;
  } else {
    auto owned = std::make_shared<OwnedBuffers>();
    out.y = owned->allocate(x.dtype, {x.shape[0], n}, x.device_index);
    out.storage = owned;
  }
  return out;
}

} // namespace

void check_repack_int4(const RepackInt4Args& a) {
  const OpChecks& c = repack_checks;
  c.rank_and_dtype("qweight", a.qweight, 2, {DType::I32}, "[K/8, N] (8 rows of K per int32)");
  const int64_t k = a.qweight.shape[0] * 8, n = a.qweight.shape[1];
  if (a.group_size != 32 && a.group_size != 64 && a.group_size != 128 && a.group_size != -1)
    throw Error(str("repack_int4: group_size = ", a.group_size,
                    " is not one of 32, 64, 128, -1 (one group)"));
  const int64_t groups = a.group_size < 0 ? 1 : cdiv(k, a.group_size);
  c.rank_and_dtype("scales", a.scales, 2, {DType::F16, DType::BF16}, "[K/G, N]");
  c.size("scales", a.scales, 0, groups, "the groups of K = 8 * qweight's rows, K/G");
  c.size("scales", a.scales, 1, n, "qweight's columns N");
  c.rank_and_dtype("qzeros", a.qzeros, 2, {DType::I32}, "[K/G, N/8] (8 columns per int32)");
  c.size("qzeros", a.qzeros, 0, groups, "the groups of K, K/G");
  c.size("qzeros", a.qzeros, 1, cdiv(n, 8), "qweight's columns N / 8, rounded up");
  c.contiguous("scales", a.scales);
  c.contiguous("qzeros", a.qzeros);
  if (a.g_idx) {
    c.rank_and_dtype("g_idx", *a.g_idx, 1, {DType::I32}, "[K] (the group of each row of K)");
    c.size("g_idx", *a.g_idx, 0, k, "K = 8 * qweight's rows");
    c.contiguous("g_idx", *a.g_idx);
  }
  const int given = !!a.qweight_t + !!a.scales_out + !!a.qzeros_out + !!a.perm;
  if (given != 0 && given != 4)
    throw Error("repack_int4: give all four outputs (qweight_t, scales_out, qzeros_out, perm) "
                "or none");
  if (given) {
    const int64_t pg = cdiv(k, packed_group(a.group_size));
    c.rank_and_dtype("qweight_t", *a.qweight_t, 2, {DType::I32}, "[N, K/8]");
    c.size("qweight_t", *a.qweight_t, 0, n, "N");
    c.size("qweight_t", *a.qweight_t, 1, k / 8, "K/8");
    c.rank_and_dtype("scales_out", *a.scales_out, 2, {a.scales.dtype}, "[K/G, N], scales' dtype");
    c.size("scales_out", *a.scales_out, 0, pg, "the packed groups (one group: K/128)");
    c.size("scales_out", *a.scales_out, 1, n, "N");
    c.rank_and_dtype("qzeros_out", *a.qzeros_out, 2, {DType::I32}, "[K/G, N/8]");
    c.size("qzeros_out", *a.qzeros_out, 0, pg, "the packed groups (one group: K/128)");
    c.size("qzeros_out", *a.qzeros_out, 1, cdiv(n, 8), "N / 8, rounded up");
    c.rank_and_dtype("perm", *a.perm, 1, {DType::I32}, "[K]");
    c.size("perm", *a.perm, 0, k, "K");
    c.contiguous("scales_out", *a.scales_out);
    c.contiguous("qzeros_out", *a.qzeros_out);
    c.contiguous("perm", *a.perm);
  }
  c.on_one_gpu({{"qweight", &a.qweight},
                {"scales", &a.scales},
                {"qzeros", &a.qzeros},
                {"g_idx", a.g_idx ? &*a.g_idx : nullptr},
                {"qweight_t", a.qweight_t ? &*a.qweight_t : nullptr},
                {"scales_out", a.scales_out ? &*a.scales_out : nullptr},
                {"qzeros_out", a.qzeros_out ? &*a.qzeros_out : nullptr},
                {"perm", a.perm ? &*a.perm : nullptr}});
}

Int4Weights repack_int4(Runtime& rt, const RepackInt4Args& a) {
  check_repack_int4(a);
  const int64_t k = a.qweight.shape[0] * 8, n = a.qweight.shape[1];
  const int64_t group = packed_group(a.group_size), groups = cdiv(k, group);
  const int device = a.qweight.device_index;
  Int4Weights w;
  w.group = group;
  w.act_order = a.g_idx.has_value();
  if (a.qweight_t) {
    w.qweight_t = *a.qweight_t;
    w.scales = *a.scales_out;
    w.qzeros = *a.qzeros_out;
    w.perm = *a.perm;
  } else {
    auto owned = std::make_shared<OwnedBuffers>();
    w.qweight_t = owned->allocate(DType::I32, {n, k / 8}, device);
    w.scales = owned->allocate(a.scales.dtype, {groups, n}, device);
    w.qzeros = owned->allocate(DType::I32, {groups, cdiv(n, 8)}, device);
    w.perm = owned->allocate(DType::I32, {k}, device);
    w.storage = owned;
  }
  // The permutation of K (host-side: a sort of K integers, once per model load).
  std::vector<int32_t> perm(static_cast<size_t>(k));
  if (a.g_idx) {
    const std::vector<char> bytes = download(*a.g_idx);
    std::vector<int32_t> g_idx(static_cast<size_t>(k));
    std::memcpy(g_idx.data(), bytes.data(), bytes.size());
    perm = act_order_permutation(g_idx, a.scales.shape[0], a.group_size < 0 ? k : a.group_size, k);
  } else {
    std::iota(perm.begin(), perm.end(), 0);
  }
  upload(w.perm, perm.data(), perm.size() * sizeof(int32_t));
  // Scales and zeros as they are, or one group's repeated per 128 rows.
  const std::vector<char> scales = download(a.scales), zeros = download(a.qzeros);
  const int64_t copies = a.group_size < 0 ? groups : 1;
  std::vector<char> scales_out, zeros_out;
  for (int64_t i = 0; i < copies; ++i) {
    scales_out.insert(scales_out.end(), scales.begin(), scales.end());
    zeros_out.insert(zeros_out.end(), zeros.begin(), zeros.end());
  }
  upload(w.scales, scales_out.data(), scales_out.size());
  upload(w.qzeros, zeros_out.data(), zeros_out.size());
  if (n > 0 && k > 0) {
    KernelRef kernel = rt.load(kSource, "w4_repack");
    LaunchOptions lo;
    lo.stream = a.stream;
    rt.launch(kernel, {Arg::of(a.qweight), Arg::of(w.perm), Arg::of(w.qweight_t)}, lo);
  }
  return w;
}

void check_dequant_linear(const DequantLinearArgs& a) {
  const OpChecks& c = linear_checks;
  const Int4Weights& w = a.weights;
  c.rank_and_dtype("weights.qweight_t", w.qweight_t, 2, {DType::I32}, "[N, K/8] (repack_int4's)");
  const int64_t n = w.qweight_t.shape[0], k = w.qweight_t.shape[1] * 8;
  if (w.group != 32 && w.group != 64 && w.group != 128)
    throw Error(str("dequant_linear: weights.group = ", w.group, " is not 32, 64 or 128"));
  c.rank_and_dtype("weights.scales", w.scales, 2, {DType::F16, DType::BF16}, "[K/G, N]");
  c.size("weights.scales", w.scales, 0, cdiv(k, w.group), "K/G");
  c.size("weights.scales", w.scales, 1, n, "N");
  c.rank_and_dtype("weights.qzeros", w.qzeros, 2, {DType::I32}, "[K/G, N/8]");
  c.size("weights.qzeros", w.qzeros, 0, cdiv(k, w.group), "K/G");
  c.size("weights.qzeros", w.qzeros, 1, cdiv(n, 8), "N / 8, rounded up");
  c.rank_and_dtype("weights.perm", w.perm, 1, {DType::I32}, "[K]");
  c.size("weights.perm", w.perm, 0, k, "K");
  c.rank_and_dtype("x", a.x, 2, {w.scales.dtype}, "[M, K], the scales' dtype");
  if (a.x.shape[1] % 8 != 0)
    throw Error(str(c.named("x", a.x), ": K = ", a.x.shape[1],
                    " is not a multiple of 8 (GPTQ packs 8 rows of K per int32)"));
  c.size("x", a.x, 1, k, "the weights' K (8 * qweight's rows)");
  if (a.y) {
    c.rank_and_dtype("y", *a.y, 2, {a.x.dtype}, "[M, N], x's dtype");
    c.size("y", *a.y, 0, a.x.shape[0], "x's rows M");
    c.size("y", *a.y, 1, n, "the weights' N");
  }
  c.on_one_gpu({{"x", &a.x},
                {"weights.qweight_t", &w.qweight_t},
                {"weights.scales", &w.scales},
                {"weights.qzeros", &w.qzeros},
                {"weights.perm", &w.perm},
                {"y", a.y ? &*a.y : nullptr}});
}

LinearResult dequant_linear(Runtime& rt, const DequantLinearArgs& a) {
  check_dequant_linear(a);
  const Int4Weights& w = a.weights;
  const int64_t m = a.x.shape[0], n = w.qweight_t.shape[0];
  LinearResult out = output_for(a.y, a.x, n);
  if (m == 0 || n == 0) return out; // nothing to compute (a grid of zero programs)
  static const std::string source = kSource;
  KernelRef kernel = rt.load(source, "w4a16_tc");
  thread_local std::vector<Arg> args(6);
  thread_local LaunchOptions lo;
  const Tensor* views[] = {&a.x, &w.qweight_t, &w.scales, &w.qzeros, &w.perm, &out.y};
  for (int i = 0; i < 6; ++i) args[i] = Arg::of(*views[i]);
  lo.stream = a.stream;
  // The forced values are rebuilt only when they change: a decode loop calls this per linear.
  thread_local Config forced;
  thread_local int64_t forced_group = -1;
  thread_local int forced_act = -1;
  if (forced_group != w.group || forced_act != int(w.act_order) || forced != a.config) {
    forced = a.config;
    forced_group = w.group;
    forced_act = w.act_order;
    lo.config = a.config;
    lo.config["G"] = std::to_string(w.group);
    lo.config["ACT"] = w.act_order ? "1" : "0";
    // Groups of 32 or 64 rule out the kernel's default BK of 128 (a K tile lies inside one
    // group): the runtime then stands in the valid configuration nearest the defaults.
  }
  rt.launch(kernel, args, lo);
  return out;
}

void check_int8_linear(const Int8LinearArgs& a) {
  const OpChecks& c = int8_checks;
  c.rank_and_dtype("x", a.x, 2, {DType::F16, DType::BF16}, "[M, K]");
  c.rank_and_dtype("w", a.w, 2, {DType::I8}, "[N, K] int8");
  c.size("w", a.w, 1, a.x.shape[1], "x's K");
  c.rank_and_dtype("scales", a.scales, 1, {a.x.dtype}, "[N], x's dtype");
  c.size("scales", a.scales, 0, a.w.shape[0], "w's rows N");
  if (a.y) {
    c.rank_and_dtype("y", *a.y, 2, {a.x.dtype}, "[M, N], x's dtype");
    c.size("y", *a.y, 0, a.x.shape[0], "x's rows M");
    c.size("y", *a.y, 1, a.w.shape[0], "w's rows N");
  }
  c.on_one_gpu({{"x", &a.x}, {"w", &a.w}, {"scales", &a.scales}, {"y", a.y ? &*a.y : nullptr}});
}

LinearResult int8_linear(Runtime& rt, const Int8LinearArgs& a) {
  check_int8_linear(a);
  const int64_t m = a.x.shape[0], n = a.w.shape[0];
  LinearResult out = output_for(a.y, a.x, n);
  if (m == 0 || n == 0) return out;
  static const std::string source = kSource;
  KernelRef kernel = rt.load(source, "w8a16_mma");
  thread_local std::vector<Arg> args(4);
  thread_local LaunchOptions lo;
  const Tensor* views[] = {&a.x, &a.w, &a.scales, &out.y};
  for (int i = 0; i < 4; ++i) args[i] = Arg::of(*views[i]);
  lo.stream = a.stream;
  if (lo.config != a.config) lo.config = a.config;
  rt.launch(kernel, args, lo);
  return out;
}

} // namespace tilejit::ops
