// The host cost of Runtime::launch over a bare cuLaunchKernel (issue: a lean launch path).
//
// CPU part (any machine; NVRTC compiles for sm_90a): per launch of a known shape, the host work
// before the driver call, for paged_sparse's 10 arguments:
//   - what every launch did up to ab1aed4: resolve_config (infer generics, plan, complete the
//     bindings) plus compile (build the variant key, look it up);
//   - what a launch does now: prepare (the launch signature, one hash lookup) plus packing.
// GPU part (when there is one): host time per call of back-to-back launches of a small kernel,
// issued in batches of 200 (fewer than the launch queue holds, so the host never waits on the
// GPU), through Runtime::launch and through cuLaunchKernel on the same cubin and arguments.
//
//   tilejit_launch_bench [--json FILE]
#include "runtime/cuda_driver.h"
#include "runtime/cuda_module.h"
#include "runtime/device_buffer.h"
#include "runtime/device_info.h"
#include "runtime/jit_compiler.h"
#include "runtime/kernel_args.h"
#include "runtime/runtime_access.h"
#include "support/text.h"
#include "tuner/first_use_tuning.h"
#include "workloads/paged_sparse_workload.h"
#include "workloads/problem_on_gpu.h"

#include <tilejit/tilejit.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>

namespace tilejit {
namespace {

using Clock = std::chrono::steady_clock;

/// Median over `rounds` of the mean time per call of `calls` calls of `f`, in microseconds.
template <typename F> double us_per_call(int rounds, int calls, F&& f) {
  std::vector<double> per;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) f();
    per.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls);
  }
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}

/// Packs `args` the way Runtime::launch does (scratch tensors as placeholders).
void pack(KernelArgs& packed, const dsl::Kernel& k, const std::vector<Arg>& args) {
  static const int64_t shape[5] = {3, 8, 64, 4, 128}, strides[5] = {1, 1, 1, 1, 1};
  packed.clear();
  size_t next = 0;
  for (const auto& p : k.params) {
    if (p.is_scratch) {
      packed.add_tensor(nullptr, shape, strides, p.type.dims.size(), true);
      continue;
    }
    const Arg& a = args[next++];
    if (a.is_tensor)
      packed.add_tensor(a.tensor, true);
    else
      packed.add_scalar(DType::F32, HostValue::of_float(a.f));
  }
  packed.pointers();
}

nlohmann::json cpu_part() {
  RuntimeOptions o;
  o.arch = "sm_90a";
  o.cache_dir = "";
  o.tune_on_first_use = false;
  Runtime rt(o);
  auto w = workloads::make_paged_sparse_workload();
  auto problem = std::move(w->cases(DType::F16).front());
  workloads::WorkloadKernels kernels(rt, *w);
  const workloads::Step step = problem->steps().front();
  KernelRef k = kernels.get(step.kernel);
  std::vector<Arg> args = workloads::shape_only_args(*problem, step);
  // Aligned, distinct fake addresses (nothing is launched).
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].is_tensor) args[i].tensor.data = reinterpret_cast<void*>((i + 1) << 24);
  LaunchOptions lo;
  lo.config = step.generics;
  rt.prepare(k, args, lo); // compiles once
  Config config = rt.resolve_config(k, args, step.generics);
  rt.compile(k, config, args);
  const dsl::Kernel& kernel = RuntimeAccess::kernel(rt, k);
  KernelArgs packed;
  double before = us_per_call(7, 2000, [&] {
    Config c = rt.resolve_config(k, args, step.generics);
    rt.compile(k, c, args);
  });
  double now = us_per_call(7, 20000, [&] {
    rt.prepare(k, args, lo);
    pack(packed, kernel, args);
  });
  std::cout << fmt::format("CPU, paged_sparse {} ({} arguments), host work before the driver "
                           "call, per launch:\n",
                           problem->name(), args.size());
  std::cout << fmt::format("  resolve_config + compile hit (every launch up to ab1aed4): {:8.2f} "
                           "us\n",
                           before);
  std::cout << fmt::format("  prepare hit + argument packing (every launch now):          {:8.2f} "
                           "us\n",
                           now);
  return {{"part", "cpu"},
          {"kernel", kernel.name},
          {"problem", problem->name()},
          {"before_us", before},
          {"prepare_and_pack_us", now}};
}

