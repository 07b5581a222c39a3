#include "tools/cli/devices.h"

#include "support/error.h"
#include "support/text.h"

#include <algorithm>

namespace tilejit::cli {

DeviceSpec parse_devices(const std::string& text) {
  DeviceSpec spec;
  if (text.empty()) return spec;
  if (text == "all") {
    spec.all = true;
    return spec;
  }
  const std::string takes = "all, or device indices separated by commas (0,1,3)";
  for (const std::string& part : split(text, ',')) {
    const bool digits =
        !part.empty() && part.size() <= 4 &&
        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits)
      throw Error(str("--devices '", text, "': '", part, "' is not a device index; takes ", takes));
    const int index = std::stoi(part);
    if (index > 1023) throw Error(str("--devices '", text, "': device ", index, " is past 1023"));
    if (std::find(spec.indices.begin(), spec.indices.end(), index) != spec.indices.end())
      throw Error(str("--devices '", text, "': device ", index,
                      " is listed twice (one worker per GPU: two would time each other)"));
    spec.indices.push_back(index);
  }
  return spec;
}

std::vector<int> resolve_devices(const DeviceSpec& spec, int count) {
  std::vector<int> out;
  if (spec.all) {
    for (int i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  for (int index : spec.indices)
    if (index >= count)
      throw Error(str("--devices: device ", index, " does not exist (this host has ", count,
                      count == 1 ? " GPU: 0)" : str(" GPUs: 0..", count - 1, ")")));
  return spec.indices;
}

Shard worker_shard(const Shard& outer, size_t j, size_t workers) {
  Shard s;
  s.count = outer.count * static_cast<int64_t>(workers);
  s.index = outer.index + outer.count * static_cast<int64_t>(j);
  return s;
}

std::vector<std::string> tune_worker_argv(const std::string& program, const std::string& db,
                                          const TuneWorkerArgs& o, const Shard& shard) {
  std::vector<std::string> a = {program, "--db", db};
  if (o.verbose) a.push_back("--verbose");
  a.insert(a.end(), {"tune", "--workload", o.workload});
  if (!o.dtype.empty()) a.insert(a.end(), {"--dtype", o.dtype});
  if (!o.case_filter.empty()) a.insert(a.end(), {"--case", o.case_filter});
  for (const std::string& sh : o.shape) a.insert(a.end(), {"--shape", sh});
  a.insert(a.end(), {"--strategy", o.strategy, "--budget", o.budget, "--seed",
                     std::to_string(o.seed), "--repeats", std::to_string(o.repeats), "--warm-start",
                     std::to_string(o.warm_start), "--shard", str(shard.index, "/", shard.count)});
  if (o.retune) a.push_back("--retune");
  return a;
}

std::string visible_device(int device, const char* parent) {
  if (parent && *parent) {
    const std::vector<std::string> listed = split(parent, ',');
    if (device >= 0 && static_cast<size_t>(device) < listed.size()) return listed[device];
  }
  return std::to_string(device);
}

} // namespace tilejit::cli
