// Robustness of the front end: random token soups and random mutations of the shipped kernels
// (deletions, duplications, swaps, truncation at every byte) go through lex + parse + check.
// Every input must end in success or a dsl::CompileError: no crash, no hang, no other exception.
// Seeded (TILEJIT_TEST_SEED reproduces a run; the seed is printed on failure).
#include "dsl/ast_printer.h"
#include "dsl/checker.h"
#include "dsl/diagnostics.h"
#include "dsl/parser.h"
#include "support/text.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace tilejit::dsl {
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

std::string read_source(const std::string& relative) {
  return read_file(std::string(TILEJIT_SOURCE_DIR) + "/" + relative);
}

std::vector<std::string> example_sources() {
  std::vector<std::string> out;
  for (const char* p : {"kernels_src/examples/gemm.tile", "kernels_src/examples/softmax.tile",
                        "kernels_src/examples/cumsum.tile", "kernels_src/examples/bucket_scan.tile",
                        "kernels_src/workloads/paged_sparse.tile",
                        // zip(...), outer-product gathers, 1|X dimensions, [N, 1] tiles
                        "tests/data/semantics.tile",
                        // atomic_add(..., bulk = 1)
                        "tests/data/bulk_atomic.tile",
                        // dots split over warpgroups, a tile read as A and as B
                        "tests/data/wgmma_split.tile"}) {
    std::string text = read_source(p);
    EXPECT_FALSE(text.empty()) << "cannot read " << p;
    out.push_back(std::move(text));
  }
  return out;
}

/// What happened to one input; anything but Ok/Diagnosed fails the test.
enum class Outcome { Ok, Diagnosed, OtherException };

struct Result {
  Outcome outcome = Outcome::Ok;
  std::string what;
};

/// Parses, checks and prints `text`, as `tilejit inspect --stage ast` would.
Result front_end(const std::string& text) {
  Result r;
  try {
    auto m = parse_text("fuzz.tile", text);
    check_module(*m);
    (void)print_ast(*m);
  } catch (const CompileError& e) {
    r.outcome = Outcome::Diagnosed;
    // Every diagnostic must render with a location inside the input.
    for (const auto& d : e.diagnostics()) {
      if (!d.loc.known()) continue;
      if (d.loc.line < 1 || d.loc.col < 1) {
        r.outcome = Outcome::OtherException;
        r.what = "diagnostic with a bad location: " + d.render();
      }
      (void)d.render();
    }
  } catch (const std::exception& e) {
    r.outcome = Outcome::OtherException;
    r.what = e.what();
  } catch (...) {
    r.outcome = Outcome::OtherException;
    r.what = "unknown exception";
  }
  return r;
}

/// Runs one input and records a failure with the seed and the input.
class FuzzHarness {
public:
  explicit FuzzHarness(uint32_t seed) : seed_(seed) {}
  void run(const std::string& text, const char* how) {
    ++count_;
    Result r = front_end(text);
    if (r.outcome == Outcome::OtherException && failures_++ < 5)
      ADD_FAILURE() << how << " (seed " << seed_ << "): " << r.what << "\ninput:\n" << text;
    if (r.outcome == Outcome::Ok) ++accepted_;
  }
  int count() const { return count_; }
  int accepted() const { return accepted_; }

private:
  uint32_t seed_;
  int count_ = 0, accepted_ = 0, failures_ = 0;
};

/// Spellings the lexer knows, plus a few it does not.
const std::vector<std::string>& soup_words() {
  static const std::vector<std::string> words = {"kernel",
                                                 "tune",
                                                 "where",
                                                 "require",
                                                 "grid",
                                                 "threads",
                                                 "let",
                                                 "frag",
                                                 "shared",
                                                 "scratch",
                                                 "for",
                                                 "in",
                                                 "if",
                                                 "else",
                                                 "return",
                                                 "true",
                                                 "false",
                                                 "None",
                                                 "(",
                                                 ")",
                                                 "[",
                                                 "]",
                                                 "{",
                                                 "}",
                                                 ",",
                                                 ";",
                                                 ":",
                                                 "..",
                                                 "|",
                                                 "||",
                                                 "&",
                                                 "&&",
                                                 "^",
                                                 "~",
                                                 "!",
                                                 "=",
                                                 "+=",
                                                 "-=",
                                                 "*=",
                                                 "/=",
                                                 "==",
                                                 "!=",
                                                 "<",
                                                 "<=",
                                                 ">",
                                                 ">=",
                                                 "<<",
                                                 ">>",
                                                 "+",
                                                 "-",
                                                 "*",
                                                 "/",
                                                 "%",
                                                 "0",
                                                 "1",
                                                 "7",
                                                 "64",
                                                 "1.5",
                                                 "1e-3",
                                                 "1.",
                                                 "99999999999999999999",
                                                 "x",
                                                 "y",
                                                 "T",
                                                 "N",
                                                 "f16",
                                                 "f32",
                                                 "i32",
                                                 "bool",
                                                 "load",
                                                 "store",
                                                 "copy",
                                                 "gather",
                                                 "zip",
                                                 "1|",
                                                 "dot",
                                                 "trans",
                                                 "cast",
                                                 "iota",
                                                 "program_id",
                                                 "reduce_sum",
                                                 "cumsum",
                                                 "where",
                                                 "range",
                                                 "serial",
                                                 "pipelined",
                                                 "stages",
                                                 "producer",
                                                 "mask",
                                                 "other",
                                                 "axis",
                                                 "SMEM",
                                                 "inf",
                                                 "@",
                                                 "$",
                                                 "#",
                                                 "\"",
                                                 "/*",
                                                 "*/",
                                                 "//",
                                                 "\n",
                                                 "\t",
                                                 "\x01",
                                                 "\xff"};
  return words;
}

