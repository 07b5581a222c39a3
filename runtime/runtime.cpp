// The public Runtime: kernels by handle, variants compiled on demand and cached per
// configuration and alignment, scratch tensors owned here, launches through the driver API.
#include <tilejit/tilejit.h>

#include "compiler/kernel_library.h"
#include "compiler/launch_plan.h"
#include "runtime/cuda_driver.h"
#include "runtime/cuda_module.h"
#include "runtime/device_buffer.h"
#include "runtime/device_info.h"
#include "runtime/jit_compiler.h"
#include "runtime/kernel_args.h"
#include "runtime/module_cache.h"
#include "support/text.h"

#include <mutex>
#include <set>

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

struct LoadedKernel {
  LoadedModule module;
  const dsl::Kernel* kernel = nullptr;
};

struct LoadedVariant {
  CompiledVariant compiled;
  CudaModule module;
  cu::CUfunction function = nullptr;
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

size_t caller_param_count(const dsl::Kernel& k) {
  size_t n = 0;
  for (const auto& p : k.params) n += p.is_scratch ? 0 : 1;
  return n;
}

} // namespace

struct Runtime::Impl {
  RuntimeOptions options;
  std::function<void(const std::string&)> log;
  std::vector<std::unique_ptr<LoadedKernel>> kernels;
  std::map<std::string, std::unique_ptr<LoadedVariant>>
      variants;                                // by kernel id + config + alignment
  std::map<std::string, DeviceBuffer> scratch; // by kernel id + param + shape
  std::unique_ptr<ModuleCache> cache;
  mutable std::optional<DeviceInfo> device;
  ConfigSelector selector;
  BinarySource binary_source;
  std::mutex mutex;

  void note(const std::string& m) const {
    if (log) log(m);
  }
  LoadedKernel& get(KernelRef k) {
    if (k.id < 0 || k.id >= static_cast<int>(kernels.size())) throw Error("invalid kernel handle");
    return *kernels[k.id];
  }
};

Runtime::Runtime(RuntimeOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  impl_->log = options.log;
  impl_->cache =
      std::make_unique<ModuleCache>(options.cache_dir, [this](std::string m) { impl_->note(m); });
}

Runtime::~Runtime() = default;

bool Runtime::has_gpu() const {
  return CudaDriver::available();
}

const DeviceInfo& Runtime::device() const {
  if (!impl_->device) impl_->device = query_device(impl_->options.device);
  return *impl_->device;
}

std::string Runtime::arch() const {
  if (!impl_->options.arch.empty()) return impl_->options.arch;
  if (has_gpu()) return device().arch();
  return "sm_90a";
}

void Runtime::set_config_selector(ConfigSelector selector) {
  impl_->selector = std::move(selector);
}
void Runtime::set_binary_source(BinarySource source) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->binary_source = std::move(source);
}
void Runtime::set_log(std::function<void(const std::string&)> log) {
  impl_->log = std::move(log);
}

KernelRef Runtime::load(const std::string& source, const std::string& name) {
  auto lk = std::make_unique<LoadedKernel>();
  if (starts_with(source, "embedded:"))
    lk->module = load_embedded_tile(source.substr(9));
  else
    lk->module = load_tile_file(source);
  lk->kernel = &lk->module.kernel(name);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->kernels.push_back(std::move(lk));
  return KernelRef{static_cast<int>(impl_->kernels.size()) - 1};
}

const dsl::Kernel& Runtime::kernel(KernelRef k) const {
  return *impl_->get(k).kernel;
}
const std::string& Runtime::source_hash(KernelRef k) const {
  return impl_->get(k).module.source_hash;
}

