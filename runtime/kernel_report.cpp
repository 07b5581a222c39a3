// Plain public values (KernelInfo, CompileReport) from the compiler's own structures.
#include "dsl/ast_printer.h"
#include "runtime/runtime_access.h"

namespace tilejit {
namespace {

ChoiceInfo choice_info(const std::string& name, const dsl::Choice& c) {
  ChoiceInfo info;
  info.name = name;
  if (c.is_dtype) {
    info.choices = c.names;
    if (c.has_default) info.default_value = c.default_name;
  } else {
    for (int64_t v : c.ints) info.choices.push_back(std::to_string(v));
    if (c.has_default) info.default_value = std::to_string(c.default_int);
  }
  return info;
}

} // namespace

KernelInfo kernel_info(const dsl::Kernel& k, const std::string& source_hash) {
  KernelInfo info;
  info.name = k.name;
  info.source_hash = source_hash;
  for (const auto& p : k.params) {
    ParamInfo param;
    param.name = p.name;
    param.type = dsl::type_to_string(p.type);
    param.is_tensor = p.type.has_dims;
    param.is_scratch = p.is_scratch;
    param.dtype = p.type.dtype;
    for (const auto& d : p.type.dims) param.dims.push_back(dsl::expr_to_string(*d));
    info.params.push_back(std::move(param));
  }
  for (const auto& g : k.generics) info.generics.push_back(choice_info(g.name, g.choice));
  for (const auto& t : k.tunables) info.tunables.push_back(choice_info(t.name, t.choice));
  return info;
}

CompileReport compile_report(const CompiledVariant& v) {
  CompileReport r;
  r.kernel = v.kernel_name;
  r.config = v.bindings;
  r.arch = v.arch;
  r.entry = v.entry;
  r.language = v.language;
  r.source = v.source;
  r.binary_bytes = v.binary.size();
  r.from_cache = v.from_cache;
  r.compile_ms = v.compile_ms;
  r.threads = v.threads;
  r.smem_bytes = v.smem_bytes;
  r.registers = v.resources.registers;
  if (v.resources.spill_store_bytes >= 0 && v.resources.spill_load_bytes >= 0)
    r.spill_bytes = v.resources.spill_store_bytes + v.resources.spill_load_bytes;
  for (const auto& w : v.warnings) r.warnings.push_back(w.render());
  return r;
}

} // namespace tilejit
