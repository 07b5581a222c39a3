// The public Runtime: kernels by handle, variants compiled on demand and cached per
// configuration and alignment, scratch tensors owned here, launches through the driver API.
#include <tilejit/tilejit.h>

#include "compiler/expand_pipelines.h"
#include "compiler/kernel_library.h"
#include "compiler/launch_plan.h"
#include "runtime/cuda_driver.h"
#include "runtime/device_buffer.h"
#include "runtime/device_info.h"
#include "runtime/hip_runtime.h"
#include "runtime/jit_compiler.h"
#include "runtime/kernel_args.h"
#include "runtime/launch_signature.h"
#include "runtime/module_cache.h"
#include "runtime/runtime_access.h"
#include "runtime/tma_map.h"
#include "runtime/toolchain.h"
#include "support/deadline.h"
#include "support/text.h"
#include "tuner/search_space.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <unordered_map>

namespace tilejit {

Arg Arg::of(const Tensor& t) {
  Arg a;
  a.is_tensor = true;
  a.tensor = t;
  return a;
}
Arg Arg::f32(float v) {
  Arg a;
  a.is_tensor = false;
  a.scalar_dtype = DType::F32;
  a.f = v;
  a.i = static_cast<int64_t>(v);
  return a;
}
Arg Arg::i32(int32_t v) {
  Arg a;
  a.is_tensor = false;
  a.scalar_dtype = DType::I32;
  a.i = v;
  a.f = v;
  return a;
}
Arg Arg::i64(int64_t v) {
  Arg a;
  a.is_tensor = false;
  a.scalar_dtype = DType::I64;
  a.i = v;
  a.f = static_cast<double>(v);
  return a;
}

namespace {

/// A loaded .tile kernel and what every launch of it needs from its declaration. Immutable
/// once loaded, and shared with compile tasks that may outlive the Runtime.
struct LoadedKernel {
  LoadedModule module;
  const dsl::Kernel* kernel = nullptr;
  size_t caller_params = 0;       ///< parameters the caller passes (scratch excluded)
  std::vector<bool> plan_scalars; ///< per caller parameter: its value is read by the plan
  std::set<std::string> tunables; ///< tunable names
  std::set<std::string> scalars;  ///< scalar parameter names
};

/// One compiled variant, its module loaded on the GPU when first launched.
struct LoadedVariant {
  CompiledVariant compiled;
  std::mutex load_mutex;
  std::unique_ptr<LoadedFunction> function; ///< set once, under load_mutex
};

/// Compiled variants by key (kernel, arch, alignment, index width, configuration). Shared with
/// compile tasks, so a task that finishes after its Runtime is gone still has somewhere to put
/// its result.
struct VariantStore {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<LoadedVariant>> by_key;
};

/// A scratch tensor the runtime owns: one per kernel, parameter, shape and stream, so that two
/// streams running the same kernel on the same shape never share arrival counters or partials.
struct ScratchTensor {
  DeviceBuffer buffer;
  std::vector<int64_t> shape, strides;
};

/// A prepared launch and what launching it again needs.
struct PreparedEntry : PreparedLaunch {
  std::shared_ptr<const LoadedKernel> kernel;
  std::shared_ptr<LoadedVariant> variant;
  std::vector<std::vector<int64_t>> scratch_shapes; ///< per parameter (empty if not scratch)
  std::vector<ScratchTensor*> scratch;              ///< per parameter, once ready
  std::vector<DType> param_dtypes;                  ///< per parameter, as compiled
  /// Per parameter: dimensions declared 1|X given size 1, passed with size X and stride 0.
  std::vector<std::vector<std::pair<int, int64_t>>> broadcast_dims;
  bool broadcasts = false;    ///< any parameter has such a dimension
  DeviceBuffer bounds_record; ///< debug mode: where the kernel records a bad subscript
  bool index32 = false;
  std::atomic<bool> ready{false}; ///< module loaded, scratch allocated, arguments checked
  std::mutex ready_mutex;
};

std::vector<ArgSpec> arg_specs(const dsl::Kernel& k, const std::vector<Arg>& args) {
  std::vector<ArgSpec> specs;
  size_t next = 0;
  for (const auto& p : k.params) {
    ArgSpec s;
    if (p.is_scratch) {
      s.provided = false;
      specs.push_back(s);
      continue;
    }
    if (next >= args.size()) {
      s.provided = false;
      specs.push_back(s);
      continue;
    }
    const Arg& a = args[next++];
    s.is_tensor = a.is_tensor;
    if (a.is_tensor) {
      s.dtype = a.tensor.dtype;
      s.shape = a.tensor.shape;
    } else {
      s.dtype = a.scalar_dtype;
      s.scalar = dtype_is_float(a.scalar_dtype) ? HostValue::of_float(a.f) : HostValue::of_int(a.i);
    }
    specs.push_back(s);
  }
  return specs;
}

std::string config_text(const Config& config) {
  std::vector<std::string> parts;
  for (const auto& [n, x] : config) parts.push_back(n + "=" + x);
  return join(parts, " ");
}

/// `t` as the kernel sees it: each dimension declared 1|X that was given size 1 has size X
/// and stride 0 (every index reads the one element, as PyTorch's expand does).
Tensor broadcast_view(const Tensor& t, const std::vector<std::pair<int, int64_t>>& dims) {
  Tensor v = t;
  for (const auto& [d, size] : dims) {
    v.shape[d] = size;
    v.strides[d] = 0;
  }
  return v;
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return false;
  std::string s = v;
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  throw Error(str(name, "='", s, "': expected 1 or 0"));
}

/// Seconds from the environment variable `name` (a number >= 0), or `fallback` when unset.
double env_seconds(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  double s = std::strtod(v, &end);
  if (*end != '\0' || !(s >= 0) || s > 1e9)
    throw Error(str(name, "='", v, "': expected seconds, a number from 0 (no limit) to 1e9"));
  return s;
}

/// What compiling one variant needs, by value or shared ownership only.
struct CompileJob {
  std::shared_ptr<const LoadedKernel> kernel;
  std::shared_ptr<ModuleCache> cache;
  std::shared_ptr<VariantStore> store;
  BinarySource binary_source;
  std::function<void(const std::string&)> log;
  std::string key;
  JitRequest request; ///< request.kernel points into `kernel`; request.cache into `cache`

