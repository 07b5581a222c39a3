// `tilejit bench --workload W`: times a workload's tuned kernels the way the peers are timed (L2
// flushed, CUDA events, median): each step alone (one-time steps apart) and the per-call sequence
// end to end; writes one JSON line per problem and configuration, and prints a table with GB/s
// and the share of the floor.
#include "tools/cli/cli_support.h"
#include "tools/cli/commands.h"

#include "runtime/cuda_driver.h"
#include "runtime/device_buffer.h"
#include "runtime/device_info.h"
#include "support/text.h"
#include "support/version.h"
#include "tuner/first_use_tuning.h"
#include "tuner/kernel_timer.h"
#include "tuner/tuner.h"
#include "workloads/plan_choice.h"
#include "workloads/problem_on_gpu.h"
#include "workloads/workload.h"

#include <tilejit/tilejit.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <random>

namespace tilejit::cli {
namespace {

struct BenchOptions {
  std::string source, kernel, workload, dtype, case_filter, out, commit, sweep, plan;
  std::vector<std::string> set, shape;
  int repeats = 30;
  bool graph = false; ///< `ms` from a CUDA-graph replay instead of direct launches
  FlushKind flush = FlushKind::memset;
};

std::string today() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

/// "CHUNK=128|256,BN=32|64" -> every combination.
std::vector<Bindings> expand_sweep(const std::string& spec) {
  std::vector<Bindings> out = {{}};
  if (spec.empty()) return out;
  for (const auto& [name, values] : parse_assignments({spec}, "--sweep")) {
    std::vector<Bindings> next;
    for (const auto& b : out)
      for (const auto& v : split(values, '|')) {
        Bindings c = b;
        c[name] = v;
        next.push_back(c);
      }
    out = next;
  }
  return out;
}

void bench_workload(const BenchOptions& o, const GlobalOptions& global) {
  auto w = workloads::find_workload(o.workload);
  auto problems = workload_problems(*w, o.dtype.empty() ? dtype_name(w->dtypes().front()) : o.dtype,
                                    o.case_filter, o.shape);
  if (o.plan != "all") check_plan_option(problems, o.plan);
  Bindings forced = parse_assignments(o.set, "--set");
  std::vector<Bindings> sweep = expand_sweep(o.sweep);
  check_step_option(*w, problems, forced, "--set");
  for (const Bindings& point : sweep) check_step_option(*w, problems, point, "--sweep");
  note_unprefixed_names(parse_assignments(o.set, "--set"), "--set");
  if (!o.sweep.empty()) note_unprefixed_names(parse_assignments({o.sweep}, "--sweep"), "--sweep");
  CudaDriver::require();
  DeviceInfo dev = query_device();
  workloads::Ceilings ceilings{measure_copy_bandwidth(), 0};
  std::cerr << fmt::format("{}: device-to-device copy {:.0f} GB/s (read + write)\n", dev.name,
                           ceilings.bytes_per_s / 1e9);
  auto rt = make_runtime(global.verbose);
  // Tuned configurations come from the database (exact shape, else the nearest tuned one).
  auto db = std::make_shared<TuneDatabase>(database_path(global.db_path));
  use_tuning_database(*rt, db);
  const TuneIdentity identity = current_identity();
  workloads::WorkloadKernels kernels(*rt, *w);
  KernelTimer timer;
  std::ofstream out;
  std::string out_path =
      o.out.empty() ? fmt::format("bench/results/{}-{}.jsonl", today(), w->name()) : o.out;
  out.open(out_path, std::ios::app);
  if (!out) throw Error(fmt::format("cannot write '{}'", out_path));
  std::vector<std::vector<std::string>> rows;
  uint64_t seed = std::random_device{}();
  for (const auto& p : problems) {
    auto data = p->make_data(seed++);
    const std::vector<workloads::Plan> plans = p->plans();
    // --plan all: every plan timed (the table keeps the fastest); otherwise the chosen one.
    std::vector<workloads::ChosenPlan> chosen;
    if (o.plan == "all")
      for (size_t i = 0; i < plans.size(); ++i) chosen.push_back({i, "--plan all"});
    else
      chosen.push_back(workloads::choose_plan(kernels, *p, plans, db.get(), identity, o.plan));
    const double floor = workloads::floor_ms(p->floor(), ceilings);
    double best_ms = 1e30;
    std::string best_config, skipped;
    nlohmann::json best_steps;
    size_t best_step_count = 0;
    for (const workloads::ChosenPlan& plan : chosen) {
      workloads::ProblemOnGpu gpu(kernels, *p, *data, plans[plan.index]);
      const std::vector<workloads::Step>& steps = gpu.steps();
      for (const Bindings& extra : sweep) {
        Config user = forced;
        for (const auto& [n, v] : extra) user[n] = v;
        // Resolve every step first: a sweep point some kernel's constraints rule out is skipped.
        std::vector<workloads::ProblemOnGpu::ResolvedStep> configs;
        try {
          for (size_t i = 0; i < steps.size(); ++i) configs.push_back(gpu.resolve(i, user));
        } catch (const ConstraintError& e) {
          // A sweep point some kernel's constraints rule out: said, and skipped.
          std::vector<std::string> values;
          for (const auto& [n, v] : user) values.push_back(n + "=" + v);
          std::cerr << fmt::format("{} {}: skipped: {}\n", p->name(), join(values, ","), e.what());
          skipped = e.what();
          continue;
        }
        gpu.poison_from(0);
        gpu.run(user, /*one_time=*/true);
        workloads::Comparison c = gpu.check();
        TimingOptions to;
        to.repeats = o.repeats;
        to.flush = o.flush;
        to.tries = 3; // a disturbed timing is taken again, as the Triton peer's script does
        // Each step alone (one-time steps are timed here, apart), then the per-call sequence.
        nlohmann::json step_rows = nlohmann::json::array();
        for (size_t i = 0; i < steps.size(); ++i) {
          Timing t = timer.time([&](cu::CUstream s) { gpu.launch(i, user, s); }, to);
          step_rows.push_back({{"step", steps[i].label},
                               {"kernel", steps[i].kernel},
                               {"one_time", steps[i].one_time},
                               {"config", configs[i].tunables},
                               {"config_source", configs[i].why},
                               {"ms", t.median_ms},
                               {"p10_ms", t.p10_ms},
                               {"p90_ms", t.p90_ms}});
        }
        // Timed both ways, as the Triton peer is: launched directly (cuLaunchKernel per call)
        // and replayed from a CUDA graph (what a serving engine does with a decode step). `ms`
        // is the one --launch names. On an H100 a graph replay of paged_sparse's one kernel
        // measured 0.1-0.9 us slower than direct launches; the peer's two launches gain ~1 us.
        auto call = [&](cu::CUstream s) { gpu.run(user, /*one_time=*/false, s); };
        Timing direct = timer.time(call, to);
        to.graph = true;
        Timing graphed = timer.time(call, to);
        const Timing& tm = o.graph ? graphed : direct;
        std::vector<std::string> cfg_parts, why_parts;
        for (size_t i = 0; i < steps.size(); ++i) {
          cfg_parts.push_back(steps.size() > 1 ? steps[i].label + ":" + configs[i].tunables
                                               : configs[i].tunables);
          why_parts.push_back(configs[i].why);
        }
        if (plans.size() > 1) cfg_parts.insert(cfg_parts.begin(), "plan=" + plans[plan.index].name);
        std::string cfg_text = join(cfg_parts, " ");
        nlohmann::json errors = nlohmann::json::object();
        for (const auto& [name, e] : c.errors) errors[name] = e;
        const double bytes = p->floor().bytes;
        nlohmann::json j = {
            {"workload", w->name()},
            {"variant", p->variant()},
            {"impl", "tilejit"},
            {"scope", "end_to_end"},
            {"shape", p->shape_json()},
            {"problem", p->name()},
            {"dtype", dtype_name(p->dtype())},
            {"ms", tm.median_ms},
            {"launch", o.graph ? "cuda_graph" : "direct"},
            {"ms_direct", direct.median_ms},
            {"p10_direct_ms", direct.p10_ms},
            {"p90_direct_ms", direct.p90_ms},
            {"ms_graph", graphed.median_ms},
            {"p10_graph_ms", graphed.p10_ms},
            {"p90_graph_ms", graphed.p90_ms},
            {"p10_ms", tm.p10_ms},
            {"p90_ms", tm.p90_ms},
            {"repeats", tm.repeats},
            {"warmup_ms", tm.warmup_ms},
            {"steady", tm.steady},
            {"gbps", bytes / (tm.median_ms * 1e-3) / 1e9},
            {"floor_ms", floor},
            {"device_bytes", gpu.per_call_bytes()},
            {"scratch_bytes", gpu.scratch_bytes(user)},
            {"pct_floor", floor > 0 ? 100.0 * floor / tm.median_ms : 0.0},
            {"errors", errors},
            {"correct", c.ok},
            {"config", cfg_text},
            {"config_source", join(why_parts, "; ")},
            {"plan", plans[plan.index].name},
            {"plan_source", plan.why},
            {"steps", step_rows},
            {"device", dev.name},
            {"date", today()},
            {"commit", o.commit},
            {"copy_bandwidth_gbps", ceilings.bytes_per_s / 1e9},
            {"flush", o.flush == FlushKind::kernel ? "kernel" : "memset"},
            {"method",
             fmt::format("L2 flushed (256 MB {}) before each call, CUDA events, median",
                         o.flush == FlushKind::kernel ? "written by a fill kernel" : "memset")}};
        // The error names the report reads for paged_sparse (err_o, err_lse).
        for (const auto& [name, e] : c.errors) j["err_" + name] = e;
        out << j.dump() << "\n";
        out.flush();
        if (!c.ok)
          std::cerr << "WRONG result for " << p->name() << " " << cfg_text << ": " << c.summary()
                    << "\n";
        if (c.ok && tm.median_ms < best_ms)
          best_ms = tm.median_ms, best_config = cfg_text, best_steps = step_rows,
          best_step_count = steps.size();
        if (sweep.size() > 1 || chosen.size() > 1)
          std::cerr << "  " << p->name() << " " << cfg_text << ": " << tm.median_ms * 1e3
                    << " us\n";
      }
    }
    if (best_ms == 1e30) {
      rows.push_back({dtype_name(p->dtype()), p->name(),
                      skipped.empty() ? "no correct result" : "not run: " + skipped, "-", "-",
                      fmt::format("{:.1f}", floor * 1e3), "-"});
      continue;
    }
    rows.push_back({dtype_name(p->dtype()), p->name(), best_config,
                    fmt::format("{:.1f}", best_ms * 1e3),
                    fmt::format("{:.0f}", p->floor().bytes / (best_ms * 1e-3) / 1e9),
                    fmt::format("{:.1f}", floor * 1e3),
                    floor > 0 ? fmt::format("{:.0f}%", 100.0 * floor / best_ms) : "-"});
    // A sequence of several kernels: each step's own time after the end-to-end row
    // (one-time steps marked; they are not part of the end-to-end time).
    if (best_step_count > 1 && best_steps.is_array())
      for (const auto& st : best_steps)
        rows.push_back({"",
                        fmt::format("  {}{}", st["step"].get<std::string>(),
                                    st["one_time"].get<bool>() ? " (once)" : ""),
                        st["config"].get<std::string>(),
                        fmt::format("{:.1f}", st["ms"].get<double>() * 1e3), "", "", ""});
  }
  std::cout << format_table({"dtype", "shape", "config", "us", "GB/s", "floor us", "% floor"},
                            rows);
  std::cerr << "results appended to " << out_path << "\n";
}

/// Any .tile kernel: random inputs shaped by --shape, the configuration forced by --set (and
/// --sweep), timed like a workload (L2 flushed, CUDA events, median). For A/B timing of the
/// compiler's output on kernels that are not workloads (the examples).
void bench_tile_file(const BenchOptions& o, const GlobalOptions& global) {
  std::string kernel_name = o.kernel;
  LoadedModule m = load_kernel_source(o.source, "", kernel_name);
  const dsl::Kernel& k = m.kernel(kernel_name);
  std::map<std::string, int64_t> sizes = parse_sizes(o.shape);
  Config forced = parse_assignments(o.set, "--set");
  RandomInputs in = make_random_inputs(k, sizes, forced, 1); // bad sizes are said first
  CudaDriver::require();
  DeviceCopies dev;
  std::vector<Arg> args;
  for (size_t i = 0; i < in.tensor_of_param.size(); ++i)
    args.push_back(in.tensor_of_param[i] < 0 ? Arg::f32(static_cast<float>(in.scalars[i]))
                                             : dev.upload(in.tensors[in.tensor_of_param[i]]));
  auto rt = make_runtime(global.verbose);
  KernelRef kr = rt->load(o.source, kernel_name);
  KernelTimer timer;
  std::vector<std::vector<std::string>> rows;
  std::ofstream out;
  if (!o.out.empty()) {
    out.open(o.out, std::ios::app);
    if (!out) throw Error(fmt::format("cannot write '{}'", o.out));
  }
  for (const Bindings& extra : expand_sweep(o.sweep)) {
    Config config = forced;
    for (const auto& [n, v] : extra) config[n] = v;
    LaunchOptions lo;
    lo.config = config;
    const PreparedLaunch* prepared = nullptr;
    try {
      prepared = &rt->prepare(kr, args, lo);
    } catch (const ConstraintError& e) {
      std::cerr << "skipped: " << e.what() << "\n";
      continue;
    }
    const PreparedLaunch& pl = *prepared;
    std::vector<std::string> cfg;
    for (const auto& t : k.tunables) cfg.push_back(t.name + "=" + pl.config.at(t.name));
    TimingOptions to;
    to.repeats = o.repeats;
    to.flush = o.flush;
    to.tries = 3;
    Timing t = timer.time([&](cu::CUstream s) { rt->launch_config(kr, pl.config, args, s); }, to);
    rows.push_back({k.name, join(cfg, ","), fmt::format("{:.2f}", t.median_ms * 1e3)});
    if (out)
      out << nlohmann::json{{"kernel", k.name},
                            {"source", o.source},
                            {"shape", sizes},
                            {"config", join(cfg, ",")},
                            {"ms", t.median_ms},
                            {"p10_ms", t.p10_ms},
                            {"p90_ms", t.p90_ms},
                            {"commit", o.commit},
                            {"device", query_device().name},
                            {"date", today()}}
                 .dump()
          << "\n";
  }
  std::cout << format_table({"kernel", "config", "us"}, rows);
}

} // namespace

void register_bench_command(CLI::App& app, GlobalOptions& global) {
  auto o = std::make_shared<BenchOptions>();
  auto* cmd = app.add_subcommand(
      "bench",
      "Time a workload's kernels (L2 flushed, CUDA events, median) and write JSON results");
  cmd->add_option("source", o->source,
                  "A .tile file (with --shape and --set) instead of a workload: random inputs");
  cmd->add_option("--kernel", o->kernel, "Kernel name when the file holds several");
  cmd->add_option("--workload", o->workload, "Workload (default paged_sparse)");
  cmd->add_option("--dtype", o->dtype, "f16, bf16 or all (default: the workload's first)");
  cmd->add_option("--case", o->case_filter,
                  "Only shapes whose name contains this (e.g. ctx131072)");
  cmd->add_option("--shape", o->shape,
                  "The user's own shape (see `tilejit list`); sizes for a .tile file");
  cmd->add_option("--set", o->set,
                  "Force NAME=VALUE (a generic or tunable; STEP:NAME=VALUE: one step's)");
  cmd->add_option("--sweep", o->sweep,
                  "Time every combination, e.g. CHUNK=128|256,BN=32|64 or linear:WARPS=2|4 (best "
                  "per shape in the table)");
  cmd->add_option("--out", o->out,
                  "JSON lines file (default bench/results/<date>-<workload>.jsonl)");
  cmd->add_option("--commit", o->commit,
                  "Commit id to record with the results (default: the commit this tilejit was "
                  "built from, \"-dirty\" when it had uncommitted changes)");
  cmd->add_option("--plan", o->plan,
                  "For shapes with several plans (`tilejit list`): time this one, or `all` "
                  "(default: the database's choice per shape, else the first)");
  cmd->add_option("--repeats", o->repeats, "Timed calls per measurement (default 30)");
  cmd->add_option_function<std::string>(
      "--flush",
      [o](const std::string& v) {
        if (v != "memset" && v != "kernel")
          throw CLI::ValidationError("--flush", str("'", v, "': expected memset or kernel"));
        o->flush = v == "kernel" ? FlushKind::kernel : FlushKind::memset;
      },
      "How the L2 is flushed before each timed call: memset (the driver's, default) or kernel "
      "(a fill kernel, as torch's zero_() in the Triton peer's timing)");
  cmd->add_option_function<std::string>(
      "--launch",
      [o](const std::string& v) {
        if (v != "graph" && v != "direct")
          throw CLI::ValidationError("--launch", str("'", v, "': expected graph or direct"));
        o->graph = v == "graph";
      },
      "How `ms` is timed: direct (cuLaunchKernel per call, default) or graph (a CUDA-graph "
      "replay, as the Triton peer's `ms`); ms_direct and ms_graph are recorded either way");
  cmd->callback([o, &global] {
    if (o->commit.empty()) o->commit = commit_of_version(tilejit_version());
    if (!o->source.empty()) {
      if (!o->workload.empty()) throw Error("give either a .tile file or --workload, not both");
      return bench_tile_file(*o, global);
    }
    if (o->workload.empty()) o->workload = "paged_sparse";
    bench_workload(*o, global);
  });
}

} // namespace tilejit::cli
