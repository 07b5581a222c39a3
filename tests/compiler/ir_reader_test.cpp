// The IR reader against the printer: every shipped kernel, at every stage, prints the same text
// after print -> read -> print, and running the next pass on the IR read back gives what the
// pipeline gives; malformed IR is a `file:line:col: error`, and random mutations of printed IR
// end in a kernel or that diagnostic, never in another exception (seeded: TILEJIT_TEST_SEED
// reproduces a run).
#include "compiler/ir_printer.h"
#include "compiler/ir_reader.h"
#include "compiler/kernel_library.h"
#include "compiler/pipeline.h"
#include "dsl/diagnostics.h"
#include "support/text.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>

namespace tilejit {
namespace {

/// Every generic at its default (else its first choice), every tunable at its default.
Bindings test_bindings(const dsl::Kernel& k) {
  Bindings b;
  for (const auto& g : k.generics)
    b[g.name] = g.choice.has_default ? (g.choice.is_dtype ? g.choice.default_name
                                                          : std::to_string(g.choice.default_int))
                : g.choice.is_dtype  ? g.choice.names.front()
                                     : std::to_string(g.choice.ints.front());
  return complete_bindings(k, b);
}

struct ShippedKernel {
  std::string path;
  LoadedModule module;
};

/// The shipped kernels: kernels_src (embedded) and tests/data.
std::vector<ShippedKernel> shipped() {
  std::vector<ShippedKernel> out;
  for (const auto& p : embedded_tile_paths()) out.push_back({p, load_embedded_tile(p)});
  for (const char* p : {"pipelines.tile", "semantics.tile", "shared_reuse.tile", "toy_chain.tile",
                        "trans_operands.tile"}) {
    std::string path = std::string(TILEJIT_SOURCE_DIR) + "/tests/data/" + p;
    out.push_back({path, load_tile_file(path)});
  }
  return out;
}

CompileOptions test_options(const dsl::Kernel& k) {
  CompileOptions o;
  o.index32 = true;
  for (const auto& p : k.params) {
    o.vector_aligned.insert(p.name);
    // Copies the TMA can make take it (and their pipelines the per-slot release).
    o.tma_params.insert(p.name);
  }
  return o;
}

TEST(IrReader, EveryShippedKernelRoundTripsAtEveryStage) {
  int checked = 0;
  for (const auto& sk : shipped())
    for (const auto& k : sk.module.module->kernels) {
      const Bindings b = test_bindings(*k);
      for (size_t i = 0; i < pass_names().size(); ++i) {
        const std::string& pass = pass_names()[i];
        SCOPED_TRACE(str(sk.path, " kernel ", k->name, " after ", pass));
        auto ir = lower_to_ir(*k, b, test_options(*k), pass);
        const std::string printed = ir::print_kernel(*ir);
        auto back = ir::read_kernel("roundtrip.ir", printed);
        ASSERT_EQ(ir::print_kernel(*back), printed);
        ++checked;
        // The next pass from the IR read back does what it does in the pipeline.
        if (i + 1 < pass_names().size()) {
          const std::string& next = pass_names()[i + 1];
          auto want = lower_to_ir(*k, b, test_options(*k), next);
          auto got = run_passes(std::move(back), next, next);
          EXPECT_EQ(ir::print_kernel(*got), ir::print_kernel(*want)) << "running " << next;
        }
      }
    }
  EXPECT_GT(checked, 100);
}

/// The error read_kernel gives for `text`, rendered ("" if it reads).
std::string read_error(const std::string& text) {
  try {
    ir::read_kernel("bad.ir", text);
  } catch (const dsl::CompileError& e) {
    return e.what();
  }
  return "";
}

const char* const kHeader =
    "// after insert-barriers\n"
    "kernel k\n"
    "  threads 128, shared memory 0 bytes, scratch 0 bytes, limit 232448 bytes, grid rank 1, "
    "target sm_90a, source \"k.tile\"\n"
    "  param x: f32[N, 64] aligned16\n";

TEST(IrReader, BadInputIsADiagnosticWithLineAndColumn) {
  struct Case {
    std::string body, error;
  };
  const std::vector<Case> cases = {
      {"  i32 a = (1 +\n",
       "bad.ir:5:15: error: expected an expression but got the end of the line"},
      {"  i32 a = b\n", "bad.ir:5:11: error: 'b' is not a declared variable or a scalar parameter"},
      {"  f99 a = 1\n", "bad.ir:5:3: error: 'f99' is not a declared variable"},
      {"  frag f32[4] a #blocked<1x4 vec=1 tc=3 nt=128> = 0.0\n",
       "bad.ir:5:18: error: tc=3 does not divide nt=128"},
      // A layout for another thread count than the kernel's (found by the mutation test:
      // `threads 928` above a layout of 128 threads was an internal error).
      {"  frag f32[4] a #blocked<1x4 vec=1 tc=4 nt=256> = 0.0\n",
       "bad.ir:5:18: error: nt=256 is not the kernel's 128 threads"},
      {"  frag f32[16, 16] a #mma_acc<32x16 warps=2x1> = 0.0\n",
       "bad.ir:5:23: error: warps=2x1 is not the kernel's 128 threads"},
      {"  for i in [0, 4) step 1 {\n",
       "bad.ir:6:1: error: expected '}' before the end of the text"},
      {"  }\n", "bad.ir:5:3: error: '}' without an open block"},
      {"  store y[0] <- 1\n", "bad.ir:5:9: error: 'y' is not a tensor parameter"},
      {"  store x[0] <- 1\n", "bad.ir:5:9: error: 'x' has 2 dimensions, not 1"},
      {"  async_wait 99\n", "bad.ir:5:14: error: the groups in flight 99 out of range [0, 64]"},
      {"  i32 a = 1  // lines 3\n",
       "bad.ir:5:14: error: expected '// line N' but got '// lines 3'"},
      {"  i32 a = \"s\"\n", "bad.ir:5:11: error: expected an expression but got a string"},
      {"  i32 a = 1 $\n", "bad.ir:5:13: error: unexpected character '$'"},
      // A pipeline's per-slot release: the slot, the parity and the waiting thread are named.
      {"  mbarrier_arrive @smem[8]\n",
       "bad.ir:5:27: error: expected '[' but got the end of the line"},
      {"  mbarrier_wait producer @smem[8][0]\n",
       "bad.ir:5:37: error: expected 'parity' but got the end of the line"},
      {"  mbarrier_wait consumer @smem[8][0] parity=0\n",
       "bad.ir:5:17: error: expected '@' but got 'consumer'"},
      // atomic_add alone is bulk (the bulk copy engine adds its rows).
      {"  f32 a = load.bulk(x[0, 0])\n",
       "bad.ir:5:20: error: only atomic_add is bulk, with no other suffix"},
      // copy's reuse=1 (a ring slot keeping its block) is printed only when set, and only a
      // copy takes it.
      {"  shared f32[8, 64] s = copy(x[0 :+ 8, 0 :+ 64], reuse=2)\n",
       "bad.ir:5:56: error: copy's reuse 2 out of range [1, 1]"},
      {"  f32 a = load(x[0, 0], reuse=1)\n", "bad.ir:5:25: error: expected mask= or other="},
      // A dot's options: shared_a (A by descriptor or in registers) is 0 or 1.
      {"  frag f32[16, 16] a #mma_acc<16x16 warps=1x4> = dot(1.0, 1.0, shared_a=2)\n",
       "bad.ir:5:73: error: dot's shared_a 2 out of range [0, 1]"},
  };
  for (const auto& c : cases) {
    std::string got = read_error(kHeader + c.body);
    EXPECT_TRUE(starts_with(got, c.error)) << "input:\n" << c.body << "got:\n" << got;
  }
  // MFMA accumulators are gfx90a's (wavefronts of 64): on a 32-wide target, or with waves that
  // do not make up the kernel's threads, the layout is an error at its name.
  EXPECT_TRUE(starts_with(
      read_error(std::string(kHeader) + "  frag f32[16, 16] a #mfma_acc<16x16 waves=1x4> = 0.0\n"),
      "bad.ir:5:23: error: an mfma_acc layout needs a target with wavefronts of 64 (gfx90a)"))
      << read_error(std::string(kHeader) +
                    "  frag f32[16, 16] a #mfma_acc<16x16 waves=1x4> = 0.0\n");
  std::string amd = kHeader;
  amd.replace(amd.find("sm_90a"), 6, "gfx90a");
  EXPECT_EQ(read_error(amd + "  frag f32[16, 16] a #mfma_acc<16x16 waves=1x2> = 0.0\n"), "");
  EXPECT_TRUE(
      starts_with(read_error(amd + "  frag f32[16, 16] a #mfma_acc<16x16 waves=2x2> = 0.0\n"),
                  "bad.ir:5:23: error: waves=2x2 is not the kernel's 128 threads"));
  EXPECT_TRUE(starts_with(read_error("kernel k\n  threads 128, target sm_1\n"),
                          "bad.ir:2:23: error: unknown target 'sm_1'"));
  EXPECT_TRUE(starts_with(read_error("threads 128\n"), "bad.ir:1:1: error: expected 'kernel'"));
  EXPECT_TRUE(
      starts_with(read_error("kernel k\n  threads 100\n"), "bad.ir:2:3: error: 100 threads"));
  // The error shows the line and a caret under the column.
  EXPECT_NE(read_error(std::string(kHeader) + "  i32 a = b\n").find("i32 a = b\n            ^"),
            std::string::npos);
}

uint32_t test_seed() {
  if (const char* s = std::getenv("TILEJIT_TEST_SEED"))
    return static_cast<uint32_t>(std::strtoul(s, nullptr, 10));
  // Printed now, not only on failure: a sanitizer that stops the process (UBSan's
  // halt_on_error) leaves no failure message, and the seed is the only way back to the input.
  const uint32_t seed = std::random_device{}();
  std::fprintf(stderr, "[random seed %u: TILEJIT_TEST_SEED=%u reproduces this run]\n", seed, seed);
  return seed;
}

TEST(IrReader, MutatedIrReadsOrIsDiagnosed) {
  const uint32_t seed = test_seed();
  SCOPED_TRACE(str("TILEJIT_TEST_SEED=", seed));
  std::mt19937 rng(seed);
  // Seeds: printed IR of the shipped kernels at a few stages.
  std::vector<std::string> seeds;
  for (const auto& sk : shipped())
    for (const auto& k : sk.module.module->kernels)
      for (const char* pass :
           {"specialise", "assign-layouts", "expand-pipelines", "insert-barriers"})
        seeds.push_back(
            ir::print_kernel(*lower_to_ir(*k, test_bindings(*k), test_options(*k), pass)));
  // And gfx90a's lowering of the dots (MfmaAcc layouts, waves) for the examples that have them.
  for (const char* path : {"examples/gemm.tile", "workloads/attention.tile"}) {
    LoadedModule m = load_embedded_tile(path);
    const dsl::Kernel& k = *m.module->kernels.front();
    CompileOptions o = test_options(k);
    o.arch = "gfx90a";
    o.smem_limit = 64 * 1024;
    seeds.push_back(ir::print_kernel(*lower_to_ir(k, test_bindings(k), o, "assign-layouts")));
    ASSERT_NE(seeds.back().find("mfma_acc<"), std::string::npos) << path;
    EXPECT_EQ(ir::print_kernel(*ir::read_kernel("amd.ir", seeds.back())), seeds.back()) << path;
  }
  const std::string alphabet = "()[]{}<>,:=+-*#@.\" \n0123456789abcdefxyz_|";
  for (int round = 0; round < 3000; ++round) {
    std::string text = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      size_t at = rng() % text.size();
      switch (rng() % 5) {
      case 0: // delete a few bytes
        text.erase(at, 1 + rng() % 8);
        break;
      case 1: // insert a byte
        text.insert(at, 1, alphabet[rng() % alphabet.size()]);
        break;
      case 2: { // duplicate a line
        size_t start = text.rfind('\n', at), end = text.find('\n', at);
        start = start == std::string::npos ? 0 : start + 1;
        if (end != std::string::npos) text.insert(start, text.substr(start, end - start + 1));
        break;
      }
      case 3: // replace a digit
        if (std::isdigit(static_cast<unsigned char>(text[at]))) text[at] = "0179"[rng() % 4];
        break;
      default: // truncate
        text.resize(at);
        break;
      }
    }
    try {
      auto k = ir::read_kernel("fuzz.ir", text);
      (void)ir::print_kernel(*k);
    } catch (const dsl::CompileError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "round " << round << ": " << typeid(e).name() << ": " << e.what()
                    << "\ninput:\n"
                    << text;
      return;
    }
  }
}

} // namespace
} // namespace tilejit
