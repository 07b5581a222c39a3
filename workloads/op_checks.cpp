#include "workloads/op_checks.h"

#include "support/error.h"

namespace tilejit::ops {

std::string OpChecks::named(const char* name, const Tensor& t) const {
  return str(op_, ": tensor '", name, "' (", t.describe(), ")");
}

void OpChecks::rank_and_dtype(const char* name, const Tensor& t, int rank,
                              std::initializer_list<DType> dtypes, const char* layout) const {
  if (t.rank() != rank)
    throw Error(str(named(name, t), " must have ", rank, " dimensions: ", layout));
  for (DType d : dtypes)
    if (t.dtype == d) return;
  std::string allowed; // built only for the error: this runs on every call
  for (DType d : dtypes) allowed += (allowed.empty() ? "" : " or ") + std::string(dtype_name(d));
  throw Error(str(named(name, t), " must be ", allowed));
}

void OpChecks::size(const char* name, const Tensor& t, int dim, int64_t want,
                    const char* what) const {
  if (t.shape[dim] != want)
    throw Error(str(named(name, t), " has ", t.shape[dim], " in dimension ", dim, " but ", what,
                    " = ", want));
}

void OpChecks::rows_dense(const char* name, const Tensor& t) const {
  if (t.rank() > 0 && t.shape.back() > 1 && t.strides.back() != 1)
    throw Error(str(named(name, t), " must have stride 1 in its last dimension (.contiguous())"));
}

void OpChecks::contiguous(const char* name, const Tensor& t) const {
  if (!t.is_contiguous()) throw Error(str(named(name, t), " must be contiguous (.contiguous())"));
}

void OpChecks::on_one_gpu(
    std::initializer_list<std::pair<const char*, const Tensor*>> tensors) const {
  const Tensor* first = nullptr;
  const char* first_name = "";
  for (const auto& [name, t] : tensors) {
    if (!t) continue;
    if (t->device != DeviceKind::CUDA)
      throw Error(str(named(name, *t), " is in host memory: every tensor must be on the GPU"));
    if (!first) {
      first = t;
      first_name = name;
    } else if (t->device_index != first->device_index) {
      throw Error(str(named(name, *t), " is on cuda:", t->device_index, " but ", first_name,
                      " on cuda:", first->device_index));
    }
  }
}

} // namespace tilejit::ops
