// Tuning on an AMD GPU (issue 19), on a machine with none: every step of the path that measures
// through HIP (buffers, copies, waits, the timer, tune(), a workload's problem, the runtime's
// database) is reached and stops with "no AMD GPU" before anything is compiled, timed or
// recorded; the API each runtime measures through follows its target. Where an AMD GPU is
// found, each test says so: run the GPU tests there instead.
#include "runtime/device_buffer.h"
#include "runtime/gpu_api.h"
#include "tests/tuner/tune_test_util.h"
#include "tuner/launch_timer.h"
#include "tuner/tune_database.h"
#include "tuner/tuner.h"
#include "workloads/problem_on_gpu.h"
#include "workloads/workload_tuning.h"

#include <gtest/gtest.h>

#include <tilejit/errors.h>
#include <tilejit/tuning.h>

#include <functional>

namespace tilejit {
namespace {

RuntimeOptions on(const std::string& arch) {
  RuntimeOptions o;
  o.arch = arch;
  o.cache_dir = "";
  o.tune_on_first_use = false;
  return o;
}

/// Runs `f`, which must stop with NoGpuError naming the missing AMD GPU.
void expect_no_amd_gpu(const std::function<void()>& f, const char* what) {
  SCOPED_TRACE(what);
  try {
    f();
    ADD_FAILURE() << "returned: an AMD GPU is here (or nothing asked for one)";
  } catch (const NoGpuError& e) {
    EXPECT_NE(std::string(e.what()).find("no AMD GPU"), std::string::npos) << e.what();
  }
}

TEST(AmdTuning, EachRuntimeMeasuresThroughItsTargetsApi) {
  for (const char* arch : {"gfx90a", "gfx1030"}) {
    Runtime rt(on(arch));
    EXPECT_EQ(gpu_api(rt), GpuApi::hip) << arch;
  }
  for (const char* arch : {"sm_80", "sm_90a"}) {
    Runtime rt(on(arch));
    EXPECT_EQ(gpu_api(rt), GpuApi::cuda) << arch;
  }
  EXPECT_STREQ(gpu_api_name(GpuApi::hip), "HIP");
  EXPECT_STREQ(gpu_api_name(GpuApi::cuda), "CUDA");
}

TEST(AmdTuning, BuffersCopiesAndWaitsOnHipSayNoAmdGpu) {
  expect_no_amd_gpu([] { DeviceBuffer b(4096, 0, GpuApi::hip); }, "a buffer");
  expect_no_amd_gpu([] { DeviceBuffer b(0, 0, GpuApi::hip); }, "an empty buffer");
  expect_no_amd_gpu([] { synchronize_device(GpuApi::hip, 0); }, "a device wait");
  expect_no_amd_gpu([] { synchronize_stream(GpuApi::hip, nullptr); }, "a stream wait");
  int host = 0;
  expect_no_amd_gpu([&] { copy_to_host(GpuApi::hip, 0, &host, &host, 4); }, "a copy to host");
  expect_no_amd_gpu([&] { copy_on_device(GpuApi::hip, 0, &host, &host, 4); }, "a device copy");
  Runtime rt(on("gfx90a"));
  expect_no_amd_gpu([&] { shared_memory_limit(rt); }, "the LDS limit");
  expect_no_amd_gpu([&] { LaunchTimer timer(rt); }, "the timer");
  expect_no_amd_gpu([&] { current_identity(rt); }, "the tuning identity");
}

// tune() on an AMD runtime stops before compiling or recording: the database stays as it was.
TEST(AmdTuning, TuneStopsBeforeCompilingAndRecordsNothing) {
  tune_test::TempDir dir;
  TuneDatabase db(dir.file("t.db"));
  Runtime rt(on("gfx90a"));
  TuneRequest r;
  r.runtime = &rt;
  r.kernel = rt.load("embedded:examples/softmax.tile");
  float fake = 0; // never dereferenced
  Tensor x = Tensor::contiguous(&fake, DType::F32, {7, 300});
  r.args = {Arg::of(x), Arg::of(x)};
  r.prepare_check = [] {};
  r.check = [](std::string*) { return true; };
  const TuneIdentity id = tune_identity_amd("AMD Instinct MI250X", "gfx90a:sramecc+:xnack-", 104,
                                            50221153, 50221153, "5.2", "0.1.0");
  expect_no_amd_gpu([&] { tune(r, db, id); }, "tune");
  EXPECT_TRUE(db.list().empty()) << "a trial was recorded";
}

// A workload's problem on an AMD runtime: its buffers (HIP) and its tuning say no AMD GPU.
TEST(AmdTuning, AWorkloadsProblemAndItsTuningSayNoAmdGpu) {
  tune_test::TempDir dir;
  TuneDatabase db(dir.file("t.db"));
  Runtime rt(on("gfx1030"));
  auto w = workloads::find_workload("paged_sparse");
  workloads::WorkloadKernels kernels(rt, *w);
  auto problem = w->parse_shape(
      {{"HQ", "8"}, {"HKV", "2"}, {"D", "64"}, {"CTX", "300"}, {"R", "0.2"}}, DType::F16);
  auto data = problem->make_data(1);
  expect_no_amd_gpu([&] { workloads::ProblemOnGpu gpu(kernels, *problem, *data); },
                    "the problem's buffers");
  const TuneIdentity id =
      tune_identity_amd("AMD Radeon RX 6800", "gfx1030", 60, 50221153, 50221153, "5.2", "0.1.0");
  workloads::WorkloadTuneOptions o;
  o.budget.trials = 2;
  expect_no_amd_gpu([&] { workloads::tune_problem(kernels, *problem, db, id, o); }, "tune_problem");
  EXPECT_TRUE(db.list().empty()) << "a trial was recorded";
}

// The public entry points ask for the runtime's own kind of GPU: an AMD runtime's database
// needs an AMD GPU (not "no NVIDIA driver").
TEST(AmdTuning, AnAmdRuntimesDatabaseNeedsAnAmdGpu) {
  tune_test::TempDir dir;
  Runtime rt(on("gfx90a"));
  expect_no_amd_gpu([&] { use_tuning_database(rt, dir.file("t.db")); }, "use_tuning_database");
  KernelRef k = rt.load("embedded:examples/softmax.tile");
  float fake = 0;
  Tensor x = Tensor::contiguous(&fake, DType::F32, {7, 300});
  expect_no_amd_gpu(
      [&] {
        tune_launch(rt, k, {Arg::of(x), Arg::of(x)}, {}, dir.file("t.db"));
      },
      "tune_launch");
}

} // namespace
} // namespace tilejit
