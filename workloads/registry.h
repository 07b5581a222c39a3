// The five workloads of WORKLOADS.md by name, and which of them tilejit implements so far.
#pragma once

#include <string>
#include <vector>

namespace tilejit::workloads {

struct WorkloadInfo {
  std::string name;
  std::string summary;
  bool implemented = false;
  std::string kernel_source; ///< "embedded:workloads/<name>.tile" when implemented
};

const std::vector<WorkloadInfo>& all_workloads();
/// The workload called `name`; throws tilejit::Error naming the known ones when there is none,
/// and saying so when it is not implemented yet.
const WorkloadInfo& find_workload(const std::string& name);

} // namespace tilejit::workloads
