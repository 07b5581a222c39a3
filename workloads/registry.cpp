#include "workloads/registry.h"

#include "support/error.h"
#include "support/text.h"

namespace tilejit::workloads {

const std::vector<WorkloadInfo>& all_workloads() {
  static const std::vector<WorkloadInfo> list = {
      {"paged_sparse", "sparse decode attention over a paged KV cache (split-K, one launch)", true,
       "embedded:workloads/paged_sparse.tile"},
      {"dequant_gemm", "weight-only int4/int8 GEMM for LLM decode", false, ""},
      {"attention", "FlashAttention forward/backward, dense and block-sparse", false, ""},
      {"gated_delta", "chunked linear attention and the gated delta rule", false, ""},
      {"hbv", "differentiable HBV-96 hydrological model (a nonlinear scan)", false, ""},
  };
  return list;
}

const WorkloadInfo& find_workload(const std::string& name) {
  std::vector<std::string> implemented, names;
  for (const auto& w : all_workloads()) {
    names.push_back(w.name);
    if (w.implemented) implemented.push_back(w.name);
  }
  for (const auto& w : all_workloads()) {
    if (w.name != name) continue;
    if (!w.implemented)
      throw Error(str("workload '", name,
                      "' is not implemented yet (implemented: ", join(implemented, ", "), ")"));
    return w;
  }
  throw Error(str("unknown workload '", name, "'; workloads: ", join(names, ", "),
                  " (or pass a .tile file with --kernel/--shape)"));
}

} // namespace tilejit::workloads
