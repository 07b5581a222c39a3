// The runtime's prepared launches (no GPU: NVRTC compiles for sm_90a): a repeated launch of a
// known shape finds its prepared launch by signature, and every input that can change the
// configuration, the checks, the compiled variant or the scratch buffers changes the signature.
// Also: compile tasks own what they touch (they may outlive the arguments and the Runtime), and
// a compile past its deadline fails the launch.
#include "nvrtc_test_support.h"
#include "runtime/jit_compiler.h"
#include "runtime/launch_signature.h"
#include "runtime/runtime_access.h"
#include "support/deadline.h"
#include "support/error.h"
#include "support/text.h"

#include <gtest/gtest.h>

#include <tilejit/tilejit.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <unistd.h>

namespace tilejit {
namespace {

/// A Runtime that compiles for sm_90a without a GPU and keeps no module cache on disk.
std::unique_ptr<Runtime> cpu_runtime(std::vector<std::string>* log = nullptr) {
  RuntimeOptions o;
  o.arch = "sm_90a";
  o.cache_dir = "";
  o.tune_on_first_use = false;
  if (log) o.log = [log](const std::string& m) { log->push_back(m); };
  return std::make_unique<Runtime>(o);
}

Arg tensor(DType t, std::vector<int64_t> shape, uintptr_t address = 4096) {
  return Arg::of(Tensor::contiguous(reinterpret_cast<void*>(address), t, std::move(shape)));
}

TEST(PreparedLaunch, ARepeatedShapeIsAHitAndCompilesOnce) {
  TJ_REQUIRE_NVRTC();
  std::vector<std::string> log;
  auto rt = cpu_runtime(&log);
  KernelRef k = rt->load("embedded:examples/softmax.tile");
  std::vector<Arg> args = {tensor(DType::F32, {37, 300}), tensor(DType::F32, {37, 300}, 8192)};
  const PreparedLaunch& first = rt->prepare(k, args);
  EXPECT_EQ(first.config.at("T"), "f32");
  EXPECT_EQ(first.grid[0], (37 + 1) / 2); // cdiv(R, BR) with BR = 2 by default
  EXPECT_GT(first.threads, 0);
  EXPECT_EQ(rt->launch_stats().prepared, 1);
  EXPECT_EQ(rt->launch_stats().hits, 0);
  size_t compiles = log.size();
  // Other data pointers with the same alignment: the same prepared launch, nothing compiled.
  args[0] = tensor(DType::F32, {37, 300}, 4096 + (1 << 20));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(&rt->prepare(k, args), &first);
  EXPECT_EQ(rt->launch_stats().prepared, 1);
  EXPECT_EQ(rt->launch_stats().hits, 5);
  EXPECT_EQ(log.size(), compiles);
}

// A derived gradient's checkpoints and tape are scratch tensors: the prepared launch says how
// many bytes they take at its shape and configuration (what `bench` reports as scratch_bytes).
TEST(PreparedLaunch, ScratchBytesCountTheCheckpointsAndTheTape) {
  TJ_REQUIRE_NVRTC();
  auto rt = cpu_runtime();
  KernelRef k = rt->load("grad:embedded:workloads/hbv.tile", "hbv_forward_grad");
  const int64_t B = 1000, T = 365;
  std::vector<Arg> args;
  uintptr_t address = 1 << 20;
  for (int i = 0; i < 10; ++i, address += 1 << 24) {
    const bool params = i == 3 || i == 9; // params, d_params: [B, 12]
    args.push_back(tensor(DType::F32, {B, params ? 12 : T}, address));
  }
  LaunchOptions o;
  o.config = {{"BB", "32"}, {"WARPS", "1"}, {"CK", "64"}};
  const PreparedLaunch& pl = rt->prepare(k, args, o);
  // Five carried values (the five stores), checkpointed side by side in one f32 tensor
  // [cdiv(B, BB), cdiv(T, CK), 5, BB] and taped in another [cdiv(B, BB), CK, 5, BB].
  const int64_t programs = (B + 31) / 32;
  EXPECT_EQ(pl.scratch_bytes, 5 * 4 * (programs * ((T + 63) / 64) * 32 + programs * 64 * 32));
  o.config["CK"] = "16";
  EXPECT_EQ(rt->prepare(k, args, o).scratch_bytes,
            5 * 4 * (programs * ((T + 15) / 16) * 32 + programs * 16 * 32));
  // A kernel without scratch.
  KernelRef softmax = rt->load("embedded:examples/softmax.tile");
  EXPECT_EQ(
      rt->prepare(softmax, {tensor(DType::F32, {37, 300}), tensor(DType::F32, {37, 300}, 8192)})
          .scratch_bytes,
      0);
}

TEST(PreparedLaunch, WhatChangesTheLaunchChangesTheSignature) {
  TJ_REQUIRE_NVRTC();
  auto rt = cpu_runtime();
  KernelRef k = rt->load("embedded:examples/softmax.tile");
  std::vector<Arg> base = {tensor(DType::F32, {37, 300}), tensor(DType::F32, {37, 300})};
  const PreparedLaunch* p0 = &rt->prepare(k, base);

  std::vector<Arg> shape = {tensor(DType::F32, {38, 300}), tensor(DType::F32, {38, 300})};
  EXPECT_NE(&rt->prepare(k, shape), p0);

  std::vector<Arg> dtype = {tensor(DType::F16, {37, 300}), tensor(DType::F16, {37, 300})};
  EXPECT_EQ(rt->prepare(k, dtype).config.at("T"), "f16");

  // A base that is not 16-byte aligned compiles a variant without vector accesses.
  std::vector<Arg> misaligned = {tensor(DType::F32, {37, 300}, 4100), base[1]};
  EXPECT_NE(&rt->prepare(k, misaligned), p0);

  // A transposed view: other strides.
  std::vector<Arg> strided = base;
  strided[0].tensor.strides = {1, 37};
  EXPECT_NE(&rt->prepare(k, strided), p0);

  // Another stream: its own prepared launch (its own scratch buffers).
  LaunchOptions on_stream;
  on_stream.stream = reinterpret_cast<void*>(0x1234);
  EXPECT_NE(&rt->prepare(k, base, on_stream), p0);

  // Forced values.
  LaunchOptions forced;
  forced.config = {{"BC", "512"}};
  const PreparedLaunch& f = rt->prepare(k, base, forced);
  EXPECT_NE(&f, p0);
  EXPECT_EQ(f.config.at("BC"), "512");
  EXPECT_EQ(&rt->prepare(k, base), p0); // and the unforced launch is still the first one

  const int64_t distinct = rt->launch_stats().prepared;
  EXPECT_EQ(distinct, 7);
  rt->forget_prepared();
  EXPECT_EQ(rt->launch_stats().prepared, 0);
  EXPECT_NE(&rt->prepare(k, base), nullptr);
}

TEST(PreparedLaunch, OnlyScalarsThePlanReadsAreInTheSignature) {
  TJ_REQUIRE_NVRTC();
  // `n` sizes the grid; `alpha` only reaches the kernel body.
  char path[] = "/tmp/tilejit_scalars_XXXXXX.tile";
  int fd = mkstemps(path, 5);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "kernel scaled(X: f32[N], Y: f32[N], n: i32, alpha: f32)\n"
                         "  require n <= N\n"
                         "  grid (cdiv(n, 128))\n"
                         "{\n"
                         "  let i0 = program_id(0) * 128;\n"
                         "  store(Y[i0 : i0 + 128], load(X[i0 : i0 + 128]) * alpha);\n"
                         "}\n";
  auto rt = cpu_runtime();
  KernelRef k = rt->load(path);
  std::remove(path);
  auto args = [](int32_t n, float alpha) {
    return std::vector<Arg>{tensor(DType::F32, {1000}), tensor(DType::F32, {1000}), Arg::i32(n),
                            Arg::f32(alpha)};
  };
  const PreparedLaunch* a = &rt->prepare(k, args(1000, 1.0f));
  EXPECT_EQ(a->grid[0], 8);
  EXPECT_EQ(&rt->prepare(k, args(1000, 2.5f)), a);           // alpha: same launch
  const PreparedLaunch& b = rt->prepare(k, args(200, 1.0f)); // n: another grid
  EXPECT_NE(&b, a);
  EXPECT_EQ(b.grid[0], 2);
  // The require is checked for every new value of n.
  EXPECT_THROW(rt->prepare(k, args(1001, 1.0f)), Error);
}

TEST(PreparedLaunch, SignatureWordsNameEveryTensorField) {
  LaunchSignature a, b;
  std::vector<Arg> args = {tensor(DType::F32, {4, 8})};
  make_launch_signature(a, 0, nullptr, {}, args, {false});
  make_launch_signature(b, 0, nullptr, {}, args, {false});
  EXPECT_EQ(a, b);
  args[0].tensor.device = DeviceKind::CPU;
  make_launch_signature(b, 0, nullptr, {}, args, {false});
  EXPECT_FALSE(a == b) << "a CPU tensor must not reuse a CUDA tensor's prepared launch";
  args[0].tensor.device = DeviceKind::CUDA;
  args[0].tensor.data = nullptr;
  make_launch_signature(b, 0, nullptr, {}, args, {false});
  EXPECT_FALSE(a == b) << "a tensor without data must be checked again";
  make_launch_signature(b, 1, nullptr, {}, {tensor(DType::F32, {4, 8})}, {false});
  EXPECT_FALSE(a == b) << "another kernel";
}

// Tuning on first use launches other configurations of the kernel from inside the launch being
// prepared (on the same thread): the outer launch must still get its own prepared launch.
TEST(PreparedLaunch, AFirstUseTunerThatLaunchesKeepsTheOuterLaunchItsOwn) {
  TJ_REQUIRE_NVRTC();
  RuntimeOptions o;
  o.arch = "sm_90a";
  o.cache_dir = "";
  o.tune_on_first_use = true;
  Runtime rt(o);
  KernelRef k = rt.load("embedded:examples/softmax.tile");
  std::vector<Arg> args = {tensor(DType::F32, {37, 300}), tensor(DType::F32, {37, 300})};
  int calls = 0;
  rt.set_first_use_tuner([&](Runtime& r, KernelRef kr, const std::vector<Arg>& a, const Config&,
                             void*, std::string* why) -> std::optional<Config> {
    ++calls;
    // What a tuner does: prepare (and launch) candidates with every value forced.
    for (const char* bc : {"128", "512"}) {
      LaunchOptions lo;
      lo.config = {{"T", "f32"}, {"BR", "2"}, {"BC", bc}, {"WARPS", "4"}};
      r.prepare(kr, a, lo);
    }
    *why = "tuned by the test's tuner";
    return Config{{"BC", "1024"}};
  });
  const PreparedLaunch& p = rt.prepare(k, args);
  EXPECT_EQ(p.why, "tuned by the test's tuner");
  EXPECT_EQ(p.config.at("BC"), "1024");
  EXPECT_EQ(&rt.prepare(k, args), &p);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(rt.launch_stats().prepared, 3);
}

// TILEJIT_TUNE turns tuning on first use on when the options leave it unset; a value that is
// neither on nor off is an error that names the variable.
TEST(PreparedLaunch, TilejitTuneTurnsTuningOnFirstUseOn) {
  auto with_env = [](const char* value, auto&& body) {
    const char* old = std::getenv("TILEJIT_TUNE");
    std::string saved = old ? old : "";
    if (value)
      setenv("TILEJIT_TUNE", value, 1);
    else
      unsetenv("TILEJIT_TUNE");
    body();
    if (old)
      setenv("TILEJIT_TUNE", saved.c_str(), 1);
    else
      unsetenv("TILEJIT_TUNE");
  };
  RuntimeOptions o;
  o.arch = "sm_90a";
  o.cache_dir = "";
  with_env(nullptr, [&] { EXPECT_FALSE(Runtime(o).tunes_on_first_use()); });
  with_env("1", [&] { EXPECT_TRUE(Runtime(o).tunes_on_first_use()); });
  with_env("0", [&] { EXPECT_FALSE(Runtime(o).tunes_on_first_use()); });
  with_env("1", [&] {
    RuntimeOptions off = o;
    off.tune_on_first_use = false; // the option wins over the environment
    EXPECT_FALSE(Runtime(off).tunes_on_first_use());
  });
  with_env("sometimes", [&] {
    try {
      Runtime rt(o);
      ADD_FAILURE() << "TILEJIT_TUNE=sometimes was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("TILEJIT_TUNE='sometimes': expected 1 or 0"),
                std::string::npos)
          << e.what();
    }
  });
}

TEST(CompileTask, OutlivesItsArgumentsAndTheRuntime) {
  TJ_REQUIRE_NVRTC();
  std::function<std::string()> task;
  {
    auto rt = cpu_runtime();
    KernelRef k = rt->load("embedded:examples/softmax.tile");
    std::vector<Arg> args = {tensor(DType::F32, {37, 300}), tensor(DType::F32, {37, 300})};
    Config config = rt->resolve_config(k, args);
    task = rt->compile_task(k, config, args);
    // The runtime, the arguments and the config end here, as a timed-out tune's do.
  }
  std::string error = "not run";
  std::thread([&] { error = task(); }).join();
  EXPECT_EQ(error, "");
}

TEST(CompileTask, AConfigurationTheConstraintsRuleOutIsSaidToBe) {
  TJ_REQUIRE_NVRTC();
  auto rt = cpu_runtime();
  KernelRef k = rt->load("embedded:examples/softmax.tile");
  // BR * BC >= WARPS * 32 does not hold for BR=1, BC=64, WARPS=8.
  Config config = {{"T", "f32"}, {"BR", "1"}, {"BC", "64"}, {"WARPS", "8"}};
  std::string error = rt->compile_task(k, config, {})();
  EXPECT_EQ(error.rfind("constraint: ", 0), 0u) << error;
}

// A dimension declared 1|X takes size 1 or X (each its own prepared launch); anything else is
// an error that names the tensor, before anything compiles.
TEST(PreparedLaunch, BroadcastDimensionsTakeOneOrTheFullSize) {
  TJ_REQUIRE_NVRTC();
  auto rt = cpu_runtime();
  KernelRef k = rt->load(TILEJIT_SOURCE_DIR "/tests/data/semantics.tile", "broadcast_dims");
  auto args = [](int64_t mb, int64_t mh) {
    return std::vector<Arg>{tensor(DType::F32, {3, 5, 150}), tensor(DType::U8, {mb, mh, 10}),
                            tensor(DType::F32, {1}), tensor(DType::F32, {3, 5, 150})};
  };
  const PreparedLaunch* shared_mask = &rt->prepare(k, args(1, 1));
  EXPECT_EQ(shared_mask->grid[2], 3);
  EXPECT_NE(&rt->prepare(k, args(3, 5)), shared_mask);
  EXPECT_NE(&rt->prepare(k, args(1, 5)), shared_mask);
  try {
    rt->prepare(k, args(2, 5));
    FAIL() << "a mask with 2 batches for B = 3 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'mask' (mask: u8[1|B, 1|H, NB]) has 2 in "
                                         "dimension 0, which must be 1 (broadcast) or B = 3"),
              std::string::npos)
        << e.what();
  }
}

