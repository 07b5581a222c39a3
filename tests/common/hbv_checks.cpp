#include "hbv_checks.h"

#include "support/text.h"
#include "test_util.h"
#include "workloads/hbv_reference.h"

#include <gtest/gtest.h>

namespace tilejit::test {

void check_hbv_forward(const KernelRunner& run, int64_t b, int64_t t, const Bindings& config) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("hbv_forward B=", b, " T=", t, " ", config_text(config), " seed=", seed));
  workloads::HbvInputs in = workloads::random_hbv_inputs(b, t, seed);
  HostBuffer p(DType::F32, {b, t}), temp(DType::F32, {b, t}), pet(DType::F32, {b, t});
  HostBuffer params(DType::F32, {b, workloads::kHbvParams}), q(DType::F32, {b, t});
  // The kernel sees f32 inputs; the reference runs on the same (rounded) values.
  auto to_f32 = [](std::vector<double>& v, HostBuffer& buf) {
    for (size_t i = 0; i < v.size(); ++i) {
      buf.set(static_cast<int64_t>(i), v[i]);
      v[i] = buf.get(static_cast<int64_t>(i));
    }
  };
  to_f32(in.p, p);
  to_f32(in.temp, temp);
  to_f32(in.pet, pet);
  to_f32(in.params, params);
  q.poison();
  run("embedded:workloads/hbv.tile#hbv_forward", config,
      {TestArg::of(p), TestArg::of(temp), TestArg::of(pet), TestArg::of(params), TestArg::of(q)});
  expect_close(q, workloads::hbv_forward(in), 1e-4);
}

} // namespace tilejit::test
