// `tilejit tune`: fills the tuning database.
//   --workload W                   every step of every shape of the workload (WORKLOADS.md, a
//                                  --case of it, or the user's --shape)
//   FILE.tile --shape M=..,N=..    any kernel: random inputs, each candidate checked against the
//                                  kernel's default configuration
//   --shard I/N                    only the I-th of N slices of the workload's shapes (dealt
//                                  round-robin), for N jobs of a cluster scheduler that each
//                                  fill a database of their own (`cache import` merges them)
//   --devices all|I,J,...          one worker process per GPU of this host, each tuning a slice
//                                  of the shapes (its own --shard) into the one database, their
//                                  progress combined into one line (tools/cli/devices.h)
// Without a GPU it compiles what it can (NVRTC needs none), then says so in one line and exits
// non-zero.
#include "runtime/runtime_access.h"
#include "tools/cli/cli_support.h"
#include "tools/cli/commands.h"
#include "tools/cli/devices.h"
#include "tools/cli/shard.h"
#include "tools/cli/workers.h"

#include "compiler/ref/run_tile.h"
#include "compiler/target.h"
#include "runtime/cuda_driver.h"
#include "runtime/device_buffer.h"
#include "runtime/device_info.h"
#include "runtime/gpu_api.h"
#include "runtime/hip_runtime.h"
#include "runtime/jit_compiler.h"
#include "runtime/toolchain.h"
#include "support/text.h"
#include "tuner/kernel_timer.h"
#include "tuner/tuner.h"
#include "workloads/workload.h"
#include "workloads/workload_tuning.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <unistd.h>