// The debug mode compiles a variant of its own, with the checks and the sites they name.
TEST(PreparedLaunch, TheDebugModeIsAVariantOfItsOwn) {
  TJ_REQUIRE_NVRTC();
  RuntimeOptions o;
  o.arch = "sm_90a";
  o.cache_dir = "";
  o.debug_bounds = true;
  Runtime debug(o);
  auto plain = cpu_runtime();
  std::vector<Arg> args = {tensor(DType::F32, {9}), tensor(DType::I32, {12}),
                           tensor(DType::F32, {12})};
  const char* file = TILEJIT_SOURCE_DIR "/tests/data/semantics.tile";
  const CompiledVariant& d =
      RuntimeAccess::compile(debug, debug.load(file, "point_index"), {}, args);
  const CompiledVariant& p =
      RuntimeAccess::compile(*plain, plain->load(file, "point_index"), {}, args);
  EXPECT_TRUE(d.debug_bounds);
  EXPECT_FALSE(p.debug_bounds);
  EXPECT_NE(d.cache_key, p.cache_key);
  ASSERT_FALSE(d.bounds_sites.empty());
  EXPECT_EQ(d.bounds_sites[0].tensor, "idx");
  EXPECT_EQ(d.bounds_sites[0].dim_name, "M");
  EXPECT_TRUE(p.bounds_sites.empty());
}

