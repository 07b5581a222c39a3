#include "compiler/pipeline.h"

#include "compiler/assign_layouts.h"
#include "compiler/expand_pipelines.h"
#include "compiler/infer_types.h"
#include "compiler/insert_barriers.h"
#include "compiler/pipeline_loops.h"
#include "compiler/place_scratch.h"
#include "compiler/plan_shared_memory.h"
#include "compiler/unroll_loops.h"
#include "support/text.h"

namespace tilejit {

const std::vector<std::string>& pass_names() {
  static const std::vector<std::string> names = {
      "specialise",       "unroll-loops",    "infer-types",
      "assign-layouts",   "pipeline-loops",  "plan-shared-memory",
      "expand-pipelines", "insert-barriers", "place-scratch"};
  return names;
}

std::unique_ptr<ir::Kernel> lower_to_ir(const dsl::Kernel& k, const Bindings& bindings,
                                        const CompileOptions& options,
                                        const std::string& stop_after,
                                        const PassObserver& observer) {
  if (!stop_after.empty()) {
    bool known = false;
    for (const auto& n : pass_names()) known = known || n == stop_after;
    if (!known)
      throw Error(str("unknown pass '", stop_after, "'; passes: ", join(pass_names(), ", ")));
  }
  auto done = [&](const std::string& pass, const ir::Kernel& kernel) {
    if (observer) observer(pass, kernel);
    return pass == stop_after;
  };
  // 1. Generics and tunables become constants first: every later pass sees static shapes.
  SpecialiseOptions so;
  so.arch = options.arch;
  so.smem_limit = options.smem_limit;
  so.vector_aligned = options.vector_aligned;
  so.index32 = options.index32;
  so.debug_bounds = options.debug_bounds;
  auto kernel = specialise(k, bindings, so);
  if (done("specialise", *kernel)) return kernel;
  // 2. Loops marked `unroll = N` with no stores: N iterations' loads written first, so they
  //    are in flight together (ptxas does not hoist them itself). Before types, so that the
  //    reference interpreter, which starts after infer-types, runs the rewritten loop.
  unroll_loops(*kernel);
  if (done("unroll-loops", *kernel)) return kernel;
  // 3. Types and shapes, with broadcasting made explicit; the interpreter can run from here.
  infer_types(*kernel);
  if (done("infer-types", *kernel)) return kernel;
  // 4. Layouts need types; they decide which values must move between layouts or into
  //    shared memory, which creates staged shared tiles.
  assign_layouts(*kernel);
  if (done("assign-layouts", *kernel)) return kernel;
  // 5. Pipelining turns some shared tiles into rings of buffers: before sizes are planned.
  for (const auto& w : pipeline_loops(*kernel))
    if (observer) observer("warning: " + w.render(), *kernel);
  if (done("pipeline-loops", *kernel)) return kernel;
  // 6. Every shared tile is known now (declared, staged, ring): place them.
  plan_shared_memory(*kernel);
  if (done("plan-shared-memory", *kernel)) return kernel;
  // 7. Pipelined loops written out as prologue, loop and waits, each copy's asynchrony
  //    decided: after the rings are placed, and before barriers, which must see every wait.
  expand_pipelines(*kernel);
  if (done("expand-pipelines", *kernel)) return kernel;
  // 8. Barriers last: they depend on where every shared read and write ended up.
  insert_barriers(*kernel);
  if (done("insert-barriers", *kernel)) return kernel;
  // 9. The scratch area's halves and their barriers: after every other barrier is placed,
  //    since each one frees both halves.
  place_scratch(*kernel);
  done("place-scratch", *kernel);
  return kernel;
}

} // namespace tilejit
