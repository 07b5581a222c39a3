#include "tools/cli/cli_support.h"

#include "support/error.h"
#include "support/text.h"
#include "workloads/registry.h"

#include <iostream>

namespace tilejit::cli {

std::string runtime_source(const std::string& source, const std::string& workload) {
  if (!workload.empty()) {
    if (!source.empty()) throw Error("give either a .tile file or --workload, not both");
    return workloads::find_workload(workload).kernel_source;
  }
  if (source.empty())
    throw Error("no kernel: give a .tile file or --workload NAME (see `tilejit list`)");
  return source;
}

LoadedModule load_kernel_source(const std::string& source, const std::string& workload) {
  std::string s = runtime_source(source, workload);
  LoadedModule m =
      starts_with(s, "embedded:") ? load_embedded_tile(s.substr(9)) : load_tile_file(s);
  for (const auto& w : m.warnings) std::cerr << w.render() << "\n";
  return m;
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
      out[std::string(trim(p.substr(0, eq)))] = std::string(trim(p.substr(eq + 1)));
    }
  return out;
}

std::map<std::string, int64_t> parse_sizes(const std::vector<std::string>& items) {
  std::map<std::string, int64_t> out;
  for (const auto& [k, v] : parse_assignments(items, "--shape")) {
    char* end = nullptr;
    long long x = std::strtoll(v.c_str(), &end, 10);
    if (!end || *end != 0) throw Error(str("--shape ", k, "=", v, ": the size must be an integer"));
    out[k] = x;
  }
  return out;
}

Bindings complete_for_inspection(const dsl::Kernel& k, Bindings given) {
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
  return complete_bindings(k, given);
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