// A compile past RuntimeOptions::compile_timeout_s fails the launch with a named error instead
// of blocking it, and goes on detached, owning what it touches: the Runtime can go first.
TEST(CompileTimeout, ACompilePastTheDeadlineFailsTheLaunchAndOutlivesTheRuntime) {
  TJ_REQUIRE_NVRTC();
  RuntimeOptions o;
  o.arch = "sm_90a";
  o.cache_dir = "";
  o.compile_timeout_s = 1e-4; // far below any NVRTC compile
  auto rt = std::make_unique<Runtime>(o);
  KernelRef k = rt->load("embedded:examples/softmax.tile");
  std::vector<Arg> args = {tensor(DType::F32, {37, 300}), tensor(DType::F32, {37, 300}, 8192)};
  try {
    rt->prepare(k, args);
    FAIL() << "a compile over its deadline returned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "compiling kernel 'softmax' [BC=256 BR=2 T=f32 WARPS=4] took over 0.0001 s"),
              std::string::npos)
        << e.what();
  }
  EXPECT_GE(detached_work_running(), 1);
  rt.reset(); // the detached compile holds its own kernel, cache and store
  for (int i = 0; i < 1200 && detached_work_running() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(detached_work_running(), 0);
  // Its thread joined: one still tearing down when the program ends crashed LeakSanitizer's
  // tracer in CI (support/deadline.h).
  EXPECT_EQ(reap_detached_work(), 0);
}

