// Argument checks shared by the typed ops (<tilejit/ops.h>): each error names the op, the
// tensor, its shape and what was expected ("dequant_linear: tensor 'x' (f16[3, 100] cuda:0)
// has 100 in dimension 1 but the weights' K = 128").
#pragma once

#include <tilejit/tensor.h>

#include <initializer_list>
#include <string>
#include <utility>

namespace tilejit::ops {

class OpChecks {
public:
  explicit OpChecks(const char* op) : op_(op) {}
  /// "<op>: tensor 'q' (f16[3, 32, 7] cuda:0)".
  std::string named(const char* name, const Tensor& t) const;
  void rank_and_dtype(const char* name, const Tensor& t, int rank,
                      std::initializer_list<DType> dtypes, const char* layout) const;
  void size(const char* name, const Tensor& t, int dim, int64_t want, const char* what) const;
  /// Stride 1 in the last dimension (rows read with vector loads).
  void rows_dense(const char* name, const Tensor& t) const;
  /// Every tensor dense (host-side copies read them as they lie).
  void contiguous(const char* name, const Tensor& t) const;
  /// Every given tensor (null: absent) on the GPU, on the first one's device.
  void on_one_gpu(std::initializer_list<std::pair<const char*, const Tensor*>> tensors) const;

private:
  const char* op_;
};

} // namespace tilejit::ops
