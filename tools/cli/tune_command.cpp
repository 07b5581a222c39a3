// `tilejit tune`: fills the tuning database.
//   --workload paged_sparse        every shape of WORKLOADS.md section 1
//   FILE.tile --shape M=..,N=..    any kernel: random inputs, each candidate checked against the
//                                  kernel's default configuration
// Without a GPU it compiles what it can (NVRTC needs none), then says so in one line and exits
// non-zero.
#include "tools/cli/cli_support.h"
#include "tools/cli/commands.h"

#include "compiler/ref/run_tile.h"
#include "runtime/cuda_driver.h"
#include "runtime/device_buffer.h"
#include "runtime/device_info.h"
#include "runtime/jit_compiler.h"
#include "runtime/nvrtc.h"
#include "support/text.h"
#include "tuner/kernel_timer.h"
#include "tuner/tuner.h"
#include "workloads/paged_sparse.h"
#include "workloads/registry.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>

namespace tilejit::cli {
namespace {

struct TuneOptions {
  std::string source, workload, kernel, dtype = "f16", case_filter, strategy = "auto",
                                        budget = "60";
  std::vector<std::string> set, shape;
  uint64_t seed = 1;
  int repeats = 20;
  bool retune = false;
  int warm_start = 8;
};

std::string fmt(double v, const char* f) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
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

std::string db_path(const GlobalOptions& g) {
  return g.db_path.empty() ? TuneDatabase::default_path() : g.db_path;
}

void print_progress(const std::string& label, const TuneProgress& p) {
  std::fprintf(stderr, "\r%s [%d/%d] best %s %s  %.0fs elapsed, ~%.0fs left   ", label.c_str(),
               p.done, p.total, p.best_ms > 0 ? fmt(p.best_ms * 1e3, "%.1f us").c_str() : "-",
               p.best_config.c_str(), p.elapsed_s, p.eta_s);
  std::fflush(stderr);
}

/// No GPU: compile the default configuration of every variant the workload needs, so the user
/// learns that the kernels build, then stop with one clear line.
[[noreturn]] void compile_without_gpu(const TuneOptions& o) {
  LoadedModule m = load_kernel_source(o.source, o.workload);
  const dsl::Kernel& k = m.kernel(o.kernel);
  std::vector<Bindings> variants;
  if (o.workload == "paged_sparse") {
    for (int64_t d : {128, 256})
      for (int64_t ps : {16, 64})
        for (const char* t : {"f16", "bf16"})
          if (o.dtype == "both" || o.dtype == t)
            variants.push_back(
                {{"T", t}, {"D", std::to_string(d)}, {"G", "4"}, {"PS", std::to_string(ps)}});
  } else {
    variants.push_back(parse_assignments(o.set, "--set"));
  }
  int ok = 0;
  if (Nvrtc::available()) {
    for (const Bindings& v : variants) {
      JitRequest r;
      r.kernel = &k;
      r.source_hash = m.source_hash;
      r.bindings = complete_bindings(k, v);
      r.options.arch = "sm_90a";
      for (const auto& p : k.params) r.options.vector_aligned.insert(p.name);
      r.options.index32 = true;
      CompiledVariant c = jit_compile(r);
      std::cerr << "compiled " << k.name << " ["
                << join(
                       [&] {
                         std::vector<std::string> s;
                         for (const auto& [n, x] : c.bindings) s.push_back(n + "=" + x);
                         return s;
                       }(),
                       " ")
                << "] for sm_90a: " << c.resources.registers << " registers, " << c.smem_bytes
                << " bytes shared, " << static_cast<int>(c.compile_ms) << " ms\n";
      ++ok;
    }
  } else {
    std::cerr << "NVRTC not available (" << Nvrtc::unavailable_reason() << "): nothing compiled\n";
  }
  throw NoGpuError(
      str(CudaDriver::unavailable_reason(), "; compiled ", ok, " variant(s), tuned nothing"));
}

void tune_paged_sparse(const TuneOptions& o, const GlobalOptions& g) {
  auto db = std::make_shared<TuneDatabase>(db_path(g));
  TuneIdentity id = current_identity();
  DeviceInfo dev = query_device();
  double bandwidth = measure_copy_bandwidth();
  Runtime rt(RuntimeOptions{0, "", std::nullopt,
                            g.verbose ? [](const std::string& m) { std::cerr << m << "\n"; }
                                      : std::function<void(const std::string&)>()});
  KernelRef k = rt.load(workloads::kPagedSparseSource);
  std::vector<DType> dtypes;
  if (o.dtype == "f16" || o.dtype == "both") dtypes.push_back(DType::F16);
  if (o.dtype == "bf16" || o.dtype == "both") dtypes.push_back(DType::BF16);
  if (dtypes.empty()) throw Error(str("--dtype must be f16, bf16 or both, got '", o.dtype, "'"));
  std::vector<std::vector<std::string>> rows;
  auto start = std::chrono::steady_clock::now();
  int compiled = 0;
  uint64_t seed = o.seed;
  std::cerr << dev.name << " (" << dev.arch() << "), database " << db->path() << ", copy bandwidth "
            << fmt(bandwidth / 1e9, "%.0f") << " GB/s\n";
  for (DType t : dtypes)
    for (const auto& c : workloads::paged_sparse_cases()) {
      if (!o.case_filter.empty() && c.name().find(o.case_filter) == std::string::npos) continue;
      workloads::PagedSparseShape shape = c.shape(t);
      std::string label = str(dtype_name(t), " ", c.name());
      Config generics = workloads::paged_sparse_generics(shape);
      // Data only when the database cannot answer (a warm run generates nothing).
      std::vector<Arg> views;
      for (const Tensor& v : workloads::paged_sparse_arg_views(shape)) views.push_back(Arg::of(v));
      views.push_back(Arg::f32(1.0f));
      TuneKey key = make_tune_key(rt.kernel(k).name, rt.source_hash(k),
                                  rt.launch_shape(k, views, generics).generics,
                                  rt.launch_shape(k, views, generics).sizes, id);
      std::unique_ptr<workloads::PagedSparseData> d;
      DeviceCopies dev;
      std::vector<Arg> args;
      workloads::PagedSparseReference ref;
      bool warm = !o.retune && db->winner(key).has_value();
      if (!warm) {
        d = workloads::make_paged_sparse_data(shape, seed++);
        auto up = [&](ref::HostBuffer& h) { return dev.upload(h); };
        args = {up(d->q),        up(d->k_cache),
                up(d->v_cache),  up(d->block_table),
                up(d->seq_lens), up(d->kept_idx),
                up(d->kept_len), up(d->o),
                up(d->lse),      Arg::f32(static_cast<float>(d->scale))};
        ref = workloads::paged_sparse_reference(*d);
      } else {
        args = views;
      }
      TuneRequest r = make_request(o, rt, k, args, generics);
      r.prepare_check = [&] {
        dev.buffer(7).fill_byte(0xFF); // NaN in f16/bf16
        dev.buffer(8).fill_byte(0xFF); // NaN in f32
      };
      r.check = [&](std::string* why) {
        dev.download(7, d->o);
        dev.download(8, d->lse);
        auto e = workloads::compare_paged_sparse(*d, ref);
        if (!e.ok() && why) *why = e.describe();
        return e.ok();
      };
      r.progress = [&](const TuneProgress& p) { print_progress(label, p); };
      if (g.verbose) r.log = [](const std::string& m) { std::cerr << "\n" << m; };
      TuneOutcome out = tune(r, *db, id);
      compiled += out.compiled;
      std::fprintf(stderr, "\r%-80s\r", "");
      double bytes = workloads::paged_sparse_floor_bytes(shape);
      double floor_ms = bytes / bandwidth * 1e3;
      std::vector<std::string> cfg;
      for (const auto& tn : rt.kernel(k).tunables)
        cfg.push_back(tn.name + "=" + out.winner[tn.name]);
      rows.push_back({dtype_name(t), c.name(), join(cfg, ","), fmt(out.winner_ms * 1e3, "%.1f"),
                      fmt(bytes / (out.winner_ms * 1e-3) / 1e9, "%.0f"),
                      fmt(100.0 * floor_ms / out.winner_ms, "%.0f%%"),
                      out.default_ms > 0 ? fmt(out.default_ms / out.winner_ms, "%.2fx") : "-",
                      out.from_database ? "database" : str(out.trials, " trials")});
      std::cerr << label << ": " << rows.back()[2] << " " << rows.back()[3] << " us ("
                << rows.back()[7] << ")\n";
    }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << format_table(
      {"dtype", "shape", "winner", "median us", "GB/s", "% floor", "vs default", "source"}, rows);
  std::cout << "tuned " << rows.size() << " shapes in " << fmt(secs, "%.1f") << " s; compiled "
            << compiled << " variants; database " << db->path() << "\n";
}

/// Any .tile kernel: random inputs from --shape; candidates must match the default config.
void tune_tile_file(const TuneOptions& o, const GlobalOptions& g) {
  LoadedModule m = load_kernel_source(o.source, "");
  const dsl::Kernel& k = m.kernel(o.kernel);
  std::map<std::string, int64_t> sizes = parse_sizes(o.shape);
  Config given = parse_assignments(o.set, "--set");
  RandomInputs in = make_random_inputs(k, sizes, given, o.seed);
  std::vector<ref::HostBuffer>& host = in.tensors;
  DeviceCopies dev;
  std::vector<Arg> args;
  for (size_t i = 0; i < in.tensor_of_param.size(); ++i)
    args.push_back(in.tensor_of_param[i] < 0 ? Arg::f32(static_cast<float>(in.scalars[i]))
                                             : dev.upload(host[in.tensor_of_param[i]]));
  auto db = std::make_shared<TuneDatabase>(db_path(g));
  TuneIdentity id = current_identity();
  Runtime rt;
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
  CudaDriver::get().check(CudaDriver::get().cuCtxSynchronize(), "cuCtxSynchronize");
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
      {{k.name, join(cfg, ","), fmt(out.winner_ms * 1e3, "%.1f"),
        out.default_ms > 0 ? fmt(out.default_ms / out.winner_ms, "%.2fx") : "-",
        out.from_database ? "database" : str(out.trials, " trials")}});
}

} // namespace