TEST(CompileTimeout, NoLimitAndTheEnvironmentAreHonouredAndBadValuesNamed) {
  TJ_REQUIRE_NVRTC();
  RuntimeOptions o;
  o.arch = "sm_90a";
  o.cache_dir = "";
  o.compile_timeout_s = 0; // no limit
  Runtime unlimited(o);
  std::vector<Arg> args = {tensor(DType::F32, {37, 300}), tensor(DType::F32, {37, 300}, 8192)};
  EXPECT_GT(unlimited.prepare(unlimited.load("embedded:examples/softmax.tile"), args).threads, 0);
  o.compile_timeout_s = -1;
  EXPECT_THROW(Runtime bad(o), Error);
  o.compile_timeout_s.reset();
  for (const char* bad : {"abc", "-5", "10s", "nan"}) {
    ::setenv("TILEJIT_COMPILE_TIMEOUT", bad, 1);
    try {
      Runtime r(o);
      ADD_FAILURE() << "TILEJIT_COMPILE_TIMEOUT=" << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(str("TILEJIT_COMPILE_TIMEOUT='", bad, "'")),
                std::string::npos)
          << e.what();
    }
  }
  ::setenv("TILEJIT_COMPILE_TIMEOUT", "1e-4", 1);
  Runtime from_env(o);
  EXPECT_THROW(from_env.prepare(from_env.load("embedded:examples/softmax.tile"), args), Error);
  ::unsetenv("TILEJIT_COMPILE_TIMEOUT");
  for (int i = 0; i < 1200 && detached_work_running() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // The timed-out compile's thread joined, not left tearing down at the program's end (under
  // LeakSanitizer that crashed its tracer in CI: "Tracer caught signal 11").
  EXPECT_EQ(reap_detached_work(), 0);
}