namespace tilejit::cli {
namespace {

struct TuneOptions {
  std::string source, workload, kernel, dtype, case_filter, strategy = "auto", budget = "60";
  std::string shard;   ///< "I/N"; empty: all shapes
  std::string devices; ///< "all" or "0,1,..."; empty: this process's GPU alone
  std::string arch;    ///< a target to compile for ("gfx90a"); empty: the GPU's
  std::vector<std::string> set, shape;
  uint64_t seed = 1;
  int repeats = 20;
  bool retune = false;
  int warm_start = 8;
};

/// Whether --arch names an AMD target (gfx90a, gfx1030): tuning measures on an AMD GPU.
bool amd_target(const TuneOptions& o) {
  return !o.arch.empty() && target_for(o.arch).language() == "hip";
}

/// Why there is no AMD GPU to measure on ("no AMD GPU: ..."), or empty when there is one.
std::string amd_gpu_missing() {
  try {
    HipRuntime::get();
    return "";
  } catch (const NoGpuError& e) {
    return e.what();
  }
}

/// The search settings of the command line, for one problem (checks are added by the caller).
TuneRequest make_request(const TuneOptions& o, Runtime& rt, KernelRef k,
                         const std::vector<Arg>& args, const Config& generics) {
  TuneRequest r;
  r.runtime = &rt;
  r.kernel = k;
  r.args = args;
  r.generics = generics;
  r.strategy = o.strategy;
  r.budget = parse_budget(o.budget);
  r.seed = o.seed;
  r.repeats = o.repeats;
  r.retune = o.retune;
  r.warm_start = o.warm_start;
  return r;
}

void print_progress(const std::string& label, const TuneProgress& p) {
  std::cerr << fmt::format("\r{} [{}/{}] best {} {}  {:.0f}s elapsed, ~{:.0f}s left   ", label,
                           p.done, p.total,
                           p.best_ms > 0 ? fmt::format("{:.1f} us", p.best_ms * 1e3) : "-",
                           p.best_config, p.elapsed_s, p.eta_s)
            << std::flush;
}

std::string tunables_text(const dsl::Kernel& k, const Config& config) {
  std::vector<std::string> cfg;
  for (const auto& tn : k.tunables) {
    auto it = config.find(tn.name);
    cfg.push_back(tn.name + "=" + (it == config.end() ? "?" : it->second));
  }
  return join(cfg, ",");
}

/// The workload problems a tune run covers: the dtype's shapes, the --case or --shape, the shard.
std::vector<std::unique_ptr<workloads::Problem>> tune_problems(const TuneOptions& o,
                                                               const workloads::Workload& w) {
  auto all = workload_problems(w, o.dtype.empty() ? dtype_name(w.dtypes().front()) : o.dtype,
                               o.case_filter, o.shape);
  const size_t total = all.size();
  const Shard shard = parse_shard(o.shard);
  auto mine = take_shard(std::move(all), shard);
  if (shard.count > 1)
    std::cerr << fmt::format("shard {}/{}: {} of {} shapes\n", shard.index, shard.count,
                             mine.size(), total);
  return mine;
}

/// No GPU: compile the default configuration of every kernel variant the problems need (NVRTC
/// needs no GPU), so the user learns that the kernels build, then stop with one clear line.
[[noreturn]] void compile_without_gpu(const TuneOptions& o) {
  int ok = 0;
  const std::string arch = o.arch.empty() ? default_arch() : o.arch;
  const bool amd = target_for(arch).language() == "hip";
  const Toolchain& toolchain = toolchain_for(target_for(arch).language());
  if (toolchain.available()) {
    RuntimeOptions ro;
    ro.arch = arch;
    ro.cache_dir = "";
    Runtime rt(ro);
    struct Launch {
      KernelRef kernel;
      std::vector<Arg> views;
      Config generics;
    };
    std::vector<Launch> launches;
    if (!o.workload.empty()) {
      auto w = workloads::find_workload(o.workload);
      workloads::WorkloadKernels kernels(rt, *w);
      std::set<std::string> seen;
      for (const auto& p : tune_problems(o, *w))
        for (const workloads::Plan& plan : p->plans())
          for (const workloads::Step& s : plan.steps) {
            KernelRef k = kernels.get(s.kernel);
            std::vector<Arg> views = workloads::shape_only_args(*p, s);
            Config config = rt.resolve_config(k, views, s.generics);
            std::string id = s.kernel + "|" + tunables_text(RuntimeAccess::kernel(rt, k), config);
            for (const auto& [n, v] : rt.launch_shape(k, views, s.generics).generics)
              id += "|" + n + "=" + v;
            if (seen.insert(id).second) launches.push_back({k, views, s.generics});
          }
    } else {
      std::string name = o.kernel;
      KernelRef k = rt.load(runtime_source(o.source, "", name), o.kernel);
      launches.push_back({k, {}, {}});
    }
    for (const auto& [k, views, generics] : launches) {
      const dsl::Kernel& kernel = RuntimeAccess::kernel(rt, k);
      Config config;
      if (views.empty()) {
        config = complete_bindings(kernel, parse_assignments(o.set, "--set"));
      } else {
        config = rt.resolve_config(k, views, generics);
      }
      // A configuration the target cannot run (shared memory over an AMD GPU's 64 KiB of LDS)
      // is named and skipped; the tuner would prune it the same way.
      const CompiledVariant* compiled = nullptr;
      try {
        compiled = &RuntimeAccess::compile(rt, k, config, views);
      } catch (const Error& e) {
        std::cerr << fmt::format("not compiled for {}: {}\n", arch, e.what());
        continue;
      }
      const CompiledVariant& c = *compiled;
      std::vector<std::string> b;
      for (const auto& [n, x] : c.bindings) b.push_back(n + "=" + x);
      std::cerr << fmt::format("compiled {} [{}] for {}: {} registers, {} bytes shared, {} ms\n",
                               kernel.name, join(b, " "), c.arch, c.resources.registers,
                               c.smem_bytes, static_cast<int>(c.compile_ms));
      ++ok;
    }
  } else {
    std::cerr << toolchain.name() << " not available (" << toolchain.unavailable_reason()
              << "): nothing compiled\n";
  }
  // An AMD target: HIP says why there is no AMD GPU.
  std::string why = CudaDriver::unavailable_reason();
  if (amd) why = amd_gpu_missing();
  throw NoGpuError(str(why, "; compiled ", ok, " variant(s), tuned nothing"));
}

void tune_workload(const TuneOptions& o, const GlobalOptions& g) {
  auto w = workloads::find_workload(o.workload);
  auto problems = tune_problems(o, *w);
  auto db = std::make_shared<TuneDatabase>(database_path(g.db_path));
  // The runtime compiles for the GPU's target, or an AMD target's (--arch gfx90a), and its
  // tuner measures through that target's API (runtime/gpu_api.h).
  auto rt = make_runtime(g.verbose, {}, amd_target(o) ? o.arch : "");
  TuneIdentity id = current_identity(*rt);
  std::string device_line;
  workloads::Ceilings ceilings{0, 0};
  if (gpu_api(*rt) == GpuApi::hip) {
    // No copy-bandwidth probe on HIP (the CUDA one is a 1 GiB cuMemcpyDtoD): no floor column.
    device_line = fmt::format("{} ({})", id.device_name, id.compute_capability);
  } else {
    DeviceInfo dev = query_device();
    ceilings.bytes_per_s = measure_copy_bandwidth();
    device_line = fmt::format("{} ({})", dev.name, dev.arch());
  }
  workloads::WorkloadKernels kernels(*rt, *w);
  workloads::WorkloadTuneOptions to;
  to.strategy = o.strategy;
  to.budget = parse_budget(o.budget);
  to.seed = o.seed;
  to.repeats = o.repeats;
  to.retune = o.retune;
  to.warm_start = o.warm_start;
  to.progress = print_progress;
  if (g.verbose) to.log = [](const std::string& m) { std::cerr << "\n" << m; };
  std::vector<std::vector<std::string>> rows;
  auto start = std::chrono::steady_clock::now();
  int compiled = 0;
  std::cerr << fmt::format("{}, database {}{}\n", device_line, db->path(),
                           ceilings.bytes_per_s > 0 ? fmt::format(", copy bandwidth {:.0f} GB/s",
                                                                  ceilings.bytes_per_s / 1e9)
                                                    : "");
  for (const auto& p : problems) {
    workloads::ProblemTuning t = workloads::tune_problem(kernels, *p, *db, id, to);
    std::cerr << fmt::format("\r{:<80}\r", "");
    compiled += t.compiled;
    const double floor = workloads::floor_ms(p->floor(), ceilings);
    // Several plans: each one's per-call time (when timed now), and which one was kept.
    for (const workloads::PlanTiming& pt : t.plans)
      rows.push_back({dtype_name(p->dtype()), p->name(),
                      "plan " + pt.name + (pt.name == t.plan ? " (chosen)" : ""), "",
                      pt.error.empty() ? fmt::format("{:.1f}", pt.end_to_end_ms * 1e3) : "failed",
                      "", "", "", pt.error.empty() ? t.plan_why : pt.error.substr(0, 60)});
    if (t.plans.empty() && t.plan_why != "the only plan")
      rows.push_back(
          {dtype_name(p->dtype()), p->name(), "plan " + t.plan, "", "", "", "", "", t.plan_why});
    double per_call_ms = 0;
    for (const auto& s : t.steps) {
      const TuneOutcome& out = s.outcome;
      if (!s.one_time) per_call_ms += out.winner_ms;
      const dsl::Kernel& k = RuntimeAccess::kernel(*rt, kernels.get(s.kernel));
      rows.push_back(
          {dtype_name(p->dtype()), p->name(), s.label + (s.one_time ? " (once)" : ""),
           tunables_text(k, out.winner), fmt::format("{:.1f}", out.winner_ms * 1e3), "", "",
           out.default_ms > 0 ? fmt::format("{:.2f}x", out.default_ms / out.winner_ms) : "-",
           out.from_database ? "database" : fmt::format("{} trials", out.trials)});
    }
    // The end-to-end time: the per-call sequence timed as one (or the sum of the steps' tuned
    // medians when the database answered and nothing ran).
    double e2e = t.end_to_end_ms > 0 ? t.end_to_end_ms : per_call_ms;
    if (t.steps.size() > 1)
      rows.push_back({dtype_name(p->dtype()), p->name(), "end to end", "",
                      fmt::format("{:.1f}", e2e * 1e3), "", "", "", ""});
    auto& last = rows.back();
    last[5] = floor > 0 ? fmt::format("{:.0f}", p->floor().bytes / (e2e * 1e-3) / 1e9) : "-";
    last[6] = floor > 0 ? fmt::format("{:.0f}%", 100.0 * floor / e2e) : "-";
    std::cerr << p->name() << ": " << last[3] << " " << last[4] << " us (" << last[8] << ")\n";
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << format_table(
      {"dtype", "shape", "step", "winner", "median us", "GB/s", "% floor", "vs default", "source"},
      rows);
  std::cout << fmt::format("tuned {} shapes in {:.1f} s; compiled {} variants; database {}\n",
                           problems.size(), secs, compiled, db->path());
}

/// --devices: a worker process per GPU, each on its slice of the shapes, all into one database.
void tune_on_devices(const TuneOptions& o, const GlobalOptions& g) {
  const DeviceSpec spec = parse_devices(o.devices);
  const std::vector<int> devices = resolve_devices(spec, CudaDriver::get().device_count());
  // `all` on a host with one GPU: nothing to spread, the run stays in this process. (A list,
  // even of one, always runs workers: how the machinery is tried on a single GPU.)
  if (spec.all && devices.size() == 1) return tune_workload(o, g);
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) throw Error("tune --devices: cannot find this program's path (/proc/self/exe)");
  const std::string program(self, static_cast<size_t>(n));
  const std::string db = database_path(g.db_path);
  // The database is opened (made, when new) here, once, before any worker starts: workers
  // that all found no file and made it at the same moment could see each other's half-made
  // file as another application's (seen on two H200s: one worker refused a file with the
  // tables but not yet the application id) and lose their slice. A bad file is refused here,
  // before any work, with the database's own error.
  { TuneDatabase made(db); }
  const Shard outer = parse_shard(o.shard);
  const char* parent_visible = std::getenv("CUDA_VISIBLE_DEVICES");
  TuneWorkerArgs args;
  args.workload = o.workload, args.dtype = o.dtype, args.case_filter = o.case_filter;
  args.strategy = o.strategy, args.budget = o.budget, args.shape = o.shape;
  args.seed = o.seed, args.repeats = o.repeats, args.warm_start = o.warm_start;
  args.retune = o.retune, args.verbose = g.verbose;
  std::vector<Worker> workers;
  for (size_t j = 0; j < devices.size(); ++j) {
    Worker w;
    w.label = str("gpu", devices[j]);
    w.argv = tune_worker_argv(program, db, args, worker_shard(outer, j, devices.size()));
    w.env = {{"CUDA_VISIBLE_DEVICES", visible_device(devices[j], parent_visible)}};
    workers.push_back(std::move(w));
  }
  std::cerr << fmt::format(
      "tune --devices: {} workers ({}), database {}\n", workers.size(),
      [&] {
        std::vector<std::string> labels;
        for (const Worker& w : workers) labels.push_back(w.label);
        return join(labels, ", ");
      }(),
      db);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<WorkerResult> results = run_workers(workers, std::cerr);
  std::vector<std::string> failed;
  for (size_t j = 0; j < workers.size(); ++j) {
    const Shard s = worker_shard(outer, j, workers.size());
    std::cout << fmt::format("== {} (shard {}/{}) ==\n", workers[j].label, s.index, s.count)
              << results[j].stdout_text;
    if (results[j].exit_code != 0)
      failed.push_back(fmt::format("{} (exit {}: {})", workers[j].label, results[j].exit_code,
                                   results[j].last_line));
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << fmt::format("tune --devices: {} workers in {:.1f} s; database {}\n", workers.size(),
                           secs, db);
  // What the others tuned is in the database already: a failed worker loses only its slice.
  if (!failed.empty())
    throw Error(str("tune --devices: ", failed.size(), " of ", workers.size(),
                    " workers failed: ", join(failed, "; "),
                    " (the others' winners are in the database; rerun to finish)"));
}

/// Any .tile kernel: random inputs from --shape; candidates must match the default config.
void tune_tile_file(const TuneOptions& o, const GlobalOptions& g) {
  std::string kernel_name = o.kernel;
  LoadedModule m = load_kernel_source(o.source, "", kernel_name);
  const dsl::Kernel& k = m.kernel(kernel_name);
  std::map<std::string, int64_t> sizes = parse_sizes(o.shape);
  Config given = parse_assignments(o.set, "--set");
  RandomInputs in = make_random_inputs(k, sizes, given, o.seed);
  std::vector<ref::HostBuffer>& host = in.tensors;
  RuntimeOptions ro;
  ro.arch = amd_target(o) ? o.arch : ""; // an AMD GPU's target, else the GPU's
  Runtime rt(ro);
  const GpuApi api = gpu_api(rt);
  DeviceCopies dev(api);
  std::vector<Arg> args;
  for (size_t i = 0; i < in.tensor_of_param.size(); ++i)
    args.push_back(in.tensor_of_param[i] < 0 ? Arg::f32(static_cast<float>(in.scalars[i]))
                                             : dev.upload(host[in.tensor_of_param[i]]));
  auto db = std::make_shared<TuneDatabase>(database_path(g.db_path));
  TuneIdentity id = current_identity(rt);
  KernelRef kr = rt.load(o.source, o.kernel);
  // The reference: every buffer after one launch of the default configuration.
  Config generics;
  for (const auto& gp : k.generics)
    if (given.count(gp.name)) generics[gp.name] = given[gp.name];
  Config def = rt.resolve_config(kr, args, generics);
  auto restore = [&] {
    for (size_t i = 0; i < host.size(); ++i)
      dev.buffer(i).upload(host[i].data(),
                           static_cast<size_t>(host[i].numel()) * dtype_size(host[i].dtype()));
  };
  restore();
  rt.launch_config(kr, def, args);
  synchronize_device(api, rt.device_ordinal());
  std::vector<ref::HostBuffer> expected = host;
  for (size_t i = 0; i < host.size(); ++i) dev.download(i, expected[i]);
  TuneRequest r = make_request(o, rt, kr, args, generics);
  r.prepare_check = restore; // in-place kernels get their inputs back before each checked run
  r.check = [&](std::string* why) {
    for (size_t i = 0; i < host.size(); ++i) {
      ref::HostBuffer got = host[i];
      dev.download(i, got);
      double diff = 0, norm = 0;
      for (int64_t e = 0; e < got.numel(); ++e) {
        double x = got.get(e), y = expected[i].get(e);
        if (std::isnan(x) != std::isnan(y)) diff = INFINITY;
        if (!std::isnan(x) && !std::isnan(y)) diff += (x - y) * (x - y), norm += y * y;
      }
      double rel = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
      if (!(rel <= (got.dtype() == DType::F32 ? 1e-4 : 1e-2))) {
        if (why) *why = str("tensor ", i, " differs from the default configuration's by ", rel);
        return false;
      }
    }
    return true;
  };
  r.progress = [&](const TuneProgress& p) { print_progress(k.name, p); };
  TuneOutcome out = tune(r, *db, id);
  std::fprintf(stderr, "\n");
  std::vector<std::string> cfg;
  for (const auto& tn : k.tunables) cfg.push_back(tn.name + "=" + out.winner[tn.name]);
  std::cout << format_table(
      {"kernel", "winner", "median us", "vs default", "source"},
      {{k.name, join(cfg, ","), fmt::format("{:.1f}", out.winner_ms * 1e3),
        out.default_ms > 0 ? fmt::format("{:.2f}x", out.default_ms / out.winner_ms) : "-",
        out.from_database ? "database" : fmt::format("{} trials", out.trials)}});
}

} // namespace

void register_tune_command(CLI::App& app, GlobalOptions& global) {
  auto o = std::make_shared<TuneOptions>();
  auto* cmd = app.add_subcommand(
      "tune",
      "Tune a workload's kernels (or any .tile kernel) per shape; winners go to the database");
  cmd->add_option("source", o->source, "A .tile file (with --shape) instead of a workload");
  cmd->add_option("--workload", o->workload, "A workload (see `tilejit list`)");
  cmd->add_option("--kernel", o->kernel, "Kernel name when the file holds several");
  cmd->add_option("--shape", o->shape,
                  "Sizes for a .tile file: M=64,N=128 (and scalar parameters); for a workload, "
                  "the user's own shape (see `tilejit list`)");
  cmd->add_option("--set", o->set, "Fix generics (T=f16) for a .tile file");
  cmd->add_option("--dtype", o->dtype,
                  "Workload dtype: f16, bf16 or all (default: the workload's first)");
  cmd->add_option("--case", o->case_filter, "Only workload shapes whose name contains this");
  cmd->add_option("--strategy", o->strategy,
                  "auto, exhaustive, halving or evolutionary (default auto)");
  cmd->add_option("--budget", o->budget,
                  "Per kernel and shape (each step of a workload's plans gets it): trials (\"60\") "
                  "or time (\"90s\"); default 60 trials");
  cmd->add_option("--seed", o->seed, "Seed of the search (deterministic for a seed; default 1)");
  cmd->add_option("--repeats", o->repeats, "Timed calls per measurement (default 20; 1..100000)")
      ->check(CLI::Range(1, 100000));
  cmd->add_flag("--retune", o->retune, "Measure again even when the database has a winner");
  cmd->add_option("--arch", o->arch,
                  "Compile for this target instead of the GPU's: gfx90a or gfx1030 tunes on the "
                  "AMD GPU (HIPRTC, HIP events; without one, every variant the shapes need is "
                  "compiled, then 'no AMD GPU'); an sm_* target where no GPU is");
  cmd->add_option("--shard", o->shard,
                  "I/N: tune only the I-th of N slices of the workload's shapes (I from 0; dealt "
                  "round-robin), one per job of a Slurm array or Kubernetes indexed Job, each "
                  "with its own --db; merge them with `tilejit cache import`");
  cmd->add_option("--devices", o->devices,
                  "all, or GPU indices (0,1,3): one worker process per GPU of this host, each "
                  "tuning a slice of the workload's shapes into the one database (with --shard: "
                  "slices of this job's slice)");
  cmd->add_option("--warm-start", o->warm_start,
                  "Measure the winners of up to N nearby tuned shapes first (default 8; 0: off; "
                  "at most 1000)")
      ->check(CLI::Range(0, 1000));
  cmd->callback([o, &global] {
    if (!o->workload.empty()) workloads::find_workload(o->workload);
    if (o->workload.empty() && o->source.empty())
      throw Error("give --workload NAME or a .tile file with --shape (see `tilejit list`)");
    if (!o->workload.empty() && !o->source.empty())
      throw Error("give either a .tile file or --workload, not both");
    if (!o->workload.empty() && !o->set.empty())
      throw Error("tune --workload takes no --set: the shape fixes the generics and the tuner "
                  "chooses the tunables (use `tilejit run|bench --set` to force values)");
    // Every argument is checked before anything is compiled or a GPU is looked for.
    parse_budget(o->budget);
    const auto& strategies = strategy_names();
    if (std::find(strategies.begin(), strategies.end(), o->strategy) == strategies.end())
      throw Error(str("--strategy: unknown search strategy '", o->strategy, "' (choose one of ",
                      join(strategies, ", "), ")"));
    parse_shard(o->shard);
    parse_devices(o->devices);
    if (!o->workload.empty()) {
      auto w = workloads::find_workload(o->workload);
      workload_problems(*w, o->dtype.empty() ? dtype_name(w->dtypes().front()) : o->dtype,
                        o->case_filter, o->shape);
    } else {
      if (!o->case_filter.empty()) throw Error("--case is for --workload shapes");
      if (!o->shard.empty())
        throw Error("--shard is for --workload shapes (a .tile file tunes one)");
      if (!o->devices.empty())
        throw Error("--devices is for --workload shapes (a .tile file tunes one kernel on one "
                    "GPU)");
      std::string name = o->kernel;
      LoadedModule m = load_kernel_source(o->source, "", name);
      parse_sizes(o->shape);
      m.kernel(name);
      parse_assignments(o->set, "--set");
    }
    if (!o->arch.empty()) {
      target_for(o->arch); // an unknown target is named before anything is compiled
      if (!o->devices.empty()) throw Error("--devices is for NVIDIA GPUs (give no --arch)");
    }
    // A GPU of the target's kind is looked for (an AMD one for a gfx target); without one,
    // every variant the shapes need is compiled and the command stops there.
    if (amd_target(*o) ? !amd_gpu_missing().empty() : !CudaDriver::available())
      compile_without_gpu(*o);
    if (!o->devices.empty()) return tune_on_devices(*o, global);
    if (!o->workload.empty()) return tune_workload(*o, global);
    tune_tile_file(*o, global);
  });
}

} // namespace tilejit::cli