  /// The variant, compiled now unless the store has it. A compile past `deadline_s` seconds
  /// (<= 0: none) throws tilejit::Error and goes on, detached, holding its own copy of the job.
  std::shared_ptr<LoadedVariant> run(double deadline_s = 0) const {
    {
      std::lock_guard<std::mutex> lock(store->mutex);
      auto it = store->by_key.find(key);
      if (it != store->by_key.end()) return it->second;
    }
    auto v = std::make_shared<LoadedVariant>();
    if (deadline_s > 0) {
      auto detached = std::make_shared<CompileJob>(*this);
      detached->log = {}; // the Runtime's log may be gone by the time it ends
      auto compiled = run_with_deadline<CompiledVariant>(
          [detached] { return jit_compile(detached->request); }, deadline_s);
      if (!compiled)
        throw Error(str("compiling kernel '", kernel->kernel->name, "' [",
                        config_text(request.bindings), "] took over ", deadline_s,
                        " s (RuntimeOptions::compile_timeout_s or TILEJIT_COMPILE_TIMEOUT; 0 "
                        "waits as long as it takes)"));
      v->compiled = std::move(*compiled);
    } else {
      v->compiled = jit_compile(request);
    }
    if (log)
      log(str(
          v->compiled.from_cache ? v->compiled.cache_source + " hit for " : "compiled ",
          kernel->kernel->name, " [", config_text(request.bindings), "] for ", request.options.arch,
          v->compiled.from_cache ? ""
                                 : str(" in ", static_cast<int>(v->compiled.compile_ms), " ms")));
    // ptxas's notes that it made the code slower than written (wgmmas serialized...): said
    // with the compile, so that a slow variant in a tuning run shows why (-v, RuntimeOptions::log).
    if (log)
      for (const std::string& n : v->compiled.resources.performance_notes)
        log(str(kernel->kernel->name, " [", config_text(request.bindings),
                "]: ptxas: performance loss: ", n));
    std::lock_guard<std::mutex> lock(store->mutex);
    auto& slot = store->by_key[key];
    if (!slot) slot = std::move(v);
    return slot;
  }
};

} // namespace

struct Runtime::Impl {
  RuntimeOptions options;
  std::function<void(const std::string&)> log;
  std::vector<std::shared_ptr<const LoadedKernel>> kernels;
  std::map<std::string, KernelRef> embedded; ///< "embedded:path|name" -> its one load
  std::shared_ptr<VariantStore> variants = std::make_shared<VariantStore>();
  // Node-based: entries and scratch tensors keep their addresses while others are added.
  std::map<std::string, std::unique_ptr<ScratchTensor>> scratch; // kernel|param|shape|stream
  std::unordered_map<LaunchSignature, std::unique_ptr<PreparedEntry>, LaunchSignatureHash> prepared;
  /// Entries forget_prepared() dropped: kept, since a launch on another thread may hold one.
  std::vector<std::unique_ptr<PreparedEntry>> retired;
  std::shared_ptr<ModuleCache> cache;
  mutable std::optional<DeviceInfo> device;
  ConfigSelector selector;
  /// select_config()'s answers (with their why) per key: cleared with the prepared launches.
  std::map<std::string, std::pair<std::optional<Config>, std::string>> selected;
  FirstUseTuner first_use_tuner;
  bool tune_on_first_use = false;
  bool debug_bounds = false;
  double compile_timeout_s = 0;
  BinarySource binary_source;
  mutable std::mutex mutex;
  std::atomic<int64_t> hits{0};

