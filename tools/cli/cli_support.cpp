#include "tools/cli/cli_support.h"

#include "workloads/plan_choice.h"

#include "support/error.h"
#include "support/text.h"
#include "tuner/search_space.h"
#include "tuner/tune_database.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <iostream>
#include <random>

namespace tilejit::cli {

std::string runtime_source(const std::string& source, const std::string& workload,
                           std::string& kernel) {
  if (!workload.empty()) {
    if (!source.empty()) throw Error("give either a .tile file or --workload, not both");
    auto w = workloads::find_workload(workload);
    std::vector<workloads::KernelSource> kernels = w->kernels();
    std::vector<std::string> names;
    for (const auto& k : kernels) {
      if (k.name == kernel || (kernel.empty() && kernels.size() == 1)) {
        kernel = k.name;
        return k.source;
      }
      names.push_back(k.name);
    }
    throw Error(fmt::format("workload '{}' has {} kernel{} ({}): pick one with --kernel", workload,
                            kernel.empty() ? "several" : "no '" + kernel + "'",
                            kernel.empty() ? "s" : "", join(names, ", ")));
  }
  if (source.empty())
    throw Error("no kernel: give a .tile file or --workload NAME (see `tilejit list`)");
  return source;
}

LoadedModule load_kernel_source(const std::string& source, const std::string& workload,
                                std::string& kernel) {
  std::string s = runtime_source(source, workload, kernel);
  if (std::optional<std::string> forward = gradient_source(s)) {
    // grad:<source>: the kernel reverse mode derives from --kernel (named <kernel>_grad).
    LoadedModule m = load_gradient_module(*forward, kernel);
    kernel = m.module->kernels.at(0)->name;
    return m;
  }
  LoadedModule m =
      starts_with(s, "embedded:") ? load_embedded_tile(s.substr(9)) : load_tile_file(s);
  for (const auto& w : m.warnings) std::cerr << w.render() << "\n";
  return m;
}

std::unique_ptr<Runtime> make_runtime(bool verbose, std::optional<double> compile_timeout_s,
                                      const std::string& arch) {
  RuntimeOptions o;
  o.compile_timeout_s = compile_timeout_s;
  o.arch = arch;
  if (verbose) o.log = [](const std::string& m) { std::cerr << m << "\n"; };
  return std::make_unique<Runtime>(o);
}

std::string database_path(const std::string& db_flag) {
  return db_flag.empty() ? TuneDatabase::default_path() : db_flag;
}

void check_plan_option(const std::vector<std::unique_ptr<workloads::Problem>>& problems,
                       const std::string& plan) {
  if (plan.empty()) return;
  for (const auto& p : problems) workloads::find_plan(p->plans(), plan, p->name());
}

void note_unprefixed_names(const std::map<std::string, std::string>& values, const char* flag) {
  std::vector<std::string> bare;
  bool prefixed = false;
  for (const auto& [name, value] : values) {
    if (name.find(':') != std::string::npos)
      prefixed = true;
    else
      bare.push_back(name);
  }
  if (!prefixed || bare.empty()) return;
  std::cerr << "note: " << flag << ": " << join(bare, ", ") << (bare.size() > 1 ? " have" : " has")
            << " no step prefix, so " << (bare.size() > 1 ? "each applies" : "it applies")
            << " to every step whose kernel has it (write STEP:NAME=... for one step)\n";
}

void check_step_option(const workloads::Workload& w,
                       const std::vector<std::unique_ptr<workloads::Problem>>& problems,
                       const std::map<std::string, std::string>& values, const char* flag) {
  if (values.empty()) return;
  // What each kernel declares, from its source (parsed and checked: no GPU needed).
  std::map<std::string, std::set<std::string>> declared;
  for (const workloads::KernelSource& k : w.kernels()) {
    std::string name = k.name;
    LoadedModule m = load_kernel_source(k.source, "", name);
    const dsl::Kernel& kernel = m.kernel(name);
    for (const auto& g : kernel.generics) declared[k.name].insert(g.name);
    for (const auto& t : kernel.tunables) declared[k.name].insert(t.name);
  }
  for (const auto& p : problems) {
    std::vector<workloads::Step> steps; // every plan's: a STEP:NAME may address any of them
    for (const workloads::Plan& plan : p->plans())
      steps.insert(steps.end(), plan.steps.begin(), plan.steps.end());
    workloads::check_step_names(steps, values, flag, declared);
  }
}

std::vector<std::unique_ptr<workloads::Problem>>
workload_problems(const workloads::Workload& w, const std::string& dtype,
                  const std::string& case_filter, const std::vector<std::string>& shape) {
  std::vector<DType> dtypes = workloads::parse_workload_dtypes(w, dtype);
  std::vector<std::unique_ptr<workloads::Problem>> out;
  if (!shape.empty()) {
    if (!case_filter.empty()) throw Error("give --case (WORKLOADS.md shapes) or --shape, not both");
    std::map<std::string, std::string> items = parse_assignments(shape, "--shape");
    for (DType t : dtypes) out.push_back(w.parse_shape(items, t));
    return out;
  }
  std::vector<std::string> names;
  for (DType t : dtypes)
    for (auto& p : w.cases(t)) {
      if (names.size() < 64) names.push_back(p->name());
      if (case_filter.empty() || p->name().find(case_filter) != std::string::npos)
        out.push_back(std::move(p));
    }
  if (out.empty())
    throw Error(fmt::format("--case '{}' matches none of {}'s shapes: {}", case_filter, w.name(),
                            join(names, " ")));
  return out;
}

std::map<std::string, std::string> parse_assignments(const std::vector<std::string>& items,
                                                     const char* flag) {
  std::map<std::string, std::string> out;
  for (const std::string& item : items)
    for (const std::string& part : split(item, ',')) {
      std::string_view p = trim(part);
      if (p.empty()) continue;
      size_t eq = p.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == p.size())
        throw Error(str(flag, " expects NAME=VALUE, got '", std::string(p), "'"));
      std::string name(trim(p.substr(0, eq)));
      std::string value(trim(p.substr(eq + 1)));
      auto [it, added] = out.emplace(name, value);
      if (!added)
        throw Error(str(flag, ": ", name, " is given twice (", name, "=", it->second, " and ", name,
                        "=", value, "); give each name once"));
    }
  return out;
}