Config Runtime::resolve_config(KernelRef k, const std::vector<Arg>& args, const Config& forced,
                               std::string* why) {
  const dsl::Kernel& kernel = *impl_->get(k).kernel;
  if (args.size() != caller_param_count(kernel))
    throw Error(str("kernel '", kernel.name, "' takes ", caller_param_count(kernel),
                    " arguments, got ", args.size()));
  std::vector<ArgSpec> specs = arg_specs(kernel, args);
  Config given = forced;
  infer_generics(kernel, specs, given);
  // Generics are fixed by the arguments; ask the selector for tunables.
  std::string reason = forced.empty() ? "defaults" : "forced values, defaults for the rest";
  std::set<std::string> tunable_names;
  for (const auto& t : kernel.tunables) tunable_names.insert(t.name);
  bool all_forced = true;
  for (const auto& t : kernel.tunables) all_forced = all_forced && forced.count(t.name);
  if (impl_->selector && !all_forced) {
    Config generics;
    for (const auto& g : kernel.generics)
      if (given.count(g.name)) generics[g.name] = given[g.name];
    Bindings partial = complete_bindings(kernel, given);
    LaunchPlan plan = plan_launch(kernel, partial, specs);
    std::set<std::string> scalars;
    for (const auto& p : kernel.params)
      if (!p.type.has_dims) scalars.insert(p.name);
    std::map<std::string, int64_t> sizes;
    for (const auto& [n, v] : plan.env)
      if (!tunable_names.count(n) && !generics.count(n) && !scalars.count(n) && n != "SMEM")
        sizes[n] = v.i;
    std::string sel_why;
    if (auto chosen = impl_->selector(kernel.name, impl_->get(k).module.source_hash, generics,
                                      sizes, &sel_why)) {
      for (const auto& [n, v] : *chosen)
        if (!forced.count(n) && tunable_names.count(n)) given[n] = v;
      reason = sel_why;
    } else if (!sel_why.empty()) {
      reason = sel_why;
    }
  }
  if (why) *why = reason;
  return complete_bindings(kernel, given);
}

Runtime::LaunchShape Runtime::launch_shape(KernelRef k, const std::vector<Arg>& args,
                                           const Config& forced) {
  const dsl::Kernel& kernel = *impl_->get(k).kernel;
  if (args.size() != caller_param_count(kernel))
    throw Error(str("kernel '", kernel.name, "' takes ", caller_param_count(kernel),
                    " arguments, got ", args.size()));
  std::vector<ArgSpec> specs = arg_specs(kernel, args);
  Config given;
  for (const auto& g : kernel.generics)
    if (forced.count(g.name)) given[g.name] = forced.at(g.name);
  infer_generics(kernel, specs, given);
  Bindings complete = complete_bindings(kernel, given);
  LaunchPlan plan = plan_launch(kernel, complete, specs);
  LaunchShape shape;
  std::set<std::string> compile_time;
  for (const auto& g : kernel.generics) {
    shape.generics[g.name] = complete.at(g.name);
    compile_time.insert(g.name);
  }
  for (const auto& t : kernel.tunables) compile_time.insert(t.name);
  std::set<std::string> scalars;
  for (const auto& p : kernel.params)
    if (!p.type.has_dims) scalars.insert(p.name);
  for (const auto& [n, v] : plan.env)
    if (!compile_time.count(n) && !scalars.count(n) && n != "SMEM") shape.sizes[n] = v.i;
  size_t next = 0;
  for (const auto& p : kernel.params) {
    if (p.is_scratch) continue;
    const Arg& a = args[next++];
    if (a.is_tensor) shape.dtypes[p.name] = dtype_name(a.tensor.dtype);
  }
  return shape;
}

const CompiledVariant& Runtime::compile(KernelRef k, const Config& config,
                                        const std::vector<Arg>& args) {
  LoadedKernel& lk = impl_->get(k);
  const dsl::Kernel& kernel = *lk.kernel;
  CompileOptions options;
  options.arch = arch();
  if (has_gpu()) options.smem_limit = device().smem_per_block_optin;
  std::string key = str(k.id, "|", options.arch);
  // Scratch tensors are dense and allocated here (cuMemAlloc aligns to 256 bytes), so their
  // alignment follows from their shapes, which follow from the arguments and the config.
  std::vector<ArgSpec> specs = arg_specs(kernel, args);
  std::vector<std::vector<int64_t>> scratch_shapes;
  try {
    scratch_shapes = plan_launch(kernel, config, specs).scratch_shapes;
  } catch (const Error&) {
    scratch_shapes.assign(kernel.params.size(), {}); // no launch shapes (compile-only use)
  }
  size_t next = 0;
  bool index32 = true;
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
      if (vector_aligned(args[next].tensor)) {
        options.vector_aligned.insert(p.name);
        key += "|a:" + p.name;
      }
      index32 = index32 && offsets_fit_int32(args[next].tensor);
    }
    ++next;
  }
  // Without arguments (a compile-only use) nothing is proven: index in 64 bits.
  options.index32 = index32 && !args.empty();
  if (options.index32) key += "|i32";
  for (const auto& [n, v] : config) key += str("|", n, "=", v);
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    auto it = impl_->variants.find(key);
    if (it != impl_->variants.end()) return it->second->compiled;
  }
  JitRequest req;
  req.kernel = &kernel;
  req.source_hash = lk.module.source_hash;
  req.bindings = config;
  req.options = options;
  req.cache = impl_->cache.get();
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    req.binary_source = impl_->binary_source;
  }
  auto v = std::make_unique<LoadedVariant>();
  v->compiled = jit_compile(req);
  impl_->note(str(
      v->compiled.from_cache ? v->compiled.cache_source + " hit for " : "compiled ", kernel.name,
      " [",
      join(
          [&] {
            std::vector<std::string> parts;
            for (const auto& [n, x] : config) parts.push_back(n + "=" + x);
            return parts;
          }(),
          " "),
      "] for ", options.arch,
      v->compiled.from_cache ? "" : str(" in ", static_cast<int>(v->compiled.compile_ms), " ms")));
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto& slot = impl_->variants[key];
  if (!slot) slot = std::move(v);
  return slot->compiled;
}