  void note(const std::string& m) const {
    if (log) log(m);
  }
  std::shared_ptr<const LoadedKernel> get(KernelRef k) const {
    std::lock_guard<std::mutex> lock(mutex);
    if (k.id < 0 || k.id >= static_cast<int>(kernels.size())) throw Error("invalid kernel handle");
    return kernels[k.id];
  }
};

Runtime::Runtime(RuntimeOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->log = options.log;
  // The option, when given, wins; the environment is read only when it is not.
  impl_->tune_on_first_use =
      options.tune_on_first_use ? *options.tune_on_first_use : env_flag("TILEJIT_TUNE");
  impl_->debug_bounds = options.debug_bounds ? *options.debug_bounds : env_flag("TILEJIT_DEBUG");
  impl_->compile_timeout_s = options.compile_timeout_s
                                 ? *options.compile_timeout_s
                                 : env_seconds("TILEJIT_COMPILE_TIMEOUT", 300);
  if (!(impl_->compile_timeout_s >= 0))
    throw Error(str("RuntimeOptions::compile_timeout_s = ", impl_->compile_timeout_s,
                    ": expected seconds >= 0 (0: no limit)"));
  Impl* impl = impl_.get();
  impl_->cache =
      std::make_shared<ModuleCache>(options.cache_dir, [impl](std::string m) { impl->note(m); });
}

Runtime::~Runtime() {
  // Join the threads of compiles that have finished: a program that ends right after its
  // Runtime then has no thread still tearing down (LeakSanitizer reported NVRTC's thread-local
  // storage as leaked when one was). Compiles past their deadline run on, owning their state.
  reap_detached_work();
}

bool Runtime::has_gpu() const {
  return CudaDriver::available();
}

void Runtime::require_gpu() const {
  CudaDriver::require();
}

const DeviceInfo& Runtime::device() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (!impl_->device) impl_->device = query_device(impl_->options.device);
  return *impl_->device;
}

int Runtime::device_ordinal() const {
  return impl_->options.device;
}

std::string Runtime::arch() const {
  if (!impl_->options.arch.empty()) return impl_->options.arch;
  if (has_gpu()) return device().arch();
  return default_arch();
}

void Runtime::set_config_selector(ConfigSelector selector) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->selector = std::move(selector);
  impl_->selected.clear();
}

bool Runtime::has_config_selector() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return static_cast<bool>(impl_->selector);
}

std::optional<Config> Runtime::select_config(const std::string& kernel,
                                             const std::string& source_hash, const Config& generics,
                                             const std::map<std::string, int64_t>& sizes,
                                             std::string* why) {
  std::string key = kernel + "|" + source_hash;
  for (const auto& [n, v] : generics) key += "|" + n + "=" + v;
  for (const auto& [n, v] : sizes) key += "|" + n + "=" + std::to_string(v);
  ConfigSelector selector;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    if (auto it = impl_->selected.find(key); it != impl_->selected.end()) {
      if (why) *why = it->second.second;
      return it->second.first;
    }
    selector = impl_->selector;
  }
  std::string said = "no tuning database";
  std::optional<Config> chosen;
  // The selector runs outside the lock: it reads the database.
  if (selector) chosen = selector(kernel, source_hash, generics, sizes, &said);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->selected[key] = {chosen, said};
  if (why) *why = said;
  return chosen;
}
void Runtime::set_first_use_tuner(FirstUseTuner tuner) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->first_use_tuner = std::move(tuner);
}
bool Runtime::tunes_on_first_use() const {
  return impl_->tune_on_first_use;
}
void Runtime::set_binary_source(BinarySource source) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->binary_source = std::move(source);
}
void Runtime::set_log(std::function<void(const std::string&)> log) {
  impl_->log = std::move(log);
}

KernelRef Runtime::load(const std::string& source, const std::string& name) {
  // An embedded kernel cannot change: loading it again (a typed op per call) is a lookup.
  const bool embedded = starts_with(source, "embedded:") || starts_with(source, "grad:embedded:");
  const std::string embedded_key = source + "|" + name;
  if (embedded) {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto it = impl_->embedded.find(embedded_key);
    if (it != impl_->embedded.end()) return it->second;
  }
  auto lk = std::make_shared<LoadedKernel>();
  if (std::optional<std::string> forward = gradient_source(source)) {
    // The gradient of kernel `name` of the forward source: the derived module's one kernel.
    lk->module = load_gradient_module(*forward, name);
    lk->kernel = &lk->module.kernel("");
  } else {
    lk->module = starts_with(source, "embedded:") ? load_embedded_tile(source.substr(9))
                                                  : load_tile_file(source);
    lk->kernel = &lk->module.kernel(name);
  }
  const dsl::Kernel& k = *lk->kernel;
  std::vector<bool> by_param = scalars_read_by_plan(k);
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (k.params[i].is_scratch) continue;
    ++lk->caller_params;
    lk->plan_scalars.push_back(by_param[i]);
    if (!k.params[i].type.has_dims) lk->scalars.insert(k.params[i].name);
  }
  for (const auto& t : k.tunables) lk->tunables.insert(t.name);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (embedded) {
    auto it = impl_->embedded.find(embedded_key);
    if (it != impl_->embedded.end()) return it->second; // another thread loaded it meanwhile
  }
  impl_->kernels.push_back(std::move(lk));
  KernelRef ref{static_cast<int>(impl_->kernels.size()) - 1};
  if (embedded) impl_->embedded[embedded_key] = ref;
  return ref;
}

KernelInfo Runtime::kernel_info(KernelRef k) const {
  auto lk = impl_->get(k);
  return tilejit::kernel_info(*lk->kernel, lk->module.source_hash);
}

