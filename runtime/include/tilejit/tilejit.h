// tilejit's public C++ API: load a .tile kernel, and launch it on tensors. The first launch of
// a shape compiles (NVRTC, cached on disk); the configuration is the one you force, else the
// tuned one from the database (when a selector is installed), else the kernel's defaults.
//
//   tilejit::Runtime rt;
//   auto gemm = rt.load("embedded:examples/gemm.tile");
//   rt.launch(gemm, {tilejit::Arg::of(a), tilejit::Arg::of(b), tilejit::Arg::of(c)});
#pragma once

#include <tilejit/device_info.h>
#include <tilejit/dtype.h>
#include <tilejit/errors.h>
#include <tilejit/kernel_info.h>
#include <tilejit/tensor.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tilejit {

/// One kernel argument: a tensor view or a scalar.
struct Arg {
  bool is_tensor = true;
  Tensor tensor;
  DType scalar_dtype = DType::F32;
  double f = 0;
  int64_t i = 0;
  static Arg of(const Tensor& t);
  static Arg f32(float v);
  static Arg i32(int32_t v);
  static Arg i64(int64_t v);
};

/// Values of generics and tunables by name ("T" -> "f16", "BN" -> "64").
using Config = std::map<std::string, std::string>;

struct RuntimeOptions {
  int device = 0;
  /// Compile for this target instead of the GPU's own (e.g. "sm_80"); needed without a GPU.
  std::string arch;
  /// Compiled-module cache directory; empty string: memory only; unset: the default.
  std::optional<std::string> cache_dir;
  /// Receives one line per noteworthy event (compiles, cache hits, configuration choices).
  std::function<void(const std::string&)> log;
  /// Tune a launch's shape on first use when it has no tuned winner (needs a FirstUseTuner,
  /// which the tuner library installs: tilejit::enable_tuning_on_first_use). Unset: on when
  /// the environment has TILEJIT_TUNE=1.
  std::optional<bool> tune_on_first_use;
  /// Debug mode: kernels are compiled with run-time checks of every point and gather subscript
  /// (a variant of its own), and a launch that indexed out of range throws tilejit::Error
  /// naming the tensor, the dimension, the index and the DSL line. Each launch then waits for
  /// the kernel to finish. Unset: on when the environment has TILEJIT_DEBUG=1.
  std::optional<bool> debug_bounds;
  /// A compile (NVRTC) that takes longer than this many seconds fails the launch or compile
  /// with tilejit::Error instead of blocking it; the compile cannot be cancelled, so it goes
  /// on, detached, and its result is dropped. 0: no limit. Unset: TILEJIT_COMPILE_TIMEOUT
  /// from the environment, else 300.
  std::optional<double> compile_timeout_s;
};

struct LaunchOptions {
  void* stream = nullptr; ///< CUstream; null is the legacy default stream
  Config config;          ///< forced values (override the database and the defaults)
  /// Tunable values to use in place of the kernel's declared defaults when neither tuning on
  /// first use nor the selector (the tuning database) chose a configuration: the caller's
  /// measured choice for this kind of shape (an op's best tile on the GPU it ran on). Forced
  /// values and tuned winners come first; a fallback that breaks one of the kernel's `where`
  /// constraints is dropped, and the launch's `why` says so.
  Config fallback;
  bool synchronize = false;
};

/// Handle of a loaded kernel.
struct KernelRef {
  int id = -1;
};

/// Chooses a configuration for a launch (the tuning database plugs in here). Returns nullopt
/// for "no opinion"; `why` receives a short explanation for --verbose.
using ConfigSelector = std::function<std::optional<Config>(
    const std::string& kernel, const std::string& source_hash, const Config& generics,
    const std::map<std::string, int64_t>& sizes, std::string* why)>;

class Runtime;

/// Tunes a launch's shape when the runtime first sees it (RuntimeOptions::tune_on_first_use).
/// Called once per new launch signature, before the ConfigSelector, with the generics and
/// tunables the caller forced; returns the configuration to launch (tuned now, or already
/// tuned), or nullopt to leave the choice to the selector. `why` says what happened.
using FirstUseTuner = std::function<std::optional<Config>(
    Runtime& runtime, KernelRef kernel, const std::vector<Arg>& args, const Config& forced,
    void* stream, std::string* why)>;

/// What a launch resolved to: the configuration, where it came from, and the launch geometry.
/// The runtime keeps one per launch signature (kernel, stream, forced values, and every
/// argument's dtype, shape, strides and 16-byte alignment), so a repeated launch of a known
/// shape is a hash lookup, the argument packing and the driver call.
struct PreparedLaunch {
  Config config;   ///< complete: every generic and tunable
  std::string why; ///< where the configuration came from (defaults, tuned winner, forced...)
  std::array<int64_t, 3> grid = {1, 1, 1};
  int threads = 0;
  int64_t smem_bytes = 0;
  /// Device memory of the kernel's scratch tensors at this shape (a derived gradient's
  /// checkpoints and tape...), allocated at the first launch on a stream and kept by the
  /// runtime: part of what a call holds, beside its arguments.
  int64_t scratch_bytes = 0;
};