// A kernel whose declared defaults break one of its constraints for some generic values
// (w4a16_tc: BK = 128 with groups of G = 32) runs with the valid configuration nearest the
// defaults, and says so, instead of failing; forced values are kept, and forced values no
// configuration satisfies still fail with the constraint named.
TEST(ResolveConfig, DefaultsThatBreakAConstraintGetTheNearestValidConfig) {
  TJ_REQUIRE_NVRTC();
  auto rt = cpu_runtime();
  KernelRef k = rt->load("embedded:workloads/dequant_gemm.tile", "w4a16_tc");
  const int64_t m = 3, n = 72, kk = 256;
  std::vector<Arg> args = {tensor(DType::F16, {m, kk}),      tensor(DType::I32, {n, kk / 8}),
                           tensor(DType::F16, {kk / 32, n}), tensor(DType::I32, {kk / 32, 9}),
                           tensor(DType::I32, {kk}),         tensor(DType::F16, {m, n})};
  std::string why;
  Config c = rt->resolve_config(k, args, {{"G", "32"}}, &why);
  EXPECT_EQ(c.at("BK"), "32");
  EXPECT_EQ(c.at("BN"), "64"); // the other declared defaults stay
  EXPECT_EQ(c.at("STEPS"), "4");
  EXPECT_EQ(c.at("WARPS"), "4");
  EXPECT_NE(why.find("breaks constraint"), std::string::npos) << why;
  EXPECT_NE(why.find("BK=32"), std::string::npos) << why;
  // With G = 128 the declared defaults hold and are used as they are.
  args[2] = tensor(DType::F16, {kk / 128, n});
  args[3] = tensor(DType::I32, {kk / 128, 9});
  c = rt->resolve_config(k, args, {{"G", "128"}}, &why);
  EXPECT_EQ(c.at("BK"), "128");
  EXPECT_EQ(why, "forced values, defaults for the rest");
  // A forced BK that no configuration allows is an error naming the constraint.
  args[2] = tensor(DType::F16, {kk / 32, n});
  args[3] = tensor(DType::I32, {kk / 32, 9});
  try {
    rt->prepare(k, args, [] {
      LaunchOptions lo;
      lo.config = {{"G", "32"}, {"BK", "64"}};
      return lo;
    }());
    ADD_FAILURE() << "BK=64 with G=32 was accepted";
  } catch (const ConstraintError& e) {
    EXPECT_NE(std::string(e.what()).find("G % BK"), std::string::npos) << e.what();
  }
}