const dsl::Kernel& RuntimeAccess::kernel(const Runtime& rt, KernelRef k) {
  return *rt.impl_->get(k)->kernel;
}
const std::string& Runtime::source_hash(KernelRef k) const {
  return impl_->get(k)->module.source_hash;
}

namespace {

void check_arg_count(const LoadedKernel& lk, const std::vector<Arg>& args) {
  if (args.size() != lk.caller_params)
    throw Error(str("kernel '", lk.kernel->name, "' takes ", lk.caller_params, " arguments, got ",
                    args.size()));
}

/// The runtime sizes of a plan: what a ConfigSelector and a tuning key are given.
std::map<std::string, int64_t> plan_sizes(const LoadedKernel& lk, const LaunchPlan& plan,
                                          const Config& generics) {
  std::map<std::string, int64_t> sizes;
  for (const auto& [n, v] : plan.env)
    if (!lk.tunables.count(n) && !generics.count(n) && !lk.scalars.count(n) && n != "SMEM")
      sizes[n] = v.i;
  return sizes;
}

} // namespace

/// SMEM in `where` for this runtime's launches: the GPU's opt-in limit, or the default's.
static int64_t block_smem_limit(Runtime& rt) {
  return rt.has_gpu() ? rt.device().smem_per_block_optin : CompileOptions{}.smem_limit;
}

/// The kernel's declared defaults for the tunables not in `given`, or the valid configuration
/// nearest them where they break a constraint (said in `reason`).
static Config defaults_that_hold(Runtime& rt, const dsl::Kernel& kernel, const Config& given,
                                 std::string& reason) {
  std::string note;
  Config out = complete_valid_bindings(kernel, given, block_smem_limit(rt), &note);
  if (!note.empty()) reason += "; " + note;
  return out;
}

/// `fallback`'s tunables over `given` (forced values kept) when the result holds the kernel's
/// constraints; nullopt, with `reason` saying why, when it breaks one.
static std::optional<Config> fallback_that_holds(Runtime& rt, const LoadedKernel& lk,
                                                 const Config& given, const Config& forced,
                                                 const Config& fallback, std::string& reason) {
  const dsl::Kernel& kernel = *lk.kernel;
  Config with = given;
  for (const auto& [n, v] : fallback) {
    if (!lk.tunables.count(n))
      throw Error(str("the launch's fallback configuration names '", n, "', which kernel '",
                      kernel.name, "' has no tunable of"));
    if (!forced.count(n)) with[n] = v;
  }
  Bindings complete = complete_bindings(kernel, with);
  if (!bindings_hold(kernel, complete, block_smem_limit(rt))) {
    reason += str("; the caller's fallback (", config_text(fallback),
                  ") breaks a constraint of the kernel here: not used");
    return std::nullopt;
  }
  reason = str(reason == "defaults" ? "" : reason + "; ", "the caller's fallback (",
               config_text(fallback), ") for the kernel's defaults");
  return complete;
}

/// Forced values, then (for a launch, when on) tuning on first use, then the selector, then the
/// caller's fallback, then the kernel's defaults.
static Config resolve(Runtime& rt, Runtime::Impl& impl, KernelRef k, const LoadedKernel& lk,
                      const std::vector<Arg>& args, const Config& forced, const Config& fallback,
                      void* stream, bool may_tune, std::string* why) {
  const dsl::Kernel& kernel = *lk.kernel;
  check_arg_count(lk, args);
  std::vector<ArgSpec> specs = arg_specs(kernel, args);
  Config given = forced;
  infer_generics(kernel, specs, given);
  std::string reason = forced.empty() ? "defaults" : "forced values, defaults for the rest";
  bool all_forced = true;
  for (const auto& t : kernel.tunables) all_forced = all_forced && forced.count(t.name);
  ConfigSelector selector;
  FirstUseTuner tuner;
  {
    std::lock_guard<std::mutex> lock(impl.mutex);
    selector = impl.selector;
    tuner = impl.first_use_tuner;
  }
  if (all_forced) {
    if (why) *why = reason;
    return complete_bindings(kernel, given);
  }
  if (may_tune && impl.tune_on_first_use && tuner) {
    std::string tune_why;
    if (auto tuned = tuner(rt, k, args, forced, stream, &tune_why)) {
      for (const auto& [n, v] : *tuned)
        if (!forced.count(n) && lk.tunables.count(n)) given[n] = v;
      if (why) *why = tune_why;
      return complete_bindings(kernel, given);
    }
    if (!tune_why.empty()) impl.note(str(kernel.name, ": ", tune_why));
  }
  if (selector) {
    Config generics;
    for (const auto& g : kernel.generics)
      if (given.count(g.name)) generics[g.name] = given[g.name];
    Bindings partial = complete_bindings(kernel, given);
    LaunchPlan plan = plan_launch(kernel, partial, specs);
    std::string sel_why;
    if (auto chosen = selector(kernel.name, lk.module.source_hash, generics,
                               plan_sizes(lk, plan, generics), &sel_why)) {
      for (const auto& [n, v] : *chosen)
        if (!forced.count(n) && lk.tunables.count(n)) given[n] = v;
      reason = sel_why;
      if (why) *why = reason;
      return complete_bindings(kernel, given);
    }
    if (!sel_why.empty()) reason = sel_why;
  }
  if (!fallback.empty())
    if (auto chosen = fallback_that_holds(rt, lk, given, forced, fallback, reason)) {
      if (why) *why = reason;
      return *chosen;
    }
  Config out = defaults_that_hold(rt, kernel, given, reason);
  if (why) *why = reason;
  return out;
}

