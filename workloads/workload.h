// The workload interface (WORKLOADS.md): what a workload is to the rest of tilejit. A workload
// names its kernels and the host-side sequence of launches that runs them (one-time steps such
// as a weight repack marked as such), its WORKLOADS.md cases and a parser for the user's own
// shapes, random inputs, the float64 reference and the comparison, the floor and its peers.
// The CLI (list, run, tune, bench) and the tuner are generic over it: adding a workload touches
// workloads/ and kernels_src/, nothing else.
#pragma once

#include "compiler/ref/run_tile.h"

#include <tilejit/tilejit.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tilejit::workloads {

/// One kernel of a workload: a .tile source and the kernel's name in it.
struct KernelSource {
  std::string name;   ///< the kernel's name in its .tile file
  std::string source; ///< a path, or "embedded:workloads/<file>.tile"
};

/// An argument of a step: one of the problem's buffers (by name), or a scalar.
struct StepArg {
  std::string buffer; ///< empty for a scalar
  Arg scalar;
  static StepArg of(std::string buffer_name);
  static StepArg value(Arg scalar_value);
};

/// One launch of a workload's host sequence.
struct Step {
  std::string label;               ///< names the step in tables ("decode", "repack", "dq")
  std::string kernel;              ///< a KernelSource::name of the workload
  std::vector<StepArg> args;       ///< in the kernel's parameter order, scratch excluded
  Config generics;                 ///< generic values no tensor fixes (paged_sparse's G)
  std::vector<std::string> writes; ///< the buffers this step writes
  bool one_time = false;           ///< set-up (a weight repack): once per problem, timed apart
  /// Tunables of configurations the tuner measures first for this step (after the database's
  /// nearby winners): the ones that won on similar shapes where they were measured, so that a
  /// budgeted search starts from them. Unnamed tunables keep their defaults; one that is not a
  /// valid configuration here (a constraint, a smaller GPU) is skipped. The search still
  /// measures the rest of the space and keeps whatever is fastest.
  std::vector<Config> suggested;
  /// What a launch of this step takes where nothing was tuned for it, in place of the kernel's
  /// portable defaults: the configuration the workload's op launches untuned (attention's tiles
  /// on Hopper), so that `run` and `bench` of an untuned shape time what an application gets.
  /// Applies on GPUs of compute capability `fallback_cc_major` (where it was measured); empty:
  /// the defaults. A fallback that breaks one of the kernel's constraints is dropped.
  Config fallback;
  int fallback_cc_major = 0;
};

/// One way to compute a problem's outputs: a host sequence of steps. A problem may offer several
/// (another kernel for the same job, another split into launches); the tuner tunes each one's
/// steps, times each per-call sequence and keeps the fastest per shape (workloads/plan_choice.h).
struct Plan {
  std::string name;    ///< short, unique among the problem's plans ("atomic_dq", "dq_kernel")
  std::string summary; ///< one line for tables and --plan's help
  std::vector<Step> steps;
};

/// What a buffer is to the sequence: given by the caller, produced for the caller, or passed
/// from one step to the next.
enum class BufferRole { input, output, intermediate };

struct BufferSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  BufferRole role = BufferRole::input;
};

/// How a run's outputs compare with the reference (every element of every output).
struct Comparison {
  bool ok = false;
  /// ||out - ref|| / ||ref|| per output, in the workload's order.
  std::vector<std::pair<std::string, double>> errors;
  /// What is wrong beyond the norms: NaN (unwritten) elements, values that must be exact.
  std::string problems;
  /// "o 1.2e-03, lse 4.0e-06" (and the problems, when any).
  std::string summary() const;
};

/// The least work a problem needs: bytes through device memory, floating-point operations.
struct FloorWork {
  double bytes = 0, flops = 0;
};
/// This GPU's measured ceilings (0: not measured).
struct Ceilings {
  double bytes_per_s = 0, flops_per_s = 0;
};
/// The floor in ms: the larger of bytes over bandwidth and flops over the compute rate.
double floor_ms(const FloorWork& w, const Ceilings& c);

/// Host data of one problem: every buffer (inputs drawn at random, never zeros), and the
/// reference, computed on first use.
class ProblemData {
public:
  virtual ~ProblemData() = default;
  /// The host buffer of BufferSpec `name`; throws tilejit::Error for an unknown name.
  virtual ref::HostBuffer& buffer(const std::string& name) = 0;
  /// Compares the outputs (as downloaded into buffer()) with the float64 reference.
  virtual Comparison compare() = 0;
};