// LaunchOptions::fallback (an op's measured tile for shapes nobody tuned): used in place of the
// kernel's defaults, after forced values; dropped, saying so, where it breaks a constraint; a
// name the kernel has no tunable of is an error naming it; and it is part of the launch's
// signature, so the same shape with another fallback is another prepared launch.
TEST(ResolveConfig, TheCallersFallbackReplacesTheDefaults) {
  TJ_REQUIRE_NVRTC();
  auto rt = cpu_runtime();
  KernelRef k = rt->load("embedded:examples/softmax.tile");
  std::vector<Arg> args = {tensor(DType::F32, {37, 300}), tensor(DType::F32, {37, 300}, 8192)};
  std::string why;
  Config c = rt->resolve_config(k, args, {}, &why, {{"BR", "4"}, {"WARPS", "8"}});
  EXPECT_EQ(c.at("BR"), "4");
  EXPECT_EQ(c.at("WARPS"), "8");
  EXPECT_EQ(c.at("BC"), "256"); // not in the fallback: the declared default
  EXPECT_NE(why.find("fallback (BR=4 WARPS=8)"), std::string::npos) << why;
  // Forced values win over the fallback.
  c = rt->resolve_config(k, args, {{"WARPS", "2"}}, &why, {{"BR", "4"}, {"WARPS", "8"}});
  EXPECT_EQ(c.at("BR"), "4");
  EXPECT_EQ(c.at("WARPS"), "2");
  // BR * BC >= WARPS * 32 broken (1 * 64 < 256): the defaults, and why says the fallback went.
  c = rt->resolve_config(k, args, {}, &why, {{"BR", "1"}, {"BC", "64"}, {"WARPS", "8"}});
  EXPECT_EQ(c.at("BR"), "2");
  EXPECT_EQ(c.at("BC"), "256");
  EXPECT_NE(why.find("breaks a constraint"), std::string::npos) << why;
  try {
    rt->resolve_config(k, args, {}, &why, {{"BM", "64"}});
    ADD_FAILURE() << "a fallback naming no tunable was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'BM'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("softmax"), std::string::npos) << e.what();
  }
  LaunchOptions lo;
  const PreparedLaunch& plain = rt->prepare(k, args, lo);
  lo.fallback = {{"BR", "4"}};
  const PreparedLaunch& wide = rt->prepare(k, args, lo);
  EXPECT_NE(&plain, &wide);
  EXPECT_EQ(plain.config.at("BR"), "2");
  EXPECT_EQ(wide.config.at("BR"), "4");
  EXPECT_EQ(&rt->prepare(k, args, lo), &wide);
}

} // namespace
} // namespace tilejit
