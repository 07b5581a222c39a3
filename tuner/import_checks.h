// Checks of imported tuning results against the kernels this build can find, so that an export
// file cannot make a configuration the kernel does not have a winner (TuneDatabase::import_from).
#pragma once

#include "dsl/ast.h"
#include "tuner/tune_database.h"

namespace tilejit {

/// Finds a key's kernel among the .tile sources embedded in this build (the workloads' and the
/// examples'), by kernel name and source hash, and checks configurations against its tunables,
/// choices and `where` constraints (with SMEM unbounded: the key does not say the device's
/// limit). Keys of other kernels (a user's own .tile file) get no check.
KernelConfigChecks embedded_kernel_checks();

/// The check for one kernel under the key's generic values (what embedded_kernel_checks returns
/// for a kernel it finds); bad generic values make every configuration fail, naming them.
ConfigCheck kernel_config_check(const dsl::Kernel& kernel, const TuneKey& key);

} // namespace tilejit