Config Runtime::resolve_config(KernelRef k, const std::vector<Arg>& args, const Config& forced,
                               std::string* why, const Config& fallback) {
  auto lk = impl_->get(k);
  return resolve(*this, *impl_, k, *lk, args, forced, fallback, nullptr, /*may_tune=*/false, why);
}

Runtime::LaunchShape Runtime::launch_shape(KernelRef k, const std::vector<Arg>& args,
                                           const Config& forced) {
  auto lk = impl_->get(k);
  const dsl::Kernel& kernel = *lk->kernel;
  check_arg_count(*lk, args);
  std::vector<ArgSpec> specs = arg_specs(kernel, args);
  Config given;
  for (const auto& g : kernel.generics)
    if (forced.count(g.name)) given[g.name] = forced.at(g.name);
  infer_generics(kernel, specs, given);
  Bindings complete = complete_bindings(kernel, given);
  LaunchPlan plan = plan_launch(kernel, complete, specs);
  LaunchShape shape;
  for (const auto& g : kernel.generics) shape.generics[g.name] = complete.at(g.name);
  shape.sizes = plan_sizes(*lk, plan, shape.generics);
  size_t next = 0;
  for (const auto& p : kernel.params) {
    if (p.is_scratch) continue;
    const Arg& a = args[next++];
    if (a.is_tensor) shape.dtypes[p.name] = dtype_name(a.tensor.dtype);
  }
  return shape;
}

namespace {

/// The compile job for `config` and these arguments' alignment: the variant's key and request.
CompileJob make_compile_job(Runtime& rt, Runtime::Impl& impl, KernelRef k,
                            std::shared_ptr<const LoadedKernel> lk, const Config& config,
                            const std::vector<Arg>& args) {
  const dsl::Kernel& kernel = *lk->kernel;
  CompileOptions options;
  options.arch = rt.arch();
  if (rt.has_gpu()) options.smem_limit = rt.device().smem_per_block_optin;
  std::string key = str(k.id, "|", options.arch);
  options.debug_bounds = impl.debug_bounds;
  if (options.debug_bounds) key += "|debug";
  // Scratch tensors are dense and allocated here (cuMemAlloc aligns to 256 bytes), so their
  // alignment follows from their shapes, which follow from the arguments and the config.
  std::vector<ArgSpec> specs = arg_specs(kernel, args);
  std::vector<std::vector<int64_t>> scratch_shapes;
  std::vector<std::vector<std::pair<int, int64_t>>> broadcast_dims(kernel.params.size());
  try {
    LaunchPlan plan = plan_launch(kernel, config, specs);
    scratch_shapes = std::move(plan.scratch_shapes);
    broadcast_dims = std::move(plan.broadcast_dims);
  } catch (const Error&) {
    scratch_shapes.assign(kernel.params.size(), {}); // no launch shapes (compile-only use)
  }
  size_t next = 0;
  bool index32 = true;
  // TMA copies need the driver's tensor maps (CUDA 12+) and a GPU whose arch has them.
  const bool tensor_maps = CudaDriver::available() && CudaDriver::get().has_tensor_maps();
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    const auto& p = kernel.params[i];
    if (p.is_scratch) {
      const auto& shape = scratch_shapes[i];
      DType t = parse_dtype(p.type.dtype).value_or(DType::F32);
      static char aligned_base alignas(256);
      Tensor view = Tensor::contiguous(&aligned_base, t, shape);
      if (!shape.empty() && vector_aligned(view)) {
        options.vector_aligned.insert(p.name);
        key += "|a:" + p.name;
      }
      index32 = index32 && !shape.empty() && offsets_fit_int32(view);
      continue;
    }
    if (next < args.size() && args[next].is_tensor) {
      // As the kernel sees it: broadcast dimensions have stride 0.
      Tensor view = broadcast_view(args[next].tensor, broadcast_dims[i]);
      if (vector_aligned(view)) {
        options.vector_aligned.insert(p.name);
        key += "|a:" + p.name;
      }
      if (tensor_maps && tma_compatible(view)) {
        options.tma_params.insert(p.name);
        key += "|t:" + p.name;
      }
      index32 = index32 && offsets_fit_int32(view);
    }
    ++next;
  }
  // Without arguments (a compile-only use) nothing is proven: index in 64 bits.
  options.index32 = index32 && !args.empty();
  if (options.index32) key += "|i32";
  // The pipelines' slot release (TILEJIT_PIPELINE_RELEASE) changes the generated code: a
  // process that switches it compiles the other variant rather than reusing this one.
  if (!slot_release_enabled()) key += "|release=barrier";
  if (!early_inputs_enabled()) key += "|early=0";
  for (const auto& [n, v] : config) key += str("|", n, "=", v);
  CompileJob job;
  job.kernel = std::move(lk);
  job.cache = impl.cache;
  job.store = impl.variants;
  {
    std::lock_guard<std::mutex> lock(impl.mutex);
    job.binary_source = impl.binary_source;
  }
  job.log = impl.log;
  job.key = std::move(key);
  job.request.kernel = job.kernel->kernel;
  job.request.source_hash = job.kernel->module.source_hash;
  job.request.bindings = config;
  job.request.options = options;
  job.request.cache = job.cache.get();
  job.request.binary_source = job.binary_source;
  return job;
}

} // namespace