std::map<std::string, int64_t> parse_sizes(const std::vector<std::string>& items) {
  std::map<std::string, int64_t> out;
  for (const auto& [k, v] : parse_assignments(items, "--shape")) {
    char* end = nullptr;
    errno = 0;
    long long x = std::strtoll(v.c_str(), &end, 10);
    if (!end || *end != 0) throw Error(str("--shape ", k, "=", v, ": the size must be an integer"));
    if (errno == ERANGE || x < 0)
      throw Error(str("--shape ", k, "=", v, ": the size must be in 0..", INT64_MAX));
    out[k] = x;
  }
  return out;
}

Bindings complete_for_inspection(const dsl::Kernel& k, Bindings given, int64_t smem_limit,
                                 int warp) {
  for (const auto& g : k.generics) {
    if (given.count(g.name)) continue;
    std::string v =
        g.choice.has_default
            ? (g.choice.is_dtype ? g.choice.default_name : std::to_string(g.choice.default_int))
        : g.choice.is_dtype ? g.choice.names.front()
                            : std::to_string(g.choice.ints.front());
    std::cerr << "note: " << g.name << " not set; using " << v << " (--set " << g.name
              << "=... to choose)\n";
    given[g.name] = v;
  }
  bool any_tunable = false;
  for (const auto& t : k.tunables) any_tunable = any_tunable || given.count(t.name) > 0;
  if (!any_tunable && !k.tunables.empty()) {
    const SearchSpace space(k, given, smem_limit, warp);
    if (!space.default_note().empty()) {
      std::cerr << "note: " << space.default_note() << "\n";
      return space.config(space.default_index());
    }
  }
  return complete_bindings(k, given);
}

RandomInputs make_random_inputs(const dsl::Kernel& k, const std::map<std::string, int64_t>& sizes,
                                const Bindings& given, uint64_t seed) {
  HostEnv env;
  for (const auto& [n, v] : sizes) env[n] = HostValue::of_int(v);
  for (const auto& g : k.generics)
    if (given.count(g.name) && !g.choice.is_dtype)
      env[g.name] = HostValue::of_int(std::stoll(given.at(g.name)));
  std::mt19937_64 rng(seed);
  RandomInputs in;
  in.tensors.reserve(k.params.size());
  for (const auto& p : k.params) {
    if (p.is_scratch) continue;
    if (!p.type.has_dims) {
      auto it = sizes.find(p.name);
      in.scalars.push_back(it == sizes.end() ? 1.0 : static_cast<double>(it->second));
      in.tensor_of_param.push_back(-1);
      continue;
    }
    std::vector<int64_t> shape;
    for (const auto& d : p.type.dims) {
      if (dsl::broadcast_dim_target(*d)) { // 1|X: size 1, so that the run checks broadcasting
        shape.push_back(1);
        continue;
      }
      shape.push_back(host_eval_int(*d, env, str("dimension of '", p.name, "' (pass --shape)")));
    }
    std::string dt = p.type.dtype;
    if (!parse_dtype(dt)) {
      if (!given.count(dt))
        throw Error(str("pass --set ", dt, "=<dtype> to choose the dtype of '", p.name, "'"));
      dt = given.at(dt);
    }
    in.tensors.emplace_back(*parse_dtype(dt), shape);
    ref::HostBuffer& b = in.tensors.back();
    std::uniform_real_distribution<double> f(-1, 1);
    std::uniform_int_distribution<int> i(0, 15);
    for (int64_t e = 0; e < b.numel(); ++e)
      dtype_is_float(b.dtype()) ? b.set(e, f(rng)) : b.set_int(e, i(rng));
    in.scalars.push_back(0);
    in.tensor_of_param.push_back(static_cast<int>(in.tensors.size()) - 1);
  }
  return in;
}

Arg DeviceCopies::upload(ref::HostBuffer& h) {
  size_t bytes = static_cast<size_t>(h.numel()) * dtype_size(h.dtype());
  buffers_.push_back(std::make_unique<DeviceBuffer>(std::max<size_t>(bytes, 16), 0, api_));
  buffers_.back()->upload(h.data(), bytes);
  return Arg::of(Tensor::contiguous(buffers_.back()->data(), h.dtype(), h.shape()));
}

void DeviceCopies::download(size_t i, ref::HostBuffer& h) const {
  buffers_[i]->download(h.data(), static_cast<size_t>(h.numel()) * dtype_size(h.dtype()));
}

std::string format_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(header.size(), 0);
  for (size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], r[c].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t c = 0; c < width.size(); ++c) {
      std::string cell = c < cells.size() ? cells[c] : "";
      s += cell + std::string(width[c] - cell.size() + (c + 1 < width.size() ? 2 : 0), ' ');
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = line(header);
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  out += std::string(total > 2 ? total - 2 : 0, '-') + "\n";
  for (const auto& r : rows) out += line(r);
  return out;
}

} // namespace tilejit::cli