nlohmann::json gpu_part() {
  CudaDriver& driver = CudaDriver::get();
  driver.ensure_context(0);
  RuntimeOptions o;
  o.cache_dir = "";
  o.tune_on_first_use = false;
  Runtime rt(o);
  KernelRef k = rt.load("embedded:examples/softmax.tile");
  DeviceBuffer x(8 * 64 * 4), y(8 * 64 * 4);
  x.fill_byte(0);
  std::vector<Arg> args = {Arg::of(Tensor::contiguous(x.data(), DType::F32, {8, 64})),
                           Arg::of(Tensor::contiguous(y.data(), DType::F32, {8, 64}))};
  const PreparedLaunch& p = rt.prepare(k, args);
  const CompiledVariant& c = RuntimeAccess::compile(rt, k, p.config, args);
  CudaModule module = CudaModule::load(c.binary);
  cu::CUfunction f = module.function(c.entry);
  KernelArgs packed;
  for (const Arg& a : args) packed.add_tensor(a.tensor, c.index32);
  void** params = packed.pointers();
  constexpr int kBatch = 200;
  auto batch = [&](auto&& launch_one) {
    return [&, launch_one] {
      for (int i = 0; i < kBatch; ++i) launch_one();
    };
  };
  auto bare_one = [&] {
    driver.check(driver.cuLaunchKernel(
                     f, static_cast<unsigned>(p.grid[0]), 1, 1, static_cast<unsigned>(p.threads), 1,
                     1, static_cast<unsigned>(p.smem_bytes), nullptr, params, nullptr),
                 "cuLaunchKernel");
  };
  auto ours_one = [&] { rt.launch(k, args); };
  // Host time of the issue loop only; the GPU drains between batches.
  auto timed = [&](auto&& one) {
    std::vector<double> per;
    for (int r = 0; r < 30; ++r) {
      driver.check(driver.cuCtxSynchronize(), "cuCtxSynchronize");
      auto t0 = Clock::now();
      batch(one)();
      per.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kBatch);
    }
    driver.check(driver.cuCtxSynchronize(), "cuCtxSynchronize");
    std::sort(per.begin(), per.end());
    return per[per.size() / 2];
  };
  // A second runtime with the tuning database installed (what an application does): its
  // lookups happen once per shape, so its launches should cost what the first one's do.
  Runtime rt_db(o);
  KernelRef k_db = rt_db.load("embedded:examples/softmax.tile");
  use_tuning_database(rt_db, std::make_shared<TuneDatabase>("/tmp/tilejit_launch_bench.db"));
  auto ours_db_one = [&] { rt_db.launch(k_db, args); };
  timed(bare_one); // warm-up: module loads, first launches
  timed(ours_one);
  timed(ours_db_one);
  // Interleaved rounds, so that a clock or load change hits all three.
  std::vector<double> b, t, tdb;
  for (int r = 0; r < 7; ++r) {
    b.push_back(timed(bare_one));
    t.push_back(timed(ours_one));
    tdb.push_back(timed(ours_db_one));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double bare = median(b), ours = median(t), with_db = median(tdb);
  std::cout << fmt::format("GPU ({}), softmax 8x64 f32, host time per launch, back to back:\n",
                           query_device().name);
  std::cout << fmt::format("  cuLaunchKernel:                         {:6.2f} us\n", bare);
  std::cout << fmt::format("  Runtime::launch:                        {:6.2f} us (+{:.2f})\n", ours,
                           ours - bare);
  std::cout << fmt::format("  Runtime::launch, tuning database on:    {:6.2f} us (+{:.2f})\n",
                           with_db, with_db - bare);
  return {{"part", "gpu"},
          {"device", query_device().name},
          {"bare_us", bare},
          {"launch_us", ours},
          {"overhead_us", ours - bare},
          {"launch_db_us", with_db},
          {"overhead_db_us", with_db - bare}};
}

} // namespace
} // namespace tilejit

int main(int argc, char** argv) {
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else {
      std::cerr << "usage: tilejit_launch_bench [--json FILE]\n";
      return 2;
    }
  }
  try {
    nlohmann::json rows = nlohmann::json::array();
    rows.push_back(tilejit::cpu_part());
    if (tilejit::CudaDriver::available())
      rows.push_back(tilejit::gpu_part());
    else
      std::cout << "no GPU (" << tilejit::CudaDriver::unavailable_reason()
                << "): the GPU part did not run\n";
    if (!json_path.empty()) {
      std::ofstream out(json_path, std::ios::app);
      for (const auto& r : rows) out << r.dump() << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "tilejit_launch_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