const CompiledVariant& RuntimeAccess::compile(Runtime& rt, KernelRef k, const Config& config,
                                              const std::vector<Arg>& args) {
  Runtime::Impl& impl = *rt.impl_;
  return make_compile_job(rt, impl, k, impl.get(k), config, args)
      .run(impl.compile_timeout_s)
      ->compiled;
}

CompileReport Runtime::compile(KernelRef k, const Config& config, const std::vector<Arg>& args) {
  // The caller's config may leave tunables to their defaults (generics must be given).
  Config complete = complete_bindings(*impl_->get(k)->kernel, config);
  return compile_report(RuntimeAccess::compile(*this, k, complete, args));
}

std::function<std::string()> Runtime::compile_task(KernelRef k, const Config& config,
                                                   const std::vector<Arg>& args) {
  auto job =
      std::make_shared<CompileJob>(make_compile_job(*this, *impl_, k, impl_->get(k), config, args));
  job->log = {}; // the Runtime's log may be gone when the task runs
  return [job]() -> std::string {
    try {
      job->run();
      return {};
    } catch (const ConstraintError& e) {
      return str("constraint: ", e.what());
    } catch (const std::exception& e) {
      return e.what();
    }
  };
}

namespace {

/// Builds the prepared launch of a signature not seen before: the whole host-side path.
std::unique_ptr<PreparedEntry> build_entry(Runtime& rt, Runtime::Impl& impl, KernelRef k,
                                           const std::vector<Arg>& args,
                                           const LaunchOptions& options) {
  auto lk = impl.get(k);
  const dsl::Kernel& kernel = *lk->kernel;
  auto e = std::make_unique<PreparedEntry>();
  e->kernel = lk;
  e->config = resolve(rt, impl, k, *lk, args, options.config, options.fallback, options.stream,
                      /*may_tune=*/true, &e->why);
  LaunchPlan plan = plan_launch(kernel, e->config, arg_specs(kernel, args));
  e->variant = make_compile_job(rt, impl, k, lk, e->config, args).run(impl.compile_timeout_s);
  const CompiledVariant& c = e->variant->compiled;
  e->grid = plan.grid;
  e->threads = c.threads;
  e->smem_bytes = c.smem_bytes;
  e->scratch_shapes = std::move(plan.scratch_shapes);
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    if (!kernel.params[i].is_scratch) continue;
    int64_t n = 1;
    for (int64_t d : e->scratch_shapes[i]) n *= d;
    e->scratch_bytes +=
        n * dtype_size(parse_dtype(kernel.params[i].type.dtype).value_or(DType::F32));
  }
  e->broadcast_dims = std::move(plan.broadcast_dims);
  for (const auto& dims : e->broadcast_dims) e->broadcasts = e->broadcasts || !dims.empty();
  e->scratch.assign(kernel.params.size(), nullptr);
  for (const auto& p : c.params) e->param_dtypes.push_back(p.dtype);
  e->index32 = c.index32;
  return e;
}

