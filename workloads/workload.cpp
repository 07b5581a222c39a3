#include "workloads/workload.h"

#include "support/error.h"
#include "support/text.h"
#include "workloads/attention_workload.h"
#include "workloads/dequant_gemm_workload.h"
#include "workloads/gated_delta_workload.h"
#include "workloads/hbv_workload.h"
#include "workloads/paged_sparse_workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <mutex>

namespace tilejit::workloads {

StepArg StepArg::of(std::string buffer_name) {
  StepArg a;
  a.buffer = std::move(buffer_name);
  return a;
}

StepArg StepArg::value(Arg scalar_value) {
  StepArg a;
  a.scalar = scalar_value;
  return a;
}

std::string Comparison::summary() const {
  std::vector<std::string> parts;
  for (const auto& [name, err] : errors) parts.push_back(fmt::format("{} {:.1e}", name, err));
  std::string s = join(parts, ", ");
  if (!problems.empty()) s += (s.empty() ? "" : "; ") + problems;
  return s;
}

double floor_ms(const FloorWork& w, const Ceilings& c) {
  double ms = 0;
  if (c.bytes_per_s > 0) ms = std::max(ms, w.bytes / c.bytes_per_s * 1e3);
  if (c.flops_per_s > 0) ms = std::max(ms, w.flops / c.flops_per_s * 1e3);
  return ms;
}

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const Workload>> by_name;
  Registry() {
    // The built-in workloads.
    for (auto w : {make_paged_sparse_workload(), make_dequant_gemm_workload(),
                   make_attention_workload(), make_hbv_workload(), make_gated_delta_workload()})
      by_name[w->name()] = std::move(w);
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

} // namespace

void register_workload(std::shared_ptr<const Workload> workload) {
  TJ_ICHECK(workload != nullptr, "register_workload(nullptr)");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.by_name[workload->name()] = std::move(workload);
}

std::vector<std::shared_ptr<const Workload>> registered_workloads() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::shared_ptr<const Workload>> out;
  for (const auto& [name, w] : r.by_name) out.push_back(w);
  return out;
}

std::vector<std::pair<std::string, std::string>> planned_workloads() {
  // (Every WORKLOADS.md workload has an implementation now; gated_delta's delta rule is a
  // shape of it still to come: its --shape RULE=delta says so.)
  std::vector<std::pair<std::string, std::string>> all = {};
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& p : all)
    if (!r.by_name.count(p.first)) out.push_back(std::move(p));
  return out;
}

std::shared_ptr<const Workload> find_workload(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& w : registered_workloads()) {
    if (w->name() == name) return w;
    names.push_back(w->name());
  }
  for (const auto& [planned, summary] : planned_workloads())
    if (planned == name)
      throw Error(fmt::format("workload '{}' is not implemented yet (implemented: {})", name,
                              join(names, ", ")));
  throw Error(fmt::format("unknown workload '{}'; workloads: {} (or pass a .tile file with "
                          "--shape)",
                          name, join(names, ", ")));
}

std::map<std::string, std::string>
normalize_shape_items(const std::map<std::string, std::string>& given,
                      const std::set<std::string>& known, const std::string& workload,
                      const std::string& takes, const std::map<std::string, std::string>& aliases) {
  std::map<std::string, std::string> items;
  for (const auto& [k, v] : given) {
    std::string key = k;
    for (char& c : key) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (auto alias = aliases.find(key); alias != aliases.end()) key = alias->second;
    if (!known.count(key))
      throw Error(fmt::format("--shape: {} has no size '{}'; it takes {}", workload, k, takes));
    if (items.count(key)) throw Error(fmt::format("--shape: '{}' is given twice", key));
    items[key] = v;
  }
  return items;
}

int64_t parse_shape_integer(const std::string& key, const std::string& text, bool allow_negative) {
  std::string_view t = trim(text);
  bool ok = !t.empty() && t.size() <= 12;
  for (size_t i = 0; i < t.size(); ++i)
    ok = ok && (std::isdigit(static_cast<unsigned char>(t[i])) ||
                (allow_negative && i == 0 && t[i] == '-' && t.size() > 1));
  if (!ok)
    throw Error(fmt::format("--shape {}={}: expected {}", key, text,
                            allow_negative ? "an integer" : "a non-negative integer"));
  return std::stoll(std::string(t));
}

std::vector<DType> parse_workload_dtypes(const Workload& w, const std::string& text) {
  std::vector<DType> all = w.dtypes();
  std::vector<std::string> names;
  for (DType t : all) names.push_back(dtype_name(t));
  if (text == "both" || text == "all") return all;
  for (DType t : all)
    if (text == dtype_name(t)) return {t};
  throw Error(fmt::format("--dtype '{}': {} takes {} (or all)", text, w.name(), join(names, ", ")));
}

} // namespace tilejit::workloads