/// One shape of a workload.
class Problem {
public:
  virtual ~Problem() = default;
  /// Short name: a WORKLOADS.md case ("D128/ps16/ctx131072/r0.05") or the user's shape.
  virtual std::string name() const = 0;
  /// Every size ("f16 B=3 Hq=32 Hkv=8 D=128 page=16 ctx<=131072 kept=2621..2621").
  virtual std::string describe() const = 0;
  virtual DType dtype() const = 0;
  /// The benchmark rows' `variant` (paged_sparse: "sparse"), so they pair with the peers'.
  virtual std::string variant() const { return "default"; }
  virtual std::vector<BufferSpec> buffers() const = 0;
  /// The host sequence, in order: one-time steps first. This is the plan the problem runs when
  /// nothing else was chosen (plans()'s first).
  virtual std::vector<Step> steps() const = 0;
  /// Every way to compute the outputs, the default (steps()) first; each plan's buffers are among
  /// buffers() (a plan may leave some unused). One plan, "default", unless a workload offers more.
  virtual std::vector<Plan> plans() const { return {{"default", "", steps()}}; }
  /// The plan (an index into plans()) a shape takes where nothing was tuned for it or a nearby
  /// shape, on a GPU of compute capability `cc_major` (0: none): the one the workload's op
  /// launches untuned, so that `run` and `bench` time what an application gets. The first by
  /// default.
  virtual size_t untuned_plan(int cc_major) const {
    (void)cc_major;
    return 0;
  }
  virtual std::unique_ptr<ProblemData> make_data(uint64_t seed) const = 0;
  virtual FloorWork floor() const = 0;
  /// The shape as JSON for benchmark rows (the keys the peers' rows use, so they pair).
  virtual nlohmann::json shape_json() const = 0;
};

/// A workload of WORKLOADS.md.
class Workload {
public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;
  virtual std::vector<KernelSource> kernels() const = 0;
  /// Who we are measured against ("bench/peers/paged_sparse_peer.py: Triton split-K").
  virtual std::vector<std::string> peers() const = 0;
  /// Supported input dtypes; the first is the default.
  virtual std::vector<DType> dtypes() const = 0;
  /// The WORKLOADS.md shapes for one dtype, in the order they are tuned and timed.
  virtual std::vector<std::unique_ptr<Problem>> cases(DType dtype) const = 0;
  /// The user's own shape from NAME=VALUE items (--shape); errors say which size is missing,
  /// unknown or inconsistent, and what the workload takes.
  virtual std::unique_ptr<Problem> parse_shape(const std::map<std::string, std::string>& items,
                                               DType dtype) const = 0;
  /// What --shape takes, one line per size.
  virtual std::string shape_help() const = 0;
};

/// Adds a workload to the registry (the built-in ones are there from the start; tests add
/// their own). A name registered twice replaces the earlier one.
void register_workload(std::shared_ptr<const Workload> workload);
/// Every registered workload, by name.
std::vector<std::shared_ptr<const Workload>> registered_workloads();
/// The workload called `name`. Throws tilejit::Error naming the registered workloads, or
/// saying that a WORKLOADS.md workload is not implemented yet.
std::shared_ptr<const Workload> find_workload(const std::string& name);
/// WORKLOADS.md workloads not implemented yet: (name, summary).
std::vector<std::pair<std::string, std::string>> planned_workloads();

/// --shape items with their names upper-cased (and `aliases` renamed: H -> HQ), each one of
/// `known`; an unknown or repeated name is an error naming it and what `workload` takes
/// (`takes`: "B, HQ, HKV, ...").
std::map<std::string, std::string>
normalize_shape_items(const std::map<std::string, std::string>& given,
                      const std::set<std::string>& known, const std::string& workload,
                      const std::string& takes,
                      const std::map<std::string, std::string>& aliases = {});
/// A --shape value: an integer of at most 12 characters, negative only when `allow_negative`;
/// otherwise an error naming the size ("--shape N=x: expected a non-negative integer").
int64_t parse_shape_integer(const std::string& key, const std::string& text,
                            bool allow_negative = false);

/// Reads "f16", "bf16", "both" (every dtype of the workload) into a list; errors name the
/// accepted values.
std::vector<DType> parse_workload_dtypes(const Workload& w, const std::string& text);

} // namespace tilejit::workloads