TEST(DslFuzz, TokenSoupsNeverCrash) {
  uint32_t seed = test_seed();
  std::mt19937 rng(seed);
  FuzzHarness h(seed);
  const auto& words = soup_words();
  std::uniform_int_distribution<size_t> pick(0, words.size() - 1);
  std::uniform_int_distribution<int> length(0, 60);
  for (int n = 0; n < 1500; ++n) {
    std::string text = n % 2 ? "kernel k(x: f32[N]) grid (1) {" : "";
    int len = length(rng);
    for (int i = 0; i < len; ++i) text += words[pick(rng)] + (rng() % 3 ? " " : "");
    h.run(text, "token soup");
  }
  EXPECT_EQ(h.count(), 1500);
}

TEST(DslFuzz, RandomBytesNeverCrash) {
  uint32_t seed = test_seed();
  std::mt19937 rng(seed);
  FuzzHarness h(seed);
  for (int n = 0; n < 500; ++n) {
    std::string text(rng() % 200, ' ');
    for (char& c : text) c = static_cast<char>(rng() % 256);
    h.run(text, "random bytes");
  }
}

TEST(DslFuzz, ExampleKernelsAreAccepted) {
  for (const auto& text : example_sources()) EXPECT_EQ(front_end(text).outcome, Outcome::Ok);
}

TEST(DslFuzz, TruncatedExamplesNeverCrash) {
  // Every prefix of every shipped kernel: the parser must survive unexpected end of input
  // anywhere (inside comments, numbers, headers, nested blocks).
  FuzzHarness h(0);
  for (const auto& text : example_sources())
    for (size_t n = 0; n <= text.size(); ++n) h.run(text.substr(0, n), "truncation");
  EXPECT_GT(h.count(), 5000);
}

TEST(DslFuzz, MutatedExamplesNeverCrash) {
  uint32_t seed = test_seed();
  std::mt19937 rng(seed);
  FuzzHarness h(seed);
  const auto sources = example_sources();
  const auto& words = soup_words();
  auto start = std::chrono::steady_clock::now();
  for (int n = 0; n < 3000; ++n) {
    std::string text = sources[rng() % sources.size()];
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      size_t at = rng() % text.size();
      size_t len = 1 + rng() % std::min<size_t>(40, text.size() - at);
      switch (rng() % 5) {
      case 0:
        text.erase(at, len);
        break; // deletion
      case 1:
        text.insert(at, text.substr(at, len));
        break; // duplication
      case 2:
        text.insert(at, words[rng() % words.size()]);
        break; // insertion
      case 3:
        text[at] = static_cast<char>(32 + rng() % 95);
        break;  // byte flip
      case 4: { // swap two spans
        size_t other = rng() % text.size();
        size_t l2 = std::min(len, text.size() - other);
        std::string a = text.substr(at, len), b = text.substr(other, l2);
        if (at + len <= other) {
          text.replace(other, l2, a);
          text.replace(at, len, b);
        }
        break;
      }
      }
    }
    h.run(text, "mutation");
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 20.0) << "the front end got slow on mutated input";
  // Most single mutations still leave something the parser must work through to the end.
  EXPECT_GT(h.count(), 0);
}

TEST(DslFuzz, DeepNestingIsAnErrorNotAStackOverflow) {
  std::string open(100000, '('), close(100000, ')');
  Result r = front_end("kernel k(x: f32[N]) grid (1) { let a = " + open + "1" + close + "; }");
  EXPECT_EQ(r.outcome, Outcome::Diagnosed) << r.what;
  std::string blocks;
  for (int i = 0; i < 5000; ++i) blocks += "{";
  r = front_end("kernel k(x: f32[N]) grid (1) " + blocks);
  EXPECT_EQ(r.outcome, Outcome::Diagnosed) << r.what;
  std::string unary(100000, '-');
  r = front_end("kernel k(x: f32[N]) grid (1) { let a = " + unary + "1; }");
  EXPECT_EQ(r.outcome, Outcome::Diagnosed) << r.what;
  // Long chains that the parser builds without nesting in the source text.
  std::string subs;
  for (int i = 0; i < 2000; ++i) subs += "[None]";
  r = front_end("kernel k(x: f32[N]) grid (1) { let a = b" + subs + "; }");
  EXPECT_NE(r.outcome, Outcome::OtherException) << r.what;
  std::string ifs;
  for (int i = 0; i < 2000; ++i) ifs += "if true {} else ";
  r = front_end("kernel k(x: f32[N]) grid (1) { " + ifs + "{} }");
  EXPECT_NE(r.outcome, Outcome::OtherException) << r.what;
}

// Subscript chains and `else if` chains are built by loops in the parser, but the checker,
// lowering and the AST destructor recurse once per link: each link counts as a nesting level.
TEST(DslFuzz, LongChainsAreAnErrorNotAStackOverflow) {
  std::string subs;
  for (int i = 0; i < 100000; ++i) subs += "[None]";
  Result r = front_end("kernel k(x: f32[N]) grid (1) { let a = b" + subs + "; }");
  EXPECT_EQ(r.outcome, Outcome::Diagnosed) << r.what;
  std::string ifs;
  for (int i = 0; i < 50000; ++i) ifs += "if true {} else ";
  r = front_end("kernel k(x: f32[N]) grid (1) { " + ifs + "{} }");
  EXPECT_EQ(r.outcome, Outcome::Diagnosed) << r.what;
}

} // namespace
} // namespace tilejit::dsl
