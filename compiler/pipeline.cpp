#include "compiler/pipeline.h"

#include "compiler/infer_types.h"
#include "support/text.h"

namespace tilejit {

const std::vector<std::string>& pass_names() {
  static const std::vector<std::string> names = {"specialise", "infer-types"};
  return names;
}

std::unique_ptr<ir::Kernel> lower_to_ir(const dsl::Kernel& k, const Bindings& bindings,
                                        const CompileOptions& options, const std::string& stop_after,
                                        const PassObserver& observer) {
  if (!stop_after.empty()) {
    bool known = false;
    for (const auto& n : pass_names()) known = known || n == stop_after;
    if (!known) throw Error(str("unknown pass '", stop_after, "'; passes: ", join(pass_names(), ", ")));
  }
  auto done = [&](const std::string& pass, const ir::Kernel& kernel) {
    if (observer) observer(pass, kernel);
    return pass == stop_after;
  };
  // 1. Generics and tunables become constants first: every later pass sees static shapes.
  SpecialiseOptions so;
  so.smem_limit = options.smem_limit;
  so.vector_aligned = options.vector_aligned;
  auto kernel = specialise(k, bindings, so);
  if (done("specialise", *kernel)) return kernel;
  // 2. Types and shapes, with broadcasting made explicit; the interpreter can run from here.
  infer_types(*kernel);
  if (done("infer-types", *kernel)) return kernel;
  return kernel;
}

} // namespace tilejit