/// First launch of a prepared signature: the device-side checks, the module, the scratch.
void make_ready(Runtime::Impl& impl, PreparedEntry& e, const std::vector<Arg>& args, void* stream) {
  std::lock_guard<std::mutex> lock(e.ready_mutex);
  if (e.ready.load(std::memory_order_acquire)) return;
  const dsl::Kernel& kernel = *e.kernel->kernel;
  size_t next = 0;
  for (const auto& p : kernel.params) {
    if (p.is_scratch) continue;
    const Arg& a = args[next++];
    if (a.is_tensor && a.tensor.device != DeviceKind::CUDA)
      throw Error(str("kernel '", kernel.name, "': tensor '", p.name, "' is on the CPU (",
                      a.tensor.describe(), "); pass a CUDA tensor"));
    if (a.is_tensor && a.tensor.data == nullptr && a.tensor.numel() > 0)
      throw Error(str("kernel '", kernel.name, "': tensor '", p.name, "' has no data pointer"));
  }
  LoadedVariant& v = *e.variant;
  // On an AMD GPU (a HIP target) the module loads through HIP; what still allocates through
  // the CUDA driver is refused by name rather than failing in it.
  const bool amd = v.compiled.language == "hip";
  if (amd && v.compiled.debug_bounds)
    throw Error(str("kernel '", kernel.name,
                    "': the debug mode's bounds checks are not supported on AMD GPUs yet"));
  {
    std::lock_guard<std::mutex> vlock(v.load_mutex);
    if (!v.function)
      v.function = toolchain_for(v.compiled.language)
                       .load(v.compiled.binary, v.compiled.entry, v.compiled.smem_bytes,
                             impl.options.device);
  }
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    const dsl::Param& p = kernel.params[i];
    if (!p.is_scratch) continue;
    if (amd)
      throw Error(str("kernel '", kernel.name, "': its scratch tensor '", p.name,
                      "' (a derived gradient's checkpoints) is not supported on AMD GPUs yet"));
    const std::vector<int64_t>& shape = e.scratch_shapes[i];
    std::vector<std::string> dims;
    for (int64_t d : shape) dims.push_back(std::to_string(d));
    std::string skey = str(e.variant->compiled.kernel_name, "@", e.kernel.get(), "|", p.name, "|",
                           join(dims, "x"), "|stream ", reinterpret_cast<uintptr_t>(stream));
    std::lock_guard<std::mutex> rlock(impl.mutex);
    auto it = impl.scratch.find(skey);
    if (it == impl.scratch.end()) {
      // Allocating (and zeroing) is not allowed inside a CUDA-graph capture: say what to do
      // rather than fail the capture with the driver's error.
      CudaDriver& d = CudaDriver::get();
      int capturing = 0;
      if (stream &&
          d.cuStreamIsCapturing(static_cast<cu::CUstream>(stream), &capturing) ==
              cu::CUDA_SUCCESS &&
          capturing != 0)
        throw Error(str("kernel '", kernel.name,
                        "': its first launch on this stream allocates the "
                        "stream's scratch '",
                        p.name,
                        "', which cannot happen while the stream "
                        "is being captured into a CUDA graph; launch it once on the capturing "
                        "stream before the capture (with PyTorch: warm up on a stream s, then "
                        "torch.cuda.graph(g, stream=s))"));
      auto t = std::make_unique<ScratchTensor>();
      int64_t numel = 1;
      for (int64_t d : shape) numel *= d;
      t->buffer = DeviceBuffer(static_cast<size_t>(std::max<int64_t>(numel, 1)) *
                                   dtype_size(e.param_dtypes[i]),
                               impl.options.device);
      // Zeroed scratch (counters) must start at 0; the kernel leaves it at 0 after each use.
      t->buffer.fill_byte(0);
      t->shape = shape;
      t->strides = Tensor::contiguous(nullptr, e.param_dtypes[i], shape).strides;
      it = impl.scratch.emplace(skey, std::move(t)).first;
    }
    e.scratch[i] = it->second.get();
  }
  if (v.compiled.debug_bounds) {
    e.bounds_record = DeviceBuffer(64, impl.options.device);
    e.bounds_record.fill_byte(0);
  }
  e.ready.store(true, std::memory_order_release);
}

} // namespace

/// Debug mode, after a launch: waits for it, and throws the first out-of-range subscript the
/// kernel recorded (then clears the record for the next launch).
static void report_bounds(PreparedEntry& e, void* stream) {
  CudaDriver& driver = CudaDriver::get();
  driver.check(driver.cuStreamSynchronize(static_cast<cu::CUstream>(stream)),
               "cuStreamSynchronize (debug mode)");
  struct Record {
    uint32_t site;
    uint32_t program[3];
    int64_t index;
    int64_t size;
  } r{};
  static_assert(sizeof(Record) == 32, "tj::BoundsRecord's layout");
  e.bounds_record.download(&r, sizeof r);
  if (r.site == 0) return;
  e.bounds_record.fill_byte(0);
  const CompiledVariant& c = e.variant->compiled;
  TJ_ICHECK(r.site <= c.bounds_sites.size(), "bounds check site ", r.site, " of ",
            c.bounds_sites.size());
  const BoundsSite& s = c.bounds_sites[r.site - 1];
  std::string text =
      str(s.loc.path(), ":", s.loc.line, ":", s.loc.col, ": runtime error in kernel ",
          c.kernel_name, ", program (", r.program[0], ",", r.program[1], ",", r.program[2],
          "): ", s.gather ? "gathered index " : "index ", r.index,
          " is out of bounds for dimension ", s.dim, " ('", s.dim_name, "') of '", s.tensor,
          "' of size ", r.size, " (TILEJIT_DEBUG bounds check)");
  if (s.loc.known() && !s.loc.file->line_text(s.loc.line).empty())
    text += str("\n    ", s.loc.file->line_text(s.loc.line), "\n    ",
                std::string(std::max(s.loc.col - 1, 0), ' '), "^");
  throw Error(text);
}

