#include "hbv_checks.h"

#include "support/text.h"
#include "test_util.h"
#include "workloads/hbv_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace tilejit::test {
namespace {

/// The kernels see f32 inputs: fills the buffers and rounds `in` to the same values, so that
/// the float64 reference runs on exactly what the kernel reads.
void round_to_f32(workloads::HbvInputs& in, HostBuffer& p, HostBuffer& temp, HostBuffer& pet,
                  HostBuffer& params) {
  auto fill = [](std::vector<double>& v, HostBuffer& buf) {
    for (size_t i = 0; i < v.size(); ++i) {
      buf.set(static_cast<int64_t>(i), v[i]);
      v[i] = buf.get(static_cast<int64_t>(i));
    }
  };
  fill(in.p, p);
  fill(in.temp, temp);
  fill(in.pet, pet);
  fill(in.params, params);
}

/// Gradients are added: each buffer starts at random values, returned to take away after.
std::vector<std::vector<double>> random_starts(const std::vector<HostBuffer*>& grads,
                                               std::mt19937& rng) {
  std::vector<std::vector<double>> start;
  for (HostBuffer* g : grads) {
    fill_uniform(*g, rng, -1, 1);
    std::vector<double> s0(static_cast<size_t>(g->numel()));
    for (int64_t i = 0; i < g->numel(); ++i) s0[i] = g->get(i);
    start.push_back(std::move(s0));
  }
  return start;
}

/// What the kernels added to d_P, d_TEMP, d_PET and d_params (each minus its start) against
/// the references, over the basins marked `clear`: norm-relative within `tol` over each whole
/// gradient and within 10 x tol over each basin's own share.
void expect_gradients(const std::vector<HostBuffer*>& grads,
                      const std::vector<std::vector<double>>& start,
                      const std::vector<const std::vector<double>*>& refs,
                      const std::vector<bool>& clear, int64_t b, double tol) {
  const char* names[] = {"d_P", "d_TEMP", "d_PET", "d_params"};
  for (size_t g = 0; g < grads.size(); ++g) {
    SCOPED_TRACE(names[g]);
    HostBuffer added(DType::F64, grads[g]->shape());
    for (int64_t i = 0; i < added.numel(); ++i) added.set(i, grads[g]->get(i) - start[g][i]);
    const int64_t row = added.numel() / b;
    double ref_norm = 0, max_diff = 0, diff_norm = 0;
    for (int64_t i = 0; i < added.numel(); ++i) {
      if (!clear[size_t(i / row)]) continue;
      ref_norm += (*refs[g])[i] * (*refs[g])[i];
      diff_norm += (added.get(i) - (*refs[g])[i]) * (added.get(i) - (*refs[g])[i]);
      max_diff = std::max(max_diff, std::abs(added.get(i) - (*refs[g])[i]));
    }
    // A gradient that is (next to) zero everywhere (a day or two from the 0.001 start states,
    // or no snow at all) has no relative error to speak of: then it must be zero within f32's
    // rounding of the random start values.
    // (The buffers start at values of order 1, so f32 keeps only gradients above ~1e-7 each.)
    if (std::sqrt(ref_norm / double(added.numel())) < 1e-5) {
      EXPECT_LE(max_diff, 1e-4) << "a gradient that should be (next to) zero";
      continue;
    }
    EXPECT_LE(std::sqrt(diff_norm / ref_norm), tol) << "relative error over the clear basins";
    // Each basin's own gradient, so that one basin left out cannot hide in the norm.
    int64_t bad = 0, first_bad = -1;
    for (int64_t bi = 0; bi < b; ++bi) {
      if (!clear[size_t(bi)]) continue;
      double diff = 0, norm = 0;
      for (int64_t j = bi * row; j < (bi + 1) * row; ++j) {
        const double r = (*refs[g])[j];
        diff += (added.get(j) - r) * (added.get(j) - r);
        norm += r * r;
      }
      if (std::sqrt(diff) > 10 * tol * std::sqrt(norm) + 1e-6)
        if (bad++ == 0) first_bad = bi;
    }
    EXPECT_EQ(bad, 0) << "basins off by more than " << 10 * tol << ", first " << first_bad;
  }
}

} // namespace

