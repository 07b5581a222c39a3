// Helpers shared by the CLI subcommands: kernel sources, --set/--shape parsing, tables.
#pragma once

#include "compiler/kernel_library.h"
#include "compiler/ref/run_tile.h"
#include "compiler/specialise.h"
#include "runtime/device_buffer.h"
#include "workloads/workload.h"

#include <tilejit/tilejit.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tilejit::cli {

/// A .tile path, "embedded:<path>", or (with --workload) the source of the workload's kernel
/// called `kernel` (its only kernel when `kernel` is empty; `kernel` is then set to its name).
LoadedModule load_kernel_source(const std::string& source, const std::string& workload,
                                std::string& kernel);
/// The Runtime::load spelling of the same.
std::string runtime_source(const std::string& source, const std::string& workload,
                           std::string& kernel);

/// A Runtime that logs to stderr under --verbose; `compile_timeout_s` unset: the Runtime's
/// default (TILEJIT_COMPILE_TIMEOUT, else 300 s).
std::unique_ptr<Runtime> make_runtime(bool verbose, std::optional<double> compile_timeout_s = {},
                                      const std::string& arch = "");
/// --db, else $TILEJIT_DB, else the default database path.
std::string database_path(const std::string& db_flag);

/// The problems a workload command works on: the user's shape (--shape) for each dtype, or the
/// WORKLOADS.md cases whose name contains `case_filter`. Errors name what matched nothing.
std::vector<std::unique_ptr<workloads::Problem>>
workload_problems(const workloads::Workload& w, const std::string& dtype,
                  const std::string& case_filter, const std::vector<std::string>& shape);

/// Checks --plan against every problem (said before a GPU is looked for): a name some problem
/// does not offer is an error naming that problem's plans. Empty: nothing to check.
/// --set/--sweep values: a STEP:NAME must name a step (label or kernel) of some plan of each
/// problem, and the addressed steps' kernels (every step's, for a plain NAME) must declare
/// NAME; else an Error that lists the steps or the names they declare.
/// Beside a STEP:NAME, a bare NAME applies to every step whose kernel has it, not to the step
/// named before it ("backward:TR=1,BN=64" sets BN for all): a note on stderr saying so, when
/// `values` mixes the two.
void note_unprefixed_names(const std::map<std::string, std::string>& values, const char* flag);

void check_step_option(const workloads::Workload& w,
                       const std::vector<std::unique_ptr<workloads::Problem>>& problems,
                       const std::map<std::string, std::string>& values, const char* flag);
void check_plan_option(const std::vector<std::unique_ptr<workloads::Problem>>& problems,
                       const std::string& plan);

/// "NAME=VALUE" items (from repeated --set, or comma-separated) into a map; errors name the item,
/// and a name given twice (BM=32,BM=64).
std::map<std::string, std::string> parse_assignments(const std::vector<std::string>& items,
                                                     const char* flag);
/// Like parse_assignments, for integer values (--shape M=64,N=128).
std::map<std::string, int64_t> parse_sizes(const std::vector<std::string>& items);

/// Fills generics missing from `given` with their declared default or first choice, telling
/// stderr which (inspect only: a launch infers them from its tensors). When no tunable is
/// given and the declared defaults break a `where` (w4a16_tc's BK=128 with G=32), takes the
/// valid configuration nearest to them, as a launch does, and says so (`smem_limit`: SMEM).
Bindings complete_for_inspection(const dsl::Kernel& k, Bindings given, int64_t smem_limit,
                                 int warp = 32);

/// Random inputs for any .tile kernel: a host buffer per tensor parameter, shaped from the
/// sizes given with --shape and the generic values given with --set (floats uniform in
/// [-1, 1), integers in [0, 16)); scalar parameters take their --shape value, else 1.
struct RandomInputs {
  std::vector<ref::HostBuffer> tensors; ///< the tensor parameters', in order
  std::vector<int> tensor_of_param;     ///< per caller parameter: index in tensors, or -1
  std::vector<double> scalars;          ///< per caller parameter (used where -1 above)
};
RandomInputs make_random_inputs(const dsl::Kernel& k, const std::map<std::string, int64_t>& sizes,
                                const Bindings& given, uint64_t seed);

/// Device copies of host buffers (kept alive here), in upload order, on device 0 of `api`.
class DeviceCopies {
public:
  explicit DeviceCopies(GpuApi api = GpuApi::cuda) : api_(api) {}
  Arg upload(ref::HostBuffer& h);
  void download(size_t i, ref::HostBuffer& h) const;
  DeviceBuffer& buffer(size_t i) { return *buffers_[i]; }

private:
  GpuApi api_;
  std::vector<std::unique_ptr<DeviceBuffer>> buffers_;
};

/// A text table with a header row; columns padded to their widest cell.
std::string format_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows);

} // namespace tilejit::cli