/// The prepared launch of `args`: a hash lookup when this signature was seen before.
static PreparedEntry& prepared_entry(Runtime& rt, Runtime::Impl& impl, KernelRef k,
                                     const std::vector<Arg>& args, const LaunchOptions& options) {
  thread_local LaunchSignature sig;
  std::vector<bool> no_plan_scalars;
  const std::vector<bool>* plan_scalars = &no_plan_scalars;
  {
    std::lock_guard<std::mutex> lock(impl.mutex);
    if (k.id < 0 || k.id >= static_cast<int>(impl.kernels.size()))
      throw Error("invalid kernel handle");
    plan_scalars = &impl.kernels[k.id]->plan_scalars; // immutable, kept alive by the Runtime
  }
  make_launch_signature(sig, k.id, options.stream, options.config, args, *plan_scalars,
                        options.fallback);
  {
    std::lock_guard<std::mutex> lock(impl.mutex);
    auto it = impl.prepared.find(sig);
    if (it != impl.prepared.end()) {
      impl.hits.fetch_add(1, std::memory_order_relaxed);
      return *it->second;
    }
  }
  // Outside the lock: resolving may compile or tune for seconds. Tuning on first use launches
  // other configurations through this function on this thread, which reuses the thread-local
  // signature: keep this launch's own.
  LaunchSignature mine = sig;
  std::unique_ptr<PreparedEntry> e = build_entry(rt, impl, k, args, options);
  impl.note(str("launch ", e->kernel->kernel->name, ": configuration from ", e->why));
  std::lock_guard<std::mutex> lock(impl.mutex);
  auto& slot = impl.prepared[mine];
  if (!slot) slot = std::move(e);
  return *slot;
}

const PreparedLaunch& Runtime::prepare(KernelRef k, const std::vector<Arg>& args,
                                       const LaunchOptions& options) {
  return prepared_entry(*this, *impl_, k, args, options);
}

void Runtime::launch(KernelRef k, const std::vector<Arg>& args, const LaunchOptions& options) {
  PreparedEntry& e = prepared_entry(*this, *impl_, k, args, options);
  // The kernel is compiled (prepared) for the runtime's target; the device that target names
  // is required now: an AMD GPU through HIP for a gfx target ("no AMD GPU: ..." without one),
  // an NVIDIA GPU through the CUDA driver otherwise.
  const bool amd = e.variant->compiled.language == "hip";
  if (amd)
    HipRuntime::get();
  else
    CudaDriver::get().ensure_context(impl_->options.device);
  if (!e.ready.load(std::memory_order_acquire)) make_ready(*impl_, e, args, options.stream);
  thread_local KernelArgs packed;
  packed.clear();
  const dsl::Kernel& kernel = *e.kernel->kernel;
  size_t next = 0;
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    if (const ScratchTensor* t = e.scratch[i]) {
      packed.add_tensor(t->buffer.data(), t->shape.data(), t->strides.data(), t->shape.size(),
                        e.index32);
      continue;
    }
    const Arg& a = args[next++];
    if (a.is_tensor && e.broadcasts && !e.broadcast_dims[i].empty())
      packed.add_tensor(broadcast_view(a.tensor, e.broadcast_dims[i]), e.index32);
    else if (a.is_tensor)
      packed.add_tensor(a.tensor, e.index32);
    else
      packed.add_scalar(e.param_dtypes[i], dtype_is_float(a.scalar_dtype) ? HostValue::of_float(a.f)
                                                                          : HostValue::of_int(a.i));
  }
  // Tensor maps of the arguments the kernel's TMA copies read, after the parameters.
  for (const TmaMapSpec& spec : e.variant->compiled.tma_maps) {
    size_t arg = 0; // the argument of parameter spec.param (scratch tensors take none)
    for (int i = 0; i < spec.param; ++i) arg += kernel.params[i].is_scratch ? 0 : 1;
    TJ_ICHECK(!kernel.params[spec.param].is_scratch && arg < args.size() && args[arg].is_tensor,
              "a tensor map for a parameter that is not a tensor argument");
    const Tensor& t = args[arg].tensor;
    const cu::CUtensorMap map =
        e.broadcasts && !e.broadcast_dims[spec.param].empty()
            ? encode_tma_map(broadcast_view(t, e.broadcast_dims[spec.param]), spec,
                             kernel.params[spec.param].name)
            : encode_tma_map(t, spec, kernel.params[spec.param].name);
    packed.add_bytes(&map, sizeof map);
  }
  // Debug mode: the kernel's last argument is the tj::BoundsRecord* it reports into.
  const bool debug = e.variant->compiled.debug_bounds;
  const auto record = static_cast<int64_t>(e.bounds_record.ptr());
  if (debug) packed.add_scalar(DType::I64, HostValue::of_int(record));
  if (e.grid[0] != 0 && e.grid[1] != 0 && e.grid[2] != 0) { // else nothing to do
    e.variant->function->launch(e.grid, e.threads, e.smem_bytes, options.stream, packed.pointers(),
                                kernel.name);
  }
  if (options.synchronize) {
    if (amd) {
      HipRuntime::get().stream_synchronize(options.stream);
    } else {
      CudaDriver& driver = CudaDriver::get();
      driver.check(driver.cuCtxSynchronize(), "cuCtxSynchronize");
    }
  }
  if (debug) report_bounds(e, options.stream);
}

void Runtime::launch_config(KernelRef k, const Config& config, const std::vector<Arg>& args,
                            void* stream) {
  LaunchOptions o;
  o.config = config;
  o.stream = stream;
  launch(k, args, o);
}

void Runtime::forget_prepared() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  for (auto& [sig, e] : impl_->prepared) impl_->retired.push_back(std::move(e));
  impl_->prepared.clear();
  impl_->selected.clear();
}

Runtime::LaunchStats Runtime::launch_stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return {static_cast<int64_t>(impl_->prepared.size()), impl_->hits.load()};
}

} // namespace tilejit