void check_hbv_forward(const KernelRunner& run, int64_t b, int64_t t, const Bindings& config) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("hbv_forward B=", b, " T=", t, " ", config_text(config), " seed=", seed));
  workloads::HbvInputs in = workloads::random_hbv_inputs(b, t, seed);
  HostBuffer p(DType::F32, {b, t}), temp(DType::F32, {b, t}), pet(DType::F32, {b, t});
  HostBuffer params(DType::F32, {b, workloads::kHbvParams}), q(DType::F32, {b, t});
  round_to_f32(in, p, temp, pet, params);
  q.poison();
  run("embedded:workloads/hbv.tile#hbv_forward", config,
      {TestArg::of(p), TestArg::of(temp), TestArg::of(pet), TestArg::of(params), TestArg::of(q)});
  expect_close(q, workloads::hbv_forward(in), 1e-4);
}

void check_hbv_gradient(const KernelRunner& run, int64_t b, int64_t t, const Bindings& config,
                        double tol, const std::function<void(workloads::HbvInputs&)>& edit,
                        bool f32_branches) {
  using workloads::kHbvParams;
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("hbv_forward_grad B=", b, " T=", t, " ", config_text(config), " seed=", seed));
  workloads::HbvInputs in = workloads::random_hbv_inputs(b, t, seed);
  if (edit) edit(in);
  std::mt19937 rng(seed ^ 0x5bd1e995u);
  HostBuffer p(DType::F32, {b, t}), temp(DType::F32, {b, t}), pet(DType::F32, {b, t});
  HostBuffer params(DType::F32, {b, kHbvParams}), q(DType::F32, {b, t}), dq(DType::F32, {b, t});
  round_to_f32(in, p, temp, pet, params);
  fill_uniform(dq, rng, -1, 1);
  std::vector<double> dq_ref(static_cast<size_t>(b * t));
  for (int64_t i = 0; i < b * t; ++i) dq_ref[i] = dq.get(i);
  q.poison(); // the derived kernel reads no output
  // Gradients are added: start them at random values and take those away after.
  HostBuffer d_p(DType::F32, {b, t}), d_temp(DType::F32, {b, t}), d_pet(DType::F32, {b, t});
  HostBuffer d_params(DType::F32, {b, kHbvParams});
  std::vector<HostBuffer*> grads = {&d_p, &d_temp, &d_pet, &d_params};
  const std::vector<std::vector<double>> start = random_starts(grads, rng);
  if (!config.count("SEG")) {
    run("grad:embedded:workloads/hbv.tile#hbv_forward", config,
        {TestArg::of(p), TestArg::of(temp), TestArg::of(pet), TestArg::of(params), TestArg::of(q),
         TestArg::of(dq), TestArg::of(d_p), TestArg::of(d_temp), TestArg::of(d_pet),
         TestArg::of(d_params)});
  } else {
    // The segment form: the forward storing each segment's start, the maps of every segment,
    // then each segment undone with its own; or (ON_STARTS, the test's own key) the checkpointed
    // reverse on those starts.
    const bool on_starts = config.count("ON_STARTS") != 0;
    Bindings kernel_config = config;
    kernel_config.erase("ON_STARTS");
    const int64_t bb = config.count("BB") ? std::stoll(config.at("BB")) : 32;
    const int64_t seg = std::stoll(config.at("SEG"));
    const int64_t np = (b + bb - 1) / bb, ns = (t + seg - 1) / seg;
    HostBuffer tape(DType::F32, {np, ns, seg, 5, bb}), maps(DType::F32, {np, ns, 30, bb});
    HostBuffer starts(DType::F32, {np, ns, 5, bb});
    tape.poison();
    maps.poison();
    starts.poison();
    run("grad:embedded:workloads/hbv.tile#hbv_forward_grad_fwd", kernel_config,
        {TestArg::of(p), TestArg::of(temp), TestArg::of(pet), TestArg::of(params), TestArg::of(q),
         TestArg::of(starts)});
    expect_close(q, workloads::hbv_forward(in), 1e-4); // the training forward's Q
    if (on_starts) {
      run("grad:embedded:workloads/hbv.tile#hbv_forward_grad_ck", kernel_config,
          {TestArg::of(p), TestArg::of(temp), TestArg::of(pet), TestArg::of(params), TestArg::of(q),
           TestArg::of(dq), TestArg::of(d_p), TestArg::of(d_temp), TestArg::of(d_pet),
           TestArg::of(d_params), TestArg::of(starts)});
    } else {
      run("grad:embedded:workloads/hbv.tile#hbv_forward_grad_lin", kernel_config,
          {TestArg::of(p), TestArg::of(temp), TestArg::of(pet), TestArg::of(params), TestArg::of(q),
           TestArg::of(dq), TestArg::of(starts), TestArg::of(tape), TestArg::of(maps)});
      run("grad:embedded:workloads/hbv.tile#hbv_forward_grad_seg", kernel_config,
          {TestArg::of(p), TestArg::of(temp), TestArg::of(pet), TestArg::of(params), TestArg::of(q),
           TestArg::of(dq), TestArg::of(d_p), TestArg::of(d_temp), TestArg::of(d_pet),
           TestArg::of(d_params), TestArg::of(tape), TestArg::of(maps)});
    }
  }
  const std::vector<uint16_t> decisions =
      f32_branches ? workloads::hbv_decisions_f32(in) : std::vector<uint16_t>();
  const workloads::HbvGradients ref =
      workloads::hbv_backward(in, dq_ref, f32_branches ? &decisions : nullptr);
  // Basins near a kink may take another branch in f32 than in float64 (hbv_reference.h): their
  // gradients are left out, as the workload's comparison leaves them out, unless the reference
  // follows f32's branches.
  std::vector<double> nearest;
  workloads::hbv_forward(in, nullptr, &nearest);
  const std::vector<bool> clear =
      f32_branches ? std::vector<bool>(size_t(b), true) : workloads::hbv_basins_to_compare(nearest);
  expect_gradients(grads, start, {&ref.p, &ref.temp, &ref.pet, &ref.params}, clear, b, tol);
}

