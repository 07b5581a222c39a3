#include "compiler/ref/run_tile.h"

#include "compiler/launch_plan.h"
#include "compiler/ref/float_formats.h"
#include "compiler/ref/value.h"
#include "compiler/target.h"
#include "support/error.h"
#include "tuner/search_space.h"

#include <cmath>
#include <cstring>

namespace tilejit::ref {

HostBuffer::HostBuffer(DType dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)),
      bytes_(static_cast<size_t>(shape_numel(shape_) * dtype_size(dtype)), 0) {}

int64_t HostBuffer::numel() const {
  return shape_numel(shape_);
}

double HostBuffer::get(int64_t k) const {
  // Float formats decoded in place: the workloads' checks read buffers of hundreds of millions
  // of elements, and a Value per element (two heap allocations) cost ~200 ns each.
  const unsigned char* p = bytes_.data() + k * dtype_size(dtype_);
  switch (dtype_) {
  case DType::F32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case DType::F16:
  case DType::BF16: {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return dtype_ == DType::F16 ? f16_bits_to_f64(bits) : bf16_bits_to_f64(bits);
  }
  default:
    break;
  }
  Value v = Value::zeros(dtype_, {});
  load_element(dtype_, bytes_.data(), k, v, 0);
  return v.as_double(0);
}

int64_t HostBuffer::get_int(int64_t k) const {
  Value v = Value::zeros(dtype_, {});
  load_element(dtype_, bytes_.data(), k, v, 0);
  return v.is_float() ? float_to_int(DType::I64, v.f[0]) : v.i[0];
}

void HostBuffer::set(int64_t k, double x) {
  Value v = Value::scalar_float(dtype_, x);
  store_element(dtype_, bytes_.data(), k, v, 0);
}

void HostBuffer::set_int(int64_t k, int64_t x) {
  Value v = Value::scalar_int(dtype_, x);
  store_element(dtype_, bytes_.data(), k, v, 0);
}

void HostBuffer::fill(double x) {
  for (int64_t k = 0; k < numel(); ++k) set(k, x);
}

void HostBuffer::poison() {
  if (dtype_is_float(dtype_))
    fill(std::nan(""));
  else
    std::memset(bytes_.data(), 0xA5, bytes_.size());
}

HostTensor HostBuffer::view() {
  return HostTensor{dtype_, shape_, dense_strides(shape_), bytes_.data()};
}

RunResult run_tile(const dsl::Kernel& k, const Bindings& given, const std::vector<HostArg>& args,
                   const CompileOptions& options, const std::string& after) {
  size_t callers = 0;
  for (const auto& p : k.params) callers += p.is_scratch ? 0 : 1;
  if (args.size() != callers)
    throw Error(str("kernel '", k.name, "' takes ", callers,
                    " arguments (scratch tensors are allocated here), got ", args.size()));
  // One ArgSpec per parameter, in declaration order; scratch ones are left for the plan.
  std::vector<ArgSpec> specs(k.params.size());
  std::vector<int> caller_index(k.params.size(), -1);
  for (size_t i = 0, next = 0; i < k.params.size(); ++i) {
    if (k.params[i].is_scratch) {
      specs[i].provided = false;
      continue;
    }
    const HostArg& a = args[next];
    caller_index[i] = static_cast<int>(next++);
    specs[i].is_tensor = a.is_tensor;
    specs[i].dtype = a.tensor.dtype;
    specs[i].shape = a.tensor.shape;
    specs[i].scalar = a.scalar;
  }
  RunResult result;
  Bindings bindings = given;
  infer_generics(k, specs, bindings);
  // Defaults that break a constraint for these generics get the launch's stand-in for them.
  result.bindings = complete_valid_bindings(k, bindings, options.smem_limit, nullptr,
                                            target_for(options.arch).warp_size());
  LaunchPlan plan = plan_launch(k, result.bindings, specs);
  result.grid = plan.grid;
  result.kernel = lower_to_ir(k, result.bindings, options, after);
  const ir::Kernel& ir = *result.kernel;
  TJ_ICHECK(ir.params.size() == k.params.size(), "lowering changed the parameter count");
  result.scratch.resize(ir.params.size());
  std::vector<HostArg> full(ir.params.size());
  for (size_t i = 0; i < ir.params.size(); ++i) {
    if (caller_index[i] >= 0) {
      full[i] = args[caller_index[i]];
      continue;
    }
    HostBuffer& b = result.scratch[i] = HostBuffer(ir.params[i].dtype, plan.scratch_shapes[i]);
    if (!ir.params[i].zero_init) b.poison();
    full[i] = b.arg();
  }
  run_kernel(ir, full, plan.grid);
  return result;
}

} // namespace tilejit::ref
