// The library's own way into a Runtime: the parsed kernel and the full compiled variant, which
// the public API gives only as plain values (KernelInfo, CompileReport). For the tuner, the
// workloads, the CLI and the tests; applications use <tilejit/tilejit.h>.
#pragma once

#include "dsl/ast.h"
#include "runtime/jit_compiler.h"

#include <tilejit/tilejit.h>

namespace tilejit {

struct RuntimeAccess {
  /// The parsed kernel behind `k`.
  static const dsl::Kernel& kernel(const Runtime& rt, KernelRef k);
  /// Runtime::compile, with everything the compile produced.
  static const CompiledVariant& compile(Runtime& rt, KernelRef k, const Config& config,
                                        const std::vector<Arg>& args);
};

/// The public summary of a compiled variant.
CompileReport compile_report(const CompiledVariant& v);
/// The public summary of a kernel's declaration.
KernelInfo kernel_info(const dsl::Kernel& k, const std::string& source_hash);

} // namespace tilejit
