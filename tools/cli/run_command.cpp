// `tilejit run`: runs kernels on the GPU and checks them.
//   --workload paged_sparse   every shape of WORKLOADS.md (or --case), against the float64
//                             reference
//   FILE.tile --shape M=..    random inputs, the GPU against the reference interpreter
#include "tools/cli/cli_support.h"
#include "tools/cli/commands.h"

#include "compiler/launch_plan.h"
#include "compiler/ref/run_tile.h"
#include "runtime/cuda_driver.h"
#include "runtime/device_buffer.h"
#include "runtime/gpu_timer.h"
#include "support/text.h"
#include "workloads/paged_sparse.h"
#include "workloads/registry.h"

#include <tilejit/tilejit.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <random>

namespace tilejit::cli {
namespace {

struct RunOptions {
  std::string source, workload, kernel, dtype = "f16", case_filter;
  std::vector<std::string> set, shape;
  uint64_t seed = 0;
};

void run_paged_sparse(const RunOptions& o, bool verbose) {
  Runtime rt(RuntimeOptions{0, "", std::nullopt,
                            verbose ? [](const std::string& m) { std::cerr << m << "\n"; }
                                    : std::function<void(const std::string&)>()});
  KernelRef k = rt.load(workloads::kPagedSparseSource);
  Bindings forced = parse_assignments(o.set, "--set");
  std::vector<std::vector<std::string>> rows;
  bool all_ok = true;
  std::vector<DType> dtypes;
  if (o.dtype == "f16" || o.dtype == "both") dtypes.push_back(DType::F16);
  if (o.dtype == "bf16" || o.dtype == "both") dtypes.push_back(DType::BF16);
  if (dtypes.empty()) throw Error(str("--dtype must be f16, bf16 or both, got '", o.dtype, "'"));
  uint64_t seed = o.seed ? o.seed : std::random_device{}();
  for (DType t : dtypes)
    for (const auto& c : workloads::paged_sparse_cases()) {
      if (!o.case_filter.empty() && c.name().find(o.case_filter) == std::string::npos) continue;
      auto d = workloads::make_paged_sparse_data(c.shape(t), seed++);
      d->o.poison();
      d->lse.poison();
      DeviceCopies dev;
      std::vector<Arg> args = {dev.upload(d->q),        dev.upload(d->k_cache),
                               dev.upload(d->v_cache),  dev.upload(d->block_table),
                               dev.upload(d->seq_lens), dev.upload(d->kept_idx),
                               dev.upload(d->kept_len), dev.upload(d->o),
                               dev.upload(d->lse),      Arg::f32(static_cast<float>(d->scale))};
      Bindings config = forced;
      for (const auto& [n, v] : workloads::paged_sparse_generics(d->shape)) config.emplace(n, v);
      LaunchOptions lo;
      lo.config = config;
      lo.synchronize = true;
      rt.launch(k, args, lo); // compiles on first use
      EventTimer timer;
      timer.start();
      rt.launch(k, args, lo);
      timer.stop();
      dev.download(7, d->o);
      dev.download(8, d->lse);
      auto e = workloads::compare_paged_sparse(*d, workloads::paged_sparse_reference(*d));
      all_ok = all_ok && e.ok();
      char err[64];
      std::snprintf(err, sizeof err, "%.1e / %.1e", e.o, e.lse);
      rows.push_back({dtype_name(t), c.name(), err, e.ok() ? "ok" : "WRONG: " + e.describe(),
                      str(static_cast<int>(timer.elapsed_ms() * 1000), " us")});
    }
  std::cout << format_table({"dtype", "shape", "err o / lse", "check", "time (1 call, warm L2)"},
                            rows);
  if (!all_ok) throw Error("paged_sparse: some results are wrong (see the table)");
}

/// Any .tile kernel: random inputs from --shape; every tensor compared between the GPU and the
/// reference interpreter after one launch.
void run_tile_file(const RunOptions& o, bool verbose) {
  LoadedModule m = load_kernel_source(o.source, "");
  const dsl::Kernel& k = m.kernel(o.kernel);
  std::map<std::string, int64_t> sizes = parse_sizes(o.shape);
  Bindings given = parse_assignments(o.set, "--set");
  RandomInputs in = make_random_inputs(k, sizes, given, o.seed ? o.seed : std::random_device{}());
  std::vector<ref::HostBuffer>& host = in.tensors;
  const std::vector<int>& tensor_of_param = in.tensor_of_param;
  std::vector<ref::HostArg> host_args;
  for (size_t i = 0; i < tensor_of_param.size(); ++i)
    host_args.push_back(tensor_of_param[i] < 0
                            ? ref::HostArg::of_scalar(HostValue::of_float(in.scalars[i]))
                            : host[tensor_of_param[i]].arg());
  std::vector<ref::HostBuffer> gpu_copy = host;
  Runtime rt(RuntimeOptions{0, "", std::nullopt,
                            verbose ? [](const std::string& m) { std::cerr << m << "\n"; }
                                    : std::function<void(const std::string&)>()});
  KernelRef kr = rt.load(o.source, o.kernel);
  DeviceCopies dev;
  std::vector<Arg> args;
  size_t ai = 0;
  for (int t : tensor_of_param) {
    if (t < 0) {
      args.push_back(Arg::f32(static_cast<float>(host_args[ai].scalar.as_double())));
    } else {
      args.push_back(dev.upload(gpu_copy[t]));
    }
    ++ai;
  }
  LaunchOptions lo;
  lo.config = given;
  lo.synchronize = true;
  rt.launch(kr, args, lo);
  for (size_t t = 0; t < gpu_copy.size(); ++t) dev.download(t, gpu_copy[t]);
  ref::run_tile(k, given, host_args);
  std::vector<std::vector<std::string>> rows;
  bool ok = true;
  size_t t = 0;
  for (const auto& p : k.params) {
    if (p.is_scratch || !p.type.has_dims) continue;
    const ref::HostBuffer& a = gpu_copy[t];
    const ref::HostBuffer& b = host[t];
    double diff = 0, norm = 0;
    int64_t nan = 0;
    for (int64_t e = 0; e < a.numel(); ++e) {
      double x = a.get(e), y = b.get(e);
      if (std::isnan(x) != std::isnan(y)) ++nan;
      if (std::isnan(x) || std::isnan(y)) continue;
      diff += (x - y) * (x - y);
      norm += y * y;
    }
    double rel = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
    double tol = a.dtype() == DType::F32 ? 1e-4 : 1e-2;
    bool good = nan == 0 && rel <= tol;
    ok = ok && good;
    rows.push_back({p.name, dtype_name(a.dtype()), str(rel), good ? "ok" : "DIFFERS"});
    ++t;
  }
  std::cout << format_table({"tensor", "dtype", "GPU vs interpreter", "check"}, rows);
  if (!ok) throw Error("the GPU and the reference interpreter disagree (see the table)");
}

} // namespace

void register_run_command(CLI::App& app, GlobalOptions& global) {
  auto o = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand(
      "run", "Run a workload's kernels (or any .tile kernel) on the GPU and check the results");
  cmd->add_option(
      "source", o->source,
      "A .tile file (or embedded:<path>): random inputs, checked against the interpreter");
  cmd->add_option("--workload", o->workload,
                  "Run a workload on its shapes, checked against its float64 reference");
  cmd->add_option("--kernel", o->kernel, "Kernel name when the file holds several");
  cmd->add_option("--shape", o->shape,
                  "Sizes for a .tile file: M=64,N=128 (and scalar parameters)");
  cmd->add_option("--set", o->set,
                  "NAME=VALUE for a generic or tunable (repeat, or comma-separate)");
  cmd->add_option("--dtype", o->dtype, "Workload dtype: f16, bf16 or both (default f16)");
  cmd->add_option("--case", o->case_filter,
                  "Only workload shapes whose name contains this (e.g. ctx131072)");
  cmd->add_option("--seed", o->seed, "Random seed (default: fresh)");
  cmd->callback([o, &global] {
    CudaDriver::require();
    if (!o->workload.empty()) {
      workloads::find_workload(o->workload);
      if (o->workload == "paged_sparse") return run_paged_sparse(*o, global.verbose);
    }
    if (o->source.empty()) throw Error("give a .tile file or --workload NAME (see `tilejit list`)");
    run_tile_file(*o, global.verbose);
  });
}

} // namespace tilejit::cli
