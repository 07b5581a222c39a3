// `tilejit bench --workload paged_sparse`: times kernels the way the peers are timed (L2 flushed,
// CUDA events, median), writes one JSON line per measurement, and prints a table with GB/s and
// the share of the HBM floor.
#include "tools/cli/cli_support.h"
#include "tools/cli/commands.h"

#include "runtime/cuda_driver.h"
#include "runtime/device_buffer.h"
#include "runtime/device_info.h"
#include "support/text.h"
#include "tuner/db_binary_source.h"
#include "tuner/db_config_selector.h"
#include "tuner/kernel_timer.h"
#include "tuner/tuner.h"
#include "workloads/paged_sparse.h"
#include "workloads/registry.h"

#include <tilejit/tilejit.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <random>

namespace tilejit::cli {
namespace {

struct BenchOptions {
  std::string workload = "paged_sparse", dtype = "f16", case_filter, out, commit, sweep;
  std::vector<std::string> set;
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

void bench_paged_sparse(const BenchOptions& o, const GlobalOptions& global) {
  CudaDriver::require();
  DeviceInfo dev = query_device();
  double bandwidth = measure_copy_bandwidth();
  std::cerr << dev.name << ": device-to-device copy " << bandwidth / 1e9
            << " GB/s (read + write)\n";
  Runtime rt(RuntimeOptions{0, "", std::nullopt,
                            global.verbose ? [](const std::string& m) { std::cerr << m << "\n"; }
                                           : std::function<void(const std::string&)>()});
  KernelRef k = rt.load(workloads::kPagedSparseSource);
  // Tuned configurations come from the database (exact shape, else the nearest tuned one).
  std::string db_file = global.db_path.empty() ? TuneDatabase::default_path() : global.db_path;
  auto db = std::make_shared<TuneDatabase>(db_file);
  rt.set_config_selector(make_db_config_selector(db, current_identity()));
  rt.set_binary_source(make_db_binary_source(db));
  KernelTimer timer;
  std::ofstream out;
  std::string out_path =
      o.out.empty() ? str("bench/results/", today(), "-paged_sparse.jsonl") : o.out;
  out.open(out_path, std::ios::app);
  if (!out) throw Error(str("cannot write '", out_path, "'"));
  std::vector<DType> dtypes;
  if (o.dtype == "f16" || o.dtype == "both") dtypes.push_back(DType::F16);
  if (o.dtype == "bf16" || o.dtype == "both") dtypes.push_back(DType::BF16);
  Bindings forced = parse_assignments(o.set, "--set");
  std::vector<Bindings> sweep = expand_sweep(o.sweep);
  std::vector<std::vector<std::string>> rows;
  uint64_t seed = std::random_device{}();
  for (DType t : dtypes)
    for (const auto& c : workloads::paged_sparse_cases()) {
      if (!o.case_filter.empty() && c.name().find(o.case_filter) == std::string::npos) continue;
      auto d = workloads::make_paged_sparse_data(c.shape(t), seed++);
      DeviceCopies copies;
      auto up = [&](ref::HostBuffer& h) { return copies.upload(h); };
      std::vector<Arg> args = {up(d->q),        up(d->k_cache),
                               up(d->v_cache),  up(d->block_table),
                               up(d->seq_lens), up(d->kept_idx),
                               up(d->kept_len), up(d->o),
                               up(d->lse),      Arg::f32(static_cast<float>(d->scale))};
      auto ref = workloads::paged_sparse_reference(*d);
      double floor_ms = workloads::paged_sparse_floor_bytes(d->shape) / bandwidth * 1e3;
      double best_ms = 1e30;
      std::string best_config;
      for (const Bindings& extra : sweep) {
        Config config = forced;
        for (const auto& [n, v] : extra) config[n] = v;
        for (const auto& [n, v] : workloads::paged_sparse_generics(d->shape)) config[n] = v;
        std::string why;
        Config resolved;
        try {
          resolved = rt.resolve_config(k, args, config, &why);
          rt.launch_config(k, resolved, args);
        } catch (const ConstraintError& e) {
          continue;
        }
        d->o.poison();
        copies.buffer(7).upload(d->o.data(),
                                static_cast<size_t>(d->o.numel()) * dtype_size(d->o.dtype()));
        rt.launch_config(k, resolved, args);
        CudaDriver::get().check(CudaDriver::get().cuCtxSynchronize(), "cuCtxSynchronize");
        copies.download(7, d->o);
        copies.download(8, d->lse);
        auto e = workloads::compare_paged_sparse(*d, ref);
        // Timed both ways, as the Triton peer is: launched directly (cuLaunchKernel per call)
        // and replayed from a CUDA graph (what a serving engine does with a decode step). `ms`
        // is the one --launch names. On an H100 a graph replay of this one kernel measured
        // 0.1-0.9 us slower than direct launches; the peer's two launches gain ~1 us from one.
        auto call = [&](cu::CUstream s) { rt.launch_config(k, resolved, args, s); };
        TimingOptions to;
        to.repeats = o.repeats;
        to.flush = o.flush;
        to.tries = 3; // a disturbed timing is taken again, as the Triton peer's script does
        Timing direct = timer.time(call, to);
        to.graph = true;
        Timing graphed = timer.time(call, to);
        const Timing& tm = o.graph ? graphed : direct;
        std::vector<std::string> cfg;
        for (const auto& tn : rt.kernel(k).tunables)
          cfg.push_back(tn.name + "=" + resolved[tn.name]);
        std::string cfg_text = join(cfg, ",");
        double bytes = workloads::paged_sparse_floor_bytes(d->shape);
        nlohmann::json j = {
            {"workload", "paged_sparse"},
            {"variant", "sparse"},
            {"impl", "tilejit"},
            {"shape",
             {{"B", d->shape.batch},
              {"Hq", d->shape.heads_q},
              {"Hkv", d->shape.heads_kv},
              {"D", c.head_dim},
              {"ps", c.page_size},
              {"ctx", c.context},
              {"r", c.ratio},
              {"kept", d->shape.kept_lens[0]}}},
            {"dtype", dtype_name(t)},
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
            {"floor_ms", floor_ms},
            {"pct_floor", 100.0 * floor_ms / tm.median_ms},
            {"err_o", e.o},
            {"err_lse", e.lse},
            {"correct", e.ok()},
            {"config", cfg_text},
            {"config_source", why},
            {"device", dev.name},
            {"date", today()},
            {"commit", o.commit},
            {"copy_bandwidth_gbps", bandwidth / 1e9},
            {"flush", o.flush == FlushKind::kernel ? "kernel" : "memset"},
            {"method", str("L2 flushed (256 MB ",
                           o.flush == FlushKind::kernel ? "written by a fill kernel" : "memset",
                           ") before each call, CUDA events, median")}};
        out << j.dump() << "\n";
        out.flush();
        if (!e.ok())
          std::cerr << "WRONG result for " << c.name() << " " << cfg_text << ": " << e.describe()
                    << "\n";
        if (e.ok() && tm.median_ms < best_ms) best_ms = tm.median_ms, best_config = cfg_text;
        if (sweep.size() > 1)
          std::cerr << "  " << c.name() << " " << cfg_text << ": " << tm.median_ms * 1e3 << " us\n";
      }
      char ms[32], pct[32], gbps[32];
      std::snprintf(ms, sizeof ms, "%.1f", best_ms * 1e3);
      std::snprintf(pct, sizeof pct, "%.0f%%", 100.0 * floor_ms / best_ms);
      std::snprintf(gbps, sizeof gbps, "%.0f",
                    workloads::paged_sparse_floor_bytes(d->shape) / (best_ms * 1e-3) / 1e9);
      rows.push_back({dtype_name(t), c.name(), best_config, ms, gbps,
                      str(static_cast<int>(floor_ms * 1e3 * 10) / 10.0), pct});
    }
  std::cout << format_table({"dtype", "shape", "config", "us", "GB/s", "floor us", "% floor"},
                            rows);
  std::cerr << "results appended to " << out_path << "\n";
}

} // namespace

void register_bench_command(CLI::App& app, GlobalOptions& global) {
  auto o = std::make_shared<BenchOptions>();
  auto* cmd = app.add_subcommand(
      "bench",
      "Time a workload's kernels (L2 flushed, CUDA events, median) and write JSON results");
  cmd->add_option("--workload", o->workload, "Workload (default paged_sparse)");
  cmd->add_option("--dtype", o->dtype, "f16, bf16 or both (default f16)");
  cmd->add_option("--case", o->case_filter,
                  "Only shapes whose name contains this (e.g. ctx131072)");
  cmd->add_option("--set", o->set, "Force NAME=VALUE (a generic or tunable)");
  cmd->add_option(
      "--sweep", o->sweep,
      "Time every combination, e.g. CHUNK=128|256,BN=32|64 (best per shape in the table)");
  cmd->add_option("--out", o->out,
                  "JSON lines file (default bench/results/<date>-paged_sparse.jsonl)");
  cmd->add_option("--commit", o->commit, "Commit id to record with the results");
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
    workloads::find_workload(o->workload);
    if (o->workload != "paged_sparse")
      throw Error(str("bench: workload '", o->workload, "' has no benchmark yet"));
    bench_paged_sparse(*o, global);
  });
}

} // namespace tilejit::cli
