#include "compiler/pipeline.h"

#include "compiler/assign_layouts.h"
#include "compiler/expand_pipelines.h"
#include "compiler/infer_types.h"
#include "compiler/insert_barriers.h"
#include "compiler/pipeline_loops.h"
#include "compiler/place_scratch.h"
#include "compiler/plan_shared_memory.h"
#include "compiler/select_wgmma.h"
#include "compiler/unroll_loops.h"
#include "compiler/verify_ir.h"
#include "support/text.h"

#include <cstdlib>
#include <cstring>

namespace tilejit {

namespace {

void run_specialise(PassState& s) {
  TJ_ICHECK(s.ast && s.bindings && s.options, "specialise starts from the AST");
  SpecialiseOptions so;
  so.arch = s.options->arch;
  so.smem_limit = s.options->smem_limit;
  so.vector_aligned = s.options->vector_aligned;
  so.tma_params = s.options->tma_params;
  so.index32 = s.options->index32;
  so.debug_bounds = s.options->debug_bounds;
  s.kernel = specialise(*s.ast, *s.bindings, so);
}

void run_pipeline_loops(PassState& s) {
  for (auto& w : pipeline_loops(*s.kernel)) s.warnings.push_back(std::move(w));
}

} // namespace

// The pass table: the only place that orders the passes, each with why it runs where it does.
const std::vector<Pass>& passes() {
  static const std::vector<Pass> table = {
      {"specialise", run_specialise,
       "generics and tunables become constants first: every later pass sees static shapes"},
      {"unroll-loops", [](PassState& s) { unroll_loops(*s.kernel); },
       "loops marked `unroll = N` with no stores get N iterations' loads written first (ptxas "
       "does not hoist them); before types, so that the reference interpreter, which starts "
       "after infer-types, runs the rewritten loop"},
      {"infer-types", [](PassState& s) { infer_types(*s.kernel); },
       "types and shapes, with broadcasting made explicit; the interpreter can run from here"},
      {"assign-layouts", [](PassState& s) { assign_layouts(*s.kernel); },
       "layouts need types; they decide which values must move between layouts or into shared "
       "memory, which creates staged shared tiles"},
      {"select-wgmma", [](PassState& s) { select_wgmma(*s.kernel); },
       "which dots run on Hopper's warpgroup tensor cores: it needs the dots' layouts, and "
       "decides how their B tiles are stored before shared memory is planned"},
      {"pipeline-loops", run_pipeline_loops,
       "pipelining turns some shared tiles into rings of buffers: before sizes are planned"},
      {"plan-shared-memory", [](PassState& s) { plan_shared_memory(*s.kernel); },
       "every shared tile is known now (declared, staged, ring): place them"},
      {"expand-pipelines", [](PassState& s) { expand_pipelines(*s.kernel); },
       "pipelined loops written out as prologue, loop and waits, each copy's asynchrony "
       "decided: after the rings are placed, and before barriers, which must see every wait"},
      {"insert-barriers", [](PassState& s) { insert_barriers(*s.kernel); },
       "barriers: they depend on where every shared read and write ended up"},
      {"place-scratch", [](PassState& s) { place_scratch(*s.kernel); },
       "the scratch area's halves for reductions, scans and conversions, and the barriers they "
       "need: last, since every barrier placed before frees both halves"},
  };
  return table;
}

const std::vector<std::string>& pass_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Pass& p : passes()) n.push_back(p.name);
    return n;
  }();
  return names;
}

size_t pass_index(const std::string& name) {
  for (size_t i = 0; i < passes().size(); ++i)
    if (name == passes()[i].name) return i;
  throw Error(str("unknown pass '", name, "'; passes: ", join(pass_names(), ", ")));
}

bool verify_ir_enabled() {
  if (const char* env = std::getenv("TILEJIT_VERIFY_IR"); env && *env)
    return std::strcmp(env, "0") != 0;
#ifdef TILEJIT_VERIFY_IR
  return true;
#else
  return false;
#endif
}

namespace {

/// Runs passes [first, last] on `state`, verifying and observing after each.
void run_range(PassState& state, size_t first, size_t last, const PassObserver& observer) {
  const bool verify = verify_ir_enabled();
  for (size_t i = first; i <= last; ++i) {
    const Pass& pass = passes()[i];
    pass.run(state);
    state.kernel->after_pass = pass.name;
    if (verify) verify_ir(*state.kernel, pass.name);
    if (observer) observer(pass.name, *state.kernel);
  }
}

} // namespace

std::unique_ptr<ir::Kernel> lower_to_ir(const dsl::Kernel& k, const Bindings& bindings,
                                        const CompileOptions& options,
                                        const std::string& stop_after, const PassObserver& observer,
                                        std::vector<dsl::Diagnostic>* warnings) {
  const size_t last = stop_after.empty() ? passes().size() - 1 : pass_index(stop_after);
  PassState state;
  state.ast = &k;
  state.bindings = &bindings;
  state.options = &options;
  run_range(state, 0, last, observer);
  if (warnings) warnings->insert(warnings->end(), state.warnings.begin(), state.warnings.end());
  return std::move(state.kernel);
}

std::unique_ptr<ir::Kernel> run_passes(std::unique_ptr<ir::Kernel> kernel, const std::string& first,
                                       const std::string& last, const PassObserver& observer,
                                       std::vector<dsl::Diagnostic>* warnings) {
  const size_t from = pass_index(first), to = pass_index(last);
  if (from == 0) throw Error("specialise starts from a .tile kernel, not from IR");
  if (to < from) throw Error(str("pass '", last, "' runs before '", first, "'"));
  PassState state;
  state.kernel = std::move(kernel);
  run_range(state, from, to, observer);
  if (warnings) warnings->insert(warnings->end(), state.warnings.begin(), state.warnings.end());
  return std::move(state.kernel);
}

} // namespace tilejit
