#include "workloads/problem_on_gpu.h"

#include "runtime/gpu_api.h"
#include "runtime/runtime_access.h"
#include "support/error.h"
#include "support/text.h"

#include <fmt/format.h>

#include <set>

namespace tilejit::workloads {

WorkloadKernels::WorkloadKernels(Runtime& rt, const Workload& w) : rt_(&rt), workload_(w.name()) {
  for (const KernelSource& k : w.kernels()) refs_[k.name] = rt.load(k.source, k.name);
}

KernelRef WorkloadKernels::get(const std::string& kernel_name) const {
  auto it = refs_.find(kernel_name);
  TJ_ICHECK(it != refs_.end(),
            fmt::format("workload '{}' has no kernel '{}'", workload_, kernel_name));
  return it->second;
}

Config step_config(const dsl::Kernel& k, const Step& step, const Config& user) {
  Config out = step.generics;
  std::set<std::string> declared;
  for (const auto& g : k.generics) declared.insert(g.name);
  for (const auto& t : k.tunables) declared.insert(t.name);
  // Plain names first, then STEP:NAME (this step's label or kernel), which wins over them.
  for (const auto& [name, value] : user)
    if (name.find(':') == std::string::npos && declared.count(name)) out[name] = value;
  for (const auto& [name, value] : user) {
    const size_t colon = name.find(':');
    if (colon == std::string::npos) continue;
    const std::string who = name.substr(0, colon), what = name.substr(colon + 1);
    if ((who == step.label || who == step.kernel) && declared.count(what)) out[what] = value;
  }
  return out;
}

void check_step_names(const std::vector<Step>& steps, const Config& user, const char* flag,
                      const std::map<std::string, std::set<std::string>>& declared) {
  auto names_of = [&](const std::string& kernel) {
    auto it = declared.find(kernel);
    return it == declared.end() ? std::set<std::string>{} : it->second;
  };
  for (const auto& [name, value] : user) {
    const size_t colon = name.find(':');
    const std::string who = colon == std::string::npos ? "" : name.substr(0, colon);
    const std::string what = colon == std::string::npos ? name : name.substr(colon + 1);
    std::vector<std::string> known;
    std::set<std::string> names; // what the addressed steps' kernels declare
    bool found = false;
    for (const Step& s : steps) {
      known.push_back(s.label == s.kernel ? s.label : s.label + " (" + s.kernel + ")");
      if (!who.empty() && who != s.label && who != s.kernel) continue;
      found = true;
      for (const std::string& n : names_of(s.kernel)) names.insert(n);
    }
    if (!found)
      throw Error(fmt::format("{} {}={}: no step or kernel '{}' here; the steps are {}", flag, name,
                              value, who, join(known, ", ")));
    if (declared.empty() || names.count(what)) continue;
    const std::string listed = join(std::vector<std::string>(names.begin(), names.end()), ", ");
    if (who.empty())
      throw Error(fmt::format("{} {}={}: no kernel of the steps ({}) has a generic or tunable "
                              "'{}' (theirs: {})",
                              flag, name, value, join(known, ", "), what, listed));
    throw Error(fmt::format("{} {}={}: step '{}' has no generic or tunable '{}' (its: {})", flag,
                            name, value, who, what, listed));
  }
}

std::vector<Arg> shape_only_args(const Problem& p, const Step& step) {
  std::map<std::string, BufferSpec> specs;
  for (BufferSpec& b : p.buffers()) specs[b.name] = std::move(b);
  std::vector<Arg> args;
  for (const StepArg& a : step.args) {
    if (a.buffer.empty()) {
      args.push_back(a.scalar);
      continue;
    }
    auto it = specs.find(a.buffer);
    TJ_ICHECK(it != specs.end(),
              fmt::format("step '{}' names no buffer '{}'", step.label, a.buffer));
    args.push_back(Arg::of(Tensor::contiguous(nullptr, it->second.dtype, it->second.shape)));
  }
  return args;
}

ProblemOnGpu::ProblemOnGpu(const WorkloadKernels& kernels, const Problem& problem,
                           ProblemData& data)
    : ProblemOnGpu(kernels, problem, data, Plan{"default", "", problem.steps()}) {}

ProblemOnGpu::ProblemOnGpu(const WorkloadKernels& kernels, const Problem& problem,
                           ProblemData& data, const Plan& plan)
    : kernels_(kernels), problem_(problem), data_(data), steps_(plan.steps),
      specs_(problem.buffers()) {
  std::map<std::string, Arg> views;
  // The buffers live where the runtime launches: its GPU, through its target's API.
  Runtime& rt = kernels.runtime();
  const GpuApi api = gpu_api(rt);
  for (const BufferSpec& b : specs_) {
    ref::HostBuffer& h = data_.buffer(b.name);
    TJ_ICHECK(
        h.shape() == b.shape && h.dtype() == b.dtype,
        fmt::format("buffer '{}' of {} does not have its declared shape", b.name, problem.name()));
    size_t bytes = static_cast<size_t>(h.numel()) * dtype_size(h.dtype());
    // 16 bytes at least: an empty tensor still gets an address (nothing reads it).
    auto d = std::make_unique<DeviceBuffer>(std::max<size_t>(bytes, 16), rt.device_ordinal(), api);
    if (bytes) d->upload(h.data(), bytes);
    Tensor view = Tensor::contiguous(d->data(), h.dtype(), h.shape());
    view.device_index = rt.device_ordinal();
    views[b.name] = Arg::of(view);
    buffers_[b.name] = std::move(d);
  }
  for (const Step& s : steps_) {
    std::vector<Arg> a;
    for (const StepArg& sa : s.args) {
      if (sa.buffer.empty()) {
        a.push_back(sa.scalar);
        continue;
      }
      auto it = views.find(sa.buffer);
      TJ_ICHECK(it != views.end(),
                fmt::format("step '{}' names no buffer '{}'", s.label, sa.buffer));
      a.push_back(it->second);
    }
    args_.push_back(std::move(a));
  }
}

size_t ProblemOnGpu::per_call_bytes() const {
  std::set<std::string> named;
  for (const Step& s : steps_)
    if (!s.one_time)
      for (const StepArg& a : s.args)
        if (!a.buffer.empty()) named.insert(a.buffer);
  size_t bytes = 0;
  for (const BufferSpec& b : specs_)
    if (named.count(b.name)) {
      int64_t n = 1;
      for (int64_t d : b.shape) n *= d;
      bytes += static_cast<size_t>(n) * dtype_size(b.dtype);
    }
  return bytes;
}

size_t ProblemOnGpu::scratch_bytes(const Config& user) const {
  Runtime& rt = kernels_.runtime();
  std::set<std::string> counted; // a kernel's scratch is allocated once per variant and shape
  size_t bytes = 0;
  for (size_t i = 0; i < steps_.size(); ++i) {
    if (steps_[i].one_time) continue;
    const PreparedLaunch& pl = rt.prepare(kernel(i), args_[i], options(i, user));
    std::string key = steps_[i].kernel;
    for (const auto& [n, v] : pl.config) key += "|" + n + "=" + v;
    if (counted.insert(key).second) bytes += static_cast<size_t>(pl.scratch_bytes);
  }
  return bytes;
}

KernelRef ProblemOnGpu::kernel(size_t step) const {
  return kernels_.get(steps_.at(step).kernel);
}

Config ProblemOnGpu::config(size_t step, const Config& user) const {
  return step_config(RuntimeAccess::kernel(kernels_.runtime(), kernel(step)), steps_.at(step),
                     user);
}

ProblemOnGpu::ResolvedStep ProblemOnGpu::resolve(size_t step, const Config& user) const {
  Runtime& rt = kernels_.runtime();
  const PreparedLaunch& pl = rt.prepare(kernel(step), args_[step], options(step, user));
  std::vector<std::string> tunables;
  for (const auto& t : RuntimeAccess::kernel(rt, kernel(step)).tunables)
    tunables.push_back(t.name + "=" + pl.config.at(t.name));
  return {join(tunables, ","), pl.why};
}

LaunchOptions ProblemOnGpu::options(size_t step, const Config& user) const {
  LaunchOptions o;
  o.config = config(step, user);
  const Step& s = steps_.at(step);
  Runtime& rt = kernels_.runtime();
  if (!s.fallback.empty() && rt.has_gpu() && rt.device().cc_major == s.fallback_cc_major)
    o.fallback = s.fallback;
  return o;
}

void ProblemOnGpu::launch(size_t step, const Config& user, void* stream) {
  LaunchOptions o = options(step, user);
  o.stream = stream;
  kernels_.runtime().launch(kernel(step), args_[step], o);
}

void ProblemOnGpu::run(const Config& user, bool one_time, void* stream) {
  for (size_t i = 0; i < steps_.size(); ++i)
    if (one_time || !steps_[i].one_time) launch(i, user, stream);
}

void ProblemOnGpu::poison_from(size_t first) {
  for (size_t i = first; i < steps_.size(); ++i)
    for (const std::string& name : steps_[i].writes) device_buffer(name).fill_byte(0xFF);
}

Comparison ProblemOnGpu::check() {
  synchronize_device(gpu_api(kernels_.runtime()), kernels_.runtime().device_ordinal());
  for (const BufferSpec& b : specs_) {
    if (b.role != BufferRole::output) continue;
    ref::HostBuffer& h = data_.buffer(b.name);
    size_t bytes = static_cast<size_t>(h.numel()) * dtype_size(h.dtype());
    if (bytes) device_buffer(b.name).download(h.data(), bytes);
  }
  return data_.compare();
}

DeviceBuffer& ProblemOnGpu::device_buffer(const std::string& name) {
  auto it = buffers_.find(name);
  TJ_ICHECK(it != buffers_.end(), fmt::format("{} has no buffer '{}'", problem_.name(), name));
  return *it->second;
}

} // namespace tilejit::workloads
