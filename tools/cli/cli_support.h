// Helpers shared by the CLI subcommands: kernel sources, --set/--shape parsing, tables.
#pragma once

#include "compiler/kernel_library.h"
#include "compiler/specialise.h"

#include <map>
#include <string>
#include <vector>

namespace tilejit::cli {

/// A .tile path, "embedded:<path>", or the kernel of a workload (--workload).
LoadedModule load_kernel_source(const std::string& source, const std::string& workload);
/// The Runtime::load spelling of the same.
std::string runtime_source(const std::string& source, const std::string& workload);

/// "NAME=VALUE" items (from repeated --set, or comma-separated) into a map; errors name the item.
std::map<std::string, std::string> parse_assignments(const std::vector<std::string>& items,
                                                     const char* flag);
/// Like parse_assignments, for integer values (--shape M=64,N=128).
std::map<std::string, int64_t> parse_sizes(const std::vector<std::string>& items);

/// Fills generics missing from `given` with their declared default or first choice, telling
/// stderr which (inspect only: a launch infers them from its tensors).
Bindings complete_for_inspection(const dsl::Kernel& k, Bindings given);

/// A text table with a header row; columns padded to their widest cell.
std::string format_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows);

} // namespace tilejit::cli
