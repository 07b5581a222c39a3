// `tilejit run`: runs kernels on the GPU and checks them.
//   --workload W              every shape of WORKLOADS.md (or --case, or the user's --shape),
//                             against the workload's float64 reference
//   FILE.tile --shape M=..    random inputs, the GPU against the reference interpreter
#include "tools/cli/cli_support.h"
#include "tools/cli/commands.h"

#include "compiler/launch_plan.h"
#include "compiler/ref/run_tile.h"
#include "runtime/cuda_driver.h"
#include "runtime/device_buffer.h"
#include "runtime/gpu_timer.h"
#include "support/text.h"
#include "tuner/first_use_tuning.h"
#include "tuner/tuner.h"
#include "workloads/plan_choice.h"
#include "workloads/problem_on_gpu.h"
#include "workloads/workload.h"

#include <tilejit/tilejit.h>

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <random>

namespace tilejit::cli {
namespace {

struct RunOptions {
  std::string source, workload, kernel, dtype, case_filter, plan;
  std::vector<std::string> set, shape;
  uint64_t seed = 0;
  bool tune = false;
  std::optional<double> compile_timeout_s; ///< --compile-timeout (unset: the Runtime's default)
};

/// A workload: every step on the GPU (configurations from the tuning database, --set forcing
/// values), every output against the float64 reference.
void run_workload(const RunOptions& o, const GlobalOptions& g) {
  auto w = workloads::find_workload(o.workload);
  auto problems = workload_problems(*w, o.dtype.empty() ? dtype_name(w->dtypes().front()) : o.dtype,
                                    o.case_filter, o.shape);
  Config user = parse_assignments(o.set, "--set");
  check_plan_option(problems, o.plan);
  check_step_option(*w, problems, user, "--set");
  CudaDriver::require();
  auto rt = make_runtime(g.verbose, o.compile_timeout_s);
  if (o.tune) {
    RuntimeOptions ro;
    ro.tune_on_first_use = true;
    ro.compile_timeout_s = o.compile_timeout_s;
    if (g.verbose) ro.log = [](const std::string& m) { std::cerr << m << "\n"; };
    rt = std::make_unique<Runtime>(ro);
  }
  auto db = std::make_shared<TuneDatabase>(database_path(g.db_path));
  use_tuning_database(*rt, db);
  const TuneIdentity identity = current_identity();
  workloads::WorkloadKernels kernels(*rt, *w);
  std::vector<std::vector<std::string>> rows;
  bool all_ok = true;
  uint64_t seed = o.seed ? o.seed : std::random_device{}();
  for (const auto& p : problems) {
    auto data = p->make_data(seed++);
    const std::vector<workloads::Plan> plans = p->plans();
    const workloads::ChosenPlan plan =
        workloads::choose_plan(kernels, *p, plans, db.get(), identity, o.plan);
    workloads::ProblemOnGpu gpu(kernels, *p, *data, plans[plan.index]);
    gpu.poison_from(0);
    gpu.run(user, /*one_time=*/true);
    workloads::Comparison c = gpu.check();
    all_ok = all_ok && c.ok;
    EventTimer timer;
    timer.start();
    gpu.run(user, /*one_time=*/false);
    timer.stop();
    std::vector<std::string> configs;
    if (plans.size() > 1)
      configs.push_back(fmt::format("plan={} ({})", plans[plan.index].name, plan.why));
    for (size_t i = 0; i < gpu.steps().size(); ++i)
      configs.push_back((gpu.steps().size() > 1 ? gpu.steps()[i].label + ":" : "") +
                        gpu.resolve(i, user).tunables);
    rows.push_back({dtype_name(p->dtype()), p->name(), c.summary(), c.ok ? "ok" : "WRONG",
                    fmt::format("{:.1f} us", timer.elapsed_ms() * 1e3), join(configs, " ")});
  }
  std::cout << format_table(
      {"dtype", "shape", "error (vs float64)", "check", "time (1 call, warm L2)", "config"}, rows);
  if (!all_ok) throw Error(fmt::format("{}: some results are wrong (see the table)", w->name()));
}

/// Any .tile kernel: random inputs from --shape; every tensor compared between the GPU and the
/// reference interpreter after one launch.
void run_tile_file(const RunOptions& o, bool verbose) {
  std::string kernel_name = o.kernel;
  LoadedModule m = load_kernel_source(o.source, "", kernel_name);
  const dsl::Kernel& k = m.kernel(kernel_name);
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
  auto runtime = make_runtime(verbose, o.compile_timeout_s);
  Runtime& rt = *runtime;
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
                  "Sizes for a .tile file: M=64,N=128 (and scalar parameters); for a workload, "
                  "the user's own shape (see `tilejit list`)");
  cmd->add_option("--set", o->set,
                  "NAME=VALUE for a generic or tunable (repeat, or comma-separate); for a "
                  "workload, STEP:NAME=VALUE sets one step's (linear:WARPS=2)");
  cmd->add_option("--dtype", o->dtype,
                  "Workload dtype: f16, bf16 or all (default: the workload's first)");
  cmd->add_option("--case", o->case_filter,
                  "Only workload shapes whose name contains this (e.g. ctx131072)");
  cmd->add_option("--plan", o->plan,
                  "For a workload whose shapes have several plans (`tilejit list`): run this one "
                  "(default: the database's choice per shape, else the first)");
  cmd->add_option("--seed", o->seed, "Random seed (default: fresh)");
  cmd->add_flag("--tune", o->tune,
                "Tune shapes the database has no winner for on first use (as TILEJIT_TUNE=1)");
  cmd->add_option("--compile-timeout", o->compile_timeout_s,
                  "Seconds a kernel's compile (NVRTC) may take before the run fails (default: "
                  "$TILEJIT_COMPILE_TIMEOUT, else 300; 0: no limit)")
      ->check(CLI::Range(0.0, 86400.0));
  cmd->callback([o, &global] {
    if (!o->workload.empty()) {
      if (!o->source.empty()) throw Error("give either a .tile file or --workload, not both");
      return run_workload(*o, global);
    }
    if (o->source.empty()) throw Error("give a .tile file or --workload NAME (see `tilejit list`)");
    if (!o->case_filter.empty()) throw Error("--case is for --workload shapes");
    if (!o->plan.empty()) throw Error("--plan is for --workload shapes");
    // The arguments are checked before a GPU is looked for.
    std::string name = o->kernel;
    LoadedModule m = load_kernel_source(o->source, "", name);
    parse_sizes(o->shape);
    m.kernel(name);
    parse_assignments(o->set, "--set");
    CudaDriver::require();
    run_tile_file(*o, global.verbose);
  });
}

} // namespace tilejit::cli