/// A store of compiled modules by their cache key, beside the module cache (the tuning
/// database plugs in here, so that an exported database carries its winners' binaries to
/// another machine). Returns nullopt for a miss.
using BinarySource = std::function<std::optional<std::string>(const std::string& cache_key)>;

class Runtime {
public:
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// Whether a GPU is usable (never throws).
  bool has_gpu() const;
  /// Throws NoGpuError, saying why (no driver, no device), when there is no usable GPU.
  void require_gpu() const;
  /// The GPU's properties; throws NoGpuError without one.
  const DeviceInfo& device() const;
  /// The GPU's ordinal among the process's CUDA devices (RuntimeOptions::device).
  int device_ordinal() const;
  /// The compile target: RuntimeOptions::arch, else the GPU's, else "sm_90a".
  std::string arch() const;

  /// Loads a kernel from a .tile file path, or "embedded:<path>" for a kernel shipped in the
  /// library ("embedded:workloads/paged_sparse.tile"). `name` picks one of several kernels.
  KernelRef load(const std::string& source, const std::string& name = "");
  /// The kernel's declaration: its parameters, generics and tunables.
  KernelInfo kernel_info(KernelRef k) const;
  const std::string& source_hash(KernelRef k) const;

  /// The complete configuration a launch with `args` would use (forced > selector > default),
  /// generics inferred from the arguments. `why` says where it came from.
  Config resolve_config(KernelRef k, const std::vector<Arg>& args, const Config& forced = {},
                        std::string* why = nullptr, const Config& fallback = {});
  /// What a launch with `args` is specialised on: the generic values (forced or inferred from
  /// the tensors) and the named runtime sizes. Checks the arguments like a launch does.
  struct LaunchShape {
    Config generics;
    std::map<std::string, int64_t> sizes;
    std::map<std::string, std::string> dtypes; ///< per tensor parameter
  };
  LaunchShape launch_shape(KernelRef k, const std::vector<Arg>& args, const Config& forced = {});
  /// Compiles (or fetches from the cache) the variant for `config` (every generic; tunables
  /// left out take their defaults) and these arguments' alignment (none given: a compile-only
  /// variant with 64-bit indexing). Needs no GPU when an arch was given.
  CompileReport compile(KernelRef k, const Config& config, const std::vector<Arg>& args);
  /// The same compile as a task that owns everything it touches (the kernel, the caches, the
  /// variant store; nothing of the caller's), so a thread running it may outlive the caller's
  /// arguments and this Runtime (the tuner detaches compiles that time out). Returns the
  /// error text, empty on success; a ConstraintError's text starts with "constraint: ".
  std::function<std::string()> compile_task(KernelRef k, const Config& config,
                                            const std::vector<Arg>& args);
  /// Resolves a launch without launching it: the configuration (forced > first-use tuning >
  /// selector > defaults), the checks against the kernel's declaration, the compile. Cached per
  /// launch signature; needs no GPU when an arch was given.
  const PreparedLaunch& prepare(KernelRef k, const std::vector<Arg>& args,
                                const LaunchOptions& options = {});
  /// Launches with the resolved configuration. Checks every argument against the kernel's
  /// declaration first (errors name the tensor and the expected shape).
  void launch(KernelRef k, const std::vector<Arg>& args, const LaunchOptions& options = {});
  /// Launches one exact configuration (the tuner's path).
  void launch_config(KernelRef k, const Config& config, const std::vector<Arg>& args,
                     void* stream = nullptr);
  /// Forgets every prepared launch: the next launch of each shape resolves its configuration
  /// again (after the tuning database changed under this Runtime, say).
  void forget_prepared();
  /// How many launch signatures are prepared, and how many launches found theirs ready.
  struct LaunchStats {
    int64_t prepared = 0, hits = 0;
  };
  LaunchStats launch_stats() const;

  void set_config_selector(ConfigSelector selector);
  /// Whether a selector is installed (use_tuning_database): without one, select_config has
  /// nothing to ask, and an op need not build the key it would ask with.
  bool has_config_selector() const;
  /// Asks the selector (the tuning database) about a key that is not one launch's: a
  /// workload's plan choice ("plan:attention", workloads/plan_choice.h), which the ops read to
  /// take the kernels the tuner found fastest. nullopt without a selector or where it has no
  /// opinion; `why` says which. Remembered per key until the selector changes or
  /// forget_prepared(), like a prepared launch's configuration.
  std::optional<Config> select_config(const std::string& kernel, const std::string& source_hash,
                                      const Config& generics,
                                      const std::map<std::string, int64_t>& sizes,
                                      std::string* why = nullptr);
  void set_first_use_tuner(FirstUseTuner tuner);
  /// Whether launches tune shapes that have no tuned winner (RuntimeOptions::tune_on_first_use).
  bool tunes_on_first_use() const;
  /// Consulted when the module cache misses, before compiling with NVRTC.
  void set_binary_source(BinarySource source);
  void set_log(std::function<void(const std::string&)> log);

  struct Impl;

private:
  friend struct RuntimeAccess; // runtime/runtime_access.h: the library's own way in
  std::unique_ptr<Impl> impl_;
};

} // namespace tilejit