void register_tune_command(CLI::App& app, GlobalOptions& global) {
  auto o = std::make_shared<TuneOptions>();
  auto* cmd = app.add_subcommand(
      "tune",
      "Tune a workload's kernels (or any .tile kernel) per shape; winners go to the database");
  cmd->add_option("source", o->source, "A .tile file (with --shape) instead of a workload");
  cmd->add_option("--workload", o->workload, "A workload: paged_sparse (see `tilejit list`)");
  cmd->add_option("--kernel", o->kernel, "Kernel name when the file holds several");
  cmd->add_option("--shape", o->shape,
                  "Sizes for a .tile file: M=64,N=128 (and scalar parameters)");
  cmd->add_option("--set", o->set, "Fix generics (T=f16) for a .tile file");
  cmd->add_option("--dtype", o->dtype, "Workload dtype: f16, bf16 or both (default f16)");
  cmd->add_option("--case", o->case_filter, "Only workload shapes whose name contains this");
  cmd->add_option("--strategy", o->strategy,
                  "auto, exhaustive, halving or evolutionary (default auto)");
  cmd->add_option("--budget", o->budget,
                  "Per shape: trials (\"60\") or time (\"90s\"); default 60 trials");
  cmd->add_option("--seed", o->seed, "Seed of the search (deterministic for a seed; default 1)");
  cmd->add_option("--repeats", o->repeats, "Timed calls per measurement (default 20)");
  cmd->add_flag("--retune", o->retune, "Measure again even when the database has a winner");
  cmd->add_option("--warm-start", o->warm_start,
                  "Measure the winners of up to N nearby tuned shapes first (default 8; 0: off)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([o, &global] {
    if (!o->workload.empty()) workloads::find_workload(o->workload);
    if (o->workload.empty() && o->source.empty())
      throw Error("give --workload NAME or a .tile file with --shape (see `tilejit list`)");
    if (!CudaDriver::available()) compile_without_gpu(*o);
    if (o->workload == "paged_sparse") return tune_paged_sparse(*o, global);
    tune_tile_file(*o, global);
  });
}

} // namespace tilejit::cli