void Runtime::launch(KernelRef k, const std::vector<Arg>& args, const LaunchOptions& options) {
  std::string why;
  Config config = resolve_config(k, args, options.config, &why);
  impl_->note(str("launch ", impl_->get(k).kernel->name, ": configuration from ", why));
  launch_config(k, config, args, options.stream);
  if (options.synchronize)
    CudaDriver::get().check(CudaDriver::get().cuCtxSynchronize(), "cuCtxSynchronize");
}

void Runtime::launch_config(KernelRef k, const Config& config, const std::vector<Arg>& args,
                            void* stream) {
  LoadedKernel& lk = impl_->get(k);
  const dsl::Kernel& kernel = *lk.kernel;
  CudaDriver& driver = CudaDriver::get();
  driver.ensure_context(impl_->options.device);
  std::vector<ArgSpec> specs = arg_specs(kernel, args);
  LaunchPlan plan = plan_launch(kernel, config, specs);
  // Every tensor must be on the GPU.
  {
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
  }
  const CompiledVariant& compiled = compile(k, config, args);
  LoadedVariant* variant = nullptr;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    for (auto& [key, v] : impl_->variants)
      if (&v->compiled == &compiled) variant = v.get();
  }
  TJ_ICHECK(variant, "compiled variant not registered");
  if (!variant->function) {
    variant->module = CudaModule::load(compiled.cubin, impl_->options.device);
    variant->function = variant->module.function(compiled.entry);
    if (compiled.smem_bytes > 48 * 1024)
      driver.check(driver.cuFuncSetAttribute(variant->function,
                                             cu::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             static_cast<int>(compiled.smem_bytes)),
                   "cuFuncSetAttribute(max dynamic shared memory)");
  }
  KernelArgs packed;
  size_t next = 0;
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    const dsl::Param& p = kernel.params[i];
    const ir::Param& ip = compiled.params[i];
    if (p.is_scratch) {
      const std::vector<int64_t>& shape = plan.scratch_shapes[i];
      int64_t numel = 1;
      for (int64_t d : shape) numel *= d;
      std::string skey = str(k.id, "|", p.name, "|",
                             join(
                                 [&] {
                                   std::vector<std::string> s;
                                   for (int64_t d : shape) s.push_back(std::to_string(d));
                                   return s;
                                 }(),
                                 "x"));
      std::lock_guard<std::mutex> lock(impl_->mutex);
      auto it = impl_->scratch.find(skey);
      if (it == impl_->scratch.end()) {
        DeviceBuffer buf(static_cast<size_t>(std::max<int64_t>(numel, 1)) * dtype_size(ip.dtype),
                         impl_->options.device);
        // Zeroed scratch (counters) must start at 0; the kernel leaves it at 0 after each use.
        buf.fill_byte(0);
        it = impl_->scratch.emplace(skey, std::move(buf)).first;
      }
      packed.add_tensor(Tensor::contiguous(it->second.data(), ip.dtype, shape), compiled.index32);
      continue;
    }
    const Arg& a = args[next++];
    if (a.is_tensor)
      packed.add_tensor(a.tensor, compiled.index32);
    else
      packed.add_scalar(ip.dtype, dtype_is_float(a.scalar_dtype) ? HostValue::of_float(a.f)
                                                                 : HostValue::of_int(a.i));
  }
  if (plan.grid[0] == 0 || plan.grid[1] == 0 || plan.grid[2] == 0) return; // nothing to do
  driver.check(driver.cuLaunchKernel(variant->function, static_cast<unsigned>(plan.grid[0]),
                                     static_cast<unsigned>(plan.grid[1]),
                                     static_cast<unsigned>(plan.grid[2]),
                                     static_cast<unsigned>(compiled.threads), 1, 1,
                                     static_cast<unsigned>(compiled.smem_bytes),
                                     static_cast<cu::CUstream>(stream), packed.pointers(), nullptr),
               str("cuLaunchKernel(", kernel.name, ")").c_str());
}

} // namespace tilejit
