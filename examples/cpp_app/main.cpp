// A C++ application on tilejit's public API only (<tilejit/...>): load a shipped kernel, look at
// its declaration, compile it (NVRTC, no GPU needed), check a paged_sparse call's arguments, and
// on a GPU run paged_sparse decode with the tuned configuration of the tuning database.
#include <tilejit/device_memory.h>
#include <tilejit/ops.h>
#include <tilejit/tilejit.h>
#include <tilejit/tuning.h>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  tilejit::RuntimeOptions options;
  tilejit::Runtime probe;
  if (!probe.has_gpu()) options.arch = "sm_90a"; // compile for Hopper without a GPU
  tilejit::Runtime rt(options);
  tilejit::KernelRef k = rt.load("embedded:workloads/paged_sparse.tile");
  tilejit::KernelInfo info = rt.kernel_info(k);
  std::printf("kernel %s: %zu parameters, %zu tunables\n", info.name.c_str(), info.params.size(),
              info.tunables.size());

  // Shapes only (no memory behind these views): enough to compile and to check.
  const int64_t B = 2, HQ = 28, HKV = 4, D = 128, PS = 16, PAGES = 64, MAXP = 64, MAXK = 100;
  auto view = [](tilejit::DType t, std::vector<int64_t> shape) {
    return tilejit::Tensor::contiguous(reinterpret_cast<void*>(4096), t, std::move(shape));
  };
  tilejit::ops::PagedSparseDecodeArgs a;
  a.q = view(tilejit::DType::F16, {B, HQ, D});
  a.k_cache = view(tilejit::DType::F16, {PAGES, PS, HKV, D});
  a.v_cache = a.k_cache;
  a.block_table = view(tilejit::DType::I32, {B, MAXP});
  a.seq_lens = view(tilejit::DType::I32, {B});
  a.kept_idx = view(tilejit::DType::I32, {B, HKV, MAXK});
  a.kept_len = view(tilejit::DType::I32, {B, HKV});
  tilejit::ops::check_paged_sparse_decode(a);
  try {
    a.kept_len = view(tilejit::DType::I32, {B, HKV + 1});
    tilejit::ops::check_paged_sparse_decode(a);
    std::printf("a bad kept_len was accepted\n");
    return 1;
  } catch (const tilejit::Error& e) {
    std::printf("bad input is named: %s\n", e.what());
  }
  a.kept_len = view(tilejit::DType::I32, {B, HKV});

  tilejit::CompileReport r =
      rt.compile(k, {{"T", "f16"}, {"D", "128"}, {"G", "7"}, {"PS", "16"}}, {});
  std::printf("compiled %s for %s: %d registers, %d threads, %lld bytes of shared memory\n",
              r.entry.c_str(), r.arch.c_str(), r.registers, r.threads,
              static_cast<long long>(r.smem_bytes));
  if (!rt.has_gpu()) {
    std::printf("no GPU: compiled and checked only\n");
    return 0;
  }

  // On a GPU: q, K and V all ones, so every kept score is D * scale, the softmax is uniform,
  // o is exactly 1 and lse = D * scale + ln(kept).
  const uint16_t one = 0x3c00; // f16 1.0
  std::vector<uint16_t> q_h(B * HQ * D, one), kv_h(PAGES * PS * HKV * D, one);
  std::vector<int32_t> table_h(B * MAXP), lens_h(B, 1000), kept_h(B * HKV * MAXK),
      kept_n_h(B * HKV, MAXK);
  for (int64_t i = 0; i < B * MAXP; ++i) table_h[i] = static_cast<int32_t>(i % MAXP);
  for (int64_t i = 0; i < B * HKV * MAXK; ++i) kept_h[i] = static_cast<int32_t>((i % MAXK) * 10);
  auto upload = [](const auto& host) {
    tilejit::DeviceMemory m(host.size() * sizeof(host[0]));
    m.upload(host.data(), m.size());
    return m;
  };
  tilejit::DeviceMemory q = upload(q_h), kv = upload(kv_h), table = upload(table_h),
                        lens = upload(lens_h), kept = upload(kept_h), kept_n = upload(kept_n_h);
  tilejit::DeviceMemory o(B * HQ * D * 2), lse(B * HQ * 4);
  a.q = q.view(tilejit::DType::F16, {B, HQ, D});
  a.k_cache = a.v_cache = kv.view(tilejit::DType::F16, {PAGES, PS, HKV, D});
  a.block_table = table.view(tilejit::DType::I32, {B, MAXP});
  a.seq_lens = lens.view(tilejit::DType::I32, {B});
  a.kept_idx = kept.view(tilejit::DType::I32, {B, HKV, MAXK});
  a.kept_len = kept_n.view(tilejit::DType::I32, {B, HKV});
  a.o = o.view(tilejit::DType::F16, {B, HQ, D});
  a.lse = lse.view(tilejit::DType::F32, {B, HQ});
  tilejit::use_tuning_database(rt); // the CLI's database: tuned winners, else defaults
  tilejit::ops::paged_sparse_decode(rt, a);
  std::vector<uint16_t> o_h(B * HQ * D);
  std::vector<float> lse_h(B * HQ);
  o.download(o_h.data(), o.size()); // on the default stream, after the launch
  lse.download(lse_h.data(), lse.size());
  const double want = D / std::sqrt(static_cast<double>(D)) + std::log(static_cast<double>(MAXK));
  for (size_t i = 0; i < o_h.size(); ++i)
    if (o_h[i] != one) {
      std::printf("o[%zu] = 0x%04x, not 1.0\n", i, o_h[i]);
      return 1;
    }
  for (float l : lse_h)
    if (std::fabs(l - want) > 1e-3 * want) {
      std::printf("lse = %f, not %f\n", l, want);
      return 1;
    }
  std::printf("paged_sparse_decode on %s: o and lse as expected\n", rt.device().name.c_str());
  return 0;
}
