// Robustness of the middle and back end on the constructs of tests/data/semantics.tile
// (zip(...), outer-product gathers, 1|X dimensions, [N, 1] register tiles): random mutations of
// those kernels and of inputs built around them go through parse, check, every pass and the
// CUDA emitter. Every input must end in CUDA source or a diagnostic (dsl::CompileError, or a
// tilejit::Error such as a false `where`): never an internal error, a crash or another
// exception. Seeded (TILEJIT_TEST_SEED reproduces a run; the seed is printed on failure).
#include "compiler/cuda/cuda_emitter.h"
#include "compiler/pipeline.h"
#include "dsl/checker.h"
#include "dsl/diagnostics.h"
#include "dsl/parser.h"
#include "support/error.h"
#include "support/text.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>

namespace tilejit {
namespace {

uint32_t test_seed() {
  if (const char* s = std::getenv("TILEJIT_TEST_SEED"))
    return static_cast<uint32_t>(std::strtoul(s, nullptr, 10));
  // Printed now, not only on failure: a sanitizer that stops the process (UBSan's
  // halt_on_error) leaves no failure message, and the seed is the only way back to the input.
  const uint32_t seed = std::random_device{}();
  std::fprintf(stderr, "[random seed %u: TILEJIT_TEST_SEED=%u reproduces this run]\n", seed, seed);
  return seed;
}

enum class Outcome { Cuda, Diagnosed, Broken };

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

/// Parses `text` and compiles each kernel with its defaults (generics: their first choice),
/// debug mode on or off.
Outcome compile_all(const std::string& text, bool debug, std::string* what) {
  try {
    auto m = dsl::parse_text("fuzz.tile", text);
    dsl::check_module(*m);
    for (const auto& k : m->kernels) {
      Bindings given;
      for (const auto& g : k->generics)
        given[g.name] =
            g.choice.is_dtype ? g.choice.names.front() : std::to_string(g.choice.ints.front());
      CompileOptions o;
      o.debug_bounds = debug;
      try {
        auto ir = lower_to_ir(*k, complete_bindings(*k, given), o);
        (void)cuda::generate_cuda(*ir);
      } catch (const dsl::CompileError&) {
      } catch (const InternalError&) {
        throw;
      } catch (const Error&) { // a false `where`, a bad default
      }
    }
    return Outcome::Cuda;
  } catch (const dsl::CompileError&) {
    return Outcome::Diagnosed;
  } catch (const InternalError& e) {
    *what = str("internal error: ", e.what());
  } catch (const std::exception& e) {
    *what = e.what();
  }
  return Outcome::Broken;
}

const std::vector<std::string>& pieces() {
  static const std::vector<std::string> p = {
      "zip(",    "zip(a, b)",  "1|",      "|1",         "1|B",    "[:, None]", "[None, :]",
      ", ",      "iota(8)",    "iota(4)", "[0 : 8]",    ": 1]",   "f32[8, 1]", "f32[1, 8]",
      "mask = ", "other = -1", ")",       "(",          "]",      "[",         "gather(",
      "load(",   "copy(",      "store(",  "sum_to(x, ", "sum_to("};
  return p;
}

TEST(LoweringFuzz, MutatedSemanticsKernelsCompileOrDiagnose) {
  uint32_t seed = test_seed();
  std::mt19937 rng(seed);
  const std::string source = read_file(TILEJIT_SOURCE_DIR "/tests/data/semantics.tile");
  ASSERT_FALSE(source.empty());
  std::string why;
  ASSERT_EQ(compile_all(source, true, &why), Outcome::Cuda) << why;
  int failures = 0, compiled = 0;
  for (int n = 0; n < 300 && failures < 5; ++n) {
    std::string text = source;
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % text.size();
      size_t len = 1 + rng() % std::min<size_t>(12, text.size() - at);
      switch (rng() % 3) {
      case 0:
        text.erase(at, len);
        break;
      case 1:
        text.insert(at, pieces()[rng() % pieces().size()]);
        break;
      default:
        text.insert(at, text.substr(at, len));
        break;
      }
    }
    std::string what;
    Outcome o = compile_all(text, n % 2 == 1, &what);
    compiled += o == Outcome::Cuda;
    if (o == Outcome::Broken && failures++ < 5)
      ADD_FAILURE() << "seed " << seed << ": " << what << "\ninput:\n" << text;
  }
  // Most mutations land in comments or keep the program valid: the back end does run.
  EXPECT_GT(compiled, 0);
}

// Small programs around the new constructs, in every combination of a few parts.
TEST(LoweringFuzz, CombinationsOfIndexTilesCompileOrDiagnose) {
  const std::vector<std::string> dims = {"G, N", "1|B, N", "G, 1|N", "1|4, 8", "B|1, N", "1|1, N"};
  const std::vector<std::string> subs = {
      "a, b", "zip(a, b)",    "a, 0 : 8",      "zip(a, a), 0", "a, b[0 : 4]",
      "0, a", "zip(a, b), 0", "a[:, None], b", "zip(a), b",    "3, zip(a, b)"};
  const std::vector<std::string> uses = {"frag t = load(Z[$]);", "shared t = copy(Z[$]);",
                                         "store(Z[$], 1.0);", "frag t: f32[8, 1] = load(Z[$]);",
                                         "prefetch(Z[$]);"};
  int failures = 0, compiled = 0;
  for (const auto& d : dims)
    for (const auto& s : subs)
      for (const auto& u : uses) {
        std::string use = u;
        use.replace(use.find('$'), 1, s);
        std::string text = str("kernel k(Z: f32[", d, "], q: f32[B, N], y: f32[8, 8]) grid (1) {\n",
                               "  frag a = load(q[0, 0 : 8]) > 0.0;\n",
                               "  frag ai = cast<i32>(load(q[0, 0 : 8]));\n", "  let b = ai + 1;\n",
                               "  ", use, "\n", "  frag m: f32[8, 1] = 0;\n",
                               "  store(y[:, :], load(q[0 : 8, 0 : 8]) + m);\n}\n");
        // `a` is a bool tile on purpose in half of the cases: the error names it.
        for (const std::string& variant :
             {text, replaced(text, "frag a = load(q[0, 0 : 8]) > 0.0;", "frag a = ai;")}) {
          std::string what;
          for (bool debug : {false, true}) {
            Outcome o = compile_all(variant, debug, &what);
            compiled += o == Outcome::Cuda;
            if (o == Outcome::Broken && failures++ < 5)
              ADD_FAILURE() << what << "\ninput:\n" << variant;
          }
        }
      }
  // Outcome::Cuda also counts programs whose kernel was diagnosed after the front end.
  EXPECT_GT(compiled, 100);
}

} // namespace
} // namespace tilejit