void check_hbv_nmul(const KernelRunner& run, int64_t b, int64_t t, int64_t nm,
                    const Bindings& given, const std::string& form, double tol) {
  using workloads::kHbvParams;
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE(str("hbv_forward_nmul B=", b, " T=", t, " NM=", nm, " ", form, " ",
                   config_text(given), " seed=", seed));
  // The B * NM models: model b * NM + m has basin b's forcings and component m's parameters.
  workloads::HbvInputs models = workloads::random_hbv_inputs(b * nm, t, seed);
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t m = 1; m < nm; ++m)
      for (auto* f : {&models.p, &models.temp, &models.pet})
        for (int64_t d = 0; d < t; ++d) (*f)[(bi * nm + m) * t + d] = (*f)[bi * nm * t + d];
  std::mt19937 rng(seed ^ 0x5bd1e995u);
  HostBuffer p(DType::F32, {b, t}), temp(DType::F32, {b, t}), pet(DType::F32, {b, t});
  HostBuffer params(DType::F32, {b, kHbvParams, nm}), q(DType::F32, {b, t}), dq(DType::F32, {b, t});
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t d = 0; d < t; ++d) {
      p.set(bi * t + d, models.p[bi * nm * t + d]);
      temp.set(bi * t + d, models.temp[bi * nm * t + d]);
      pet.set(bi * t + d, models.pet[bi * nm * t + d]);
    }
  for (int64_t bi = 0; bi < b; ++bi)
    for (int k = 0; k < kHbvParams; ++k)
      for (int64_t m = 0; m < nm; ++m)
        params.set((bi * kHbvParams + k) * nm + m, models.params[(bi * nm + m) * kHbvParams + k]);
  // The reference on exactly the f32 values the kernel reads.
  for (int64_t i = 0; i < b * nm; ++i) {
    const int64_t bi = i / nm, m = i % nm;
    for (int64_t d = 0; d < t; ++d) {
      models.p[i * t + d] = p.get(bi * t + d);
      models.temp[i * t + d] = temp.get(bi * t + d);
      models.pet[i * t + d] = pet.get(bi * t + d);
    }
    for (int k = 0; k < kHbvParams; ++k)
      models.params[i * kHbvParams + k] = params.get((bi * kHbvParams + k) * nm + m);
  }
  const std::vector<double> qm = workloads::hbv_forward(models);
  std::vector<double> q_ref(static_cast<size_t>(b * t), 0.0);
  for (int64_t i = 0; i < b * nm; ++i)
    for (int64_t d = 0; d < t; ++d) q_ref[(i / nm) * t + d] += qm[i * t + d] / double(nm);
  Bindings config = given;
  config["NM"] = std::to_string(nm);
  const std::string source = "embedded:workloads/hbv.tile#hbv_forward_nmul";
  const std::vector<TestArg> inputs = {TestArg::of(p), TestArg::of(temp), TestArg::of(pet),
                                       TestArg::of(params), TestArg::of(q)};
  q.poison();
  if (form == "forward") {
    run(source, config, inputs);
    expect_close(q, q_ref, 1e-4);
    return;
  }
  fill_uniform(dq, rng, -1, 1);
  HostBuffer d_p(DType::F32, {b, t}), d_temp(DType::F32, {b, t}), d_pet(DType::F32, {b, t});
  HostBuffer d_params(DType::F32, {b, kHbvParams, nm});
  std::vector<HostBuffer*> grads = {&d_p, &d_temp, &d_pet, &d_params};
  const std::vector<std::vector<double>> start = random_starts(grads, rng);
  std::vector<TestArg> args = inputs;
  args.push_back(TestArg::of(dq));
  for (HostBuffer* g : grads) args.push_back(TestArg::of(*g));
  if (form == "whole") {
    run("grad:" + source, config, args);
  } else {
    const int64_t bb = config.count("BB") ? std::stoll(config.at("BB")) : 16;
    const int64_t seg = std::stoll(config.at("SEG"));
    const int64_t np = (b + bb - 1) / bb, ns = (t + seg - 1) / seg;
    HostBuffer starts(DType::F32, {np, ns, 5, bb, nm}), tape(DType::F32, {np, ns, seg, 5, bb, nm}),
        maps(DType::F32, {np, ns, 30, bb, nm});
    for (HostBuffer* x : {&starts, &tape, &maps}) x->poison();
    std::vector<TestArg> fwd = inputs;
    fwd.push_back(TestArg::of(starts));
    run("grad:" + source + "_grad_fwd", config, fwd);
    expect_close(q, q_ref, 1e-4); // the training forward's Q
    if (form == "ck") {
      args.push_back(TestArg::of(starts));
      run("grad:" + source + "_grad_ck", config, args);
    } else {
      std::vector<TestArg> lin = inputs;
      for (HostBuffer* x : {&dq, &starts, &tape, &maps}) lin.push_back(TestArg::of(*x));
      run("grad:" + source + "_grad_lin", config, lin);
      args.push_back(TestArg::of(tape));
      args.push_back(TestArg::of(maps));
      run("grad:" + source + "_grad_seg", config, args);
    }
  }
  // The models' gradients with dQ / NM each; the forcings' summed over the components.
  std::vector<double> dq_models(static_cast<size_t>(b * nm * t));
  for (int64_t i = 0; i < b * nm; ++i)
    for (int64_t d = 0; d < t; ++d) dq_models[i * t + d] = dq.get((i / nm) * t + d) / double(nm);
  const std::vector<uint16_t> decisions = workloads::hbv_decisions_f32(models);
  const workloads::HbvGradients gm = workloads::hbv_backward(models, dq_models, &decisions);
  std::vector<double> ref_p(size_t(b * t), 0.0), ref_temp(size_t(b * t), 0.0),
      ref_pet(size_t(b * t), 0.0), ref_params(size_t(b * kHbvParams * nm));
  for (int64_t i = 0; i < b * nm; ++i) {
    const int64_t bi = i / nm, m = i % nm;
    for (int64_t d = 0; d < t; ++d) {
      ref_p[bi * t + d] += gm.p[i * t + d];
      ref_temp[bi * t + d] += gm.temp[i * t + d];
      ref_pet[bi * t + d] += gm.pet[i * t + d];
    }
    for (int k = 0; k < kHbvParams; ++k)
      ref_params[(bi * kHbvParams + k) * nm + m] = gm.params[i * kHbvParams + k];
  }
  expect_gradients(grads, start, {&ref_p, &ref_temp, &ref_pet, &ref_params},
                   std::vector<bool>(size_t(b), true), b, tol);
}

} // namespace tilejit::test
