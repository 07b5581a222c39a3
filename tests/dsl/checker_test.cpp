// Checker: what it accepts (scoping, where names may appear, dims) and how it reports what it
// rejects. Most individual error messages are covered by diagnostics/*.tile.
#include "dsl/builtins.h"
#include "dsl/checker.h"
#include "dsl/parser.h"
#include "support/text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tilejit::dsl {
namespace {

/// Diagnostics of parse + check (empty when the text is accepted).
std::vector<Diagnostic> check_text(const std::string& text) {
  try {
    auto m = parse_text("c.tile", text);
    check_module(*m);
  } catch (const CompileError& e) {
    return e.diagnostics();
  }
  return {};
}

std::string messages(const std::vector<Diagnostic>& ds) {
  std::string out;
  for (const auto& d : ds) out += d.render() + "\n";
  return out;
}

#define EXPECT_ACCEPTED(text)                                                                      \
  do {                                                                                             \
    auto ds_ = check_text(text);                                                                   \
    EXPECT_TRUE(ds_.empty()) << messages(ds_);                                                     \
  } while (0)

std::string read_source(const std::string& relative) {
  return read_file(std::string(TILEJIT_SOURCE_DIR) + "/" + relative);
}

TEST(DslChecker, AcceptsTheShippedKernels) {
  for (const char* p : {"kernels_src/examples/gemm.tile", "kernels_src/examples/softmax.tile",
                        "kernels_src/examples/cumsum.tile", "kernels_src/examples/bucket_scan.tile",
                        "kernels_src/workloads/paged_sparse.tile"}) {
    std::string text = read_source(p);
    ASSERT_FALSE(text.empty()) << p;
    EXPECT_ACCEPTED(text);
  }
}

TEST(DslChecker, DimsAreDeclaredByTheirFirstUseAndShared) {
  // N and K are runtime sizes; a dim may name a generic or a tunable; dims may appear in any
  // parameter order and be used in require, grid and the body.
  EXPECT_ACCEPTED("kernel k<D: 64>(a: f32[N, D], b: f32[K, N], n: i32) tune BN: 16\n"
                  "  require N > 0, K == n grid (cdiv(N, BN), K) {\n"
                  "  let x = N + K + n + D + BN;\n"
                  "}");
  // A tensor dimension may be a literal.
  EXPECT_ACCEPTED("kernel k(a: f32[N, 4]) grid (1) {}");
}

TEST(DslChecker, ScratchShapesAreHostExpressions) {
  EXPECT_ACCEPTED("kernel k(a: f32[B, MAXK], s: i32, scratch p: f32[B, cdiv(MAXK, CH) + s] = 0)\n"
                  "  tune CH: 64 grid (1) {}");
}

TEST(DslChecker, WhereSeesOnlyCompileTimeNames) {
  EXPECT_ACCEPTED("kernel k<D: 64>(a: f32[N]) tune B: 16 where B * D * 2 <= SMEM, B <= D "
                  "grid (1) {}");
  auto ds = check_text("kernel k(a: f32[N]) where N > 0 grid (1) {}");
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].message, "runtime size 'N' cannot be used in a 'where' constraint (compile "
                           "time: generics and tunables only)");
  EXPECT_EQ(ds[0].loc.col, 27);
}

TEST(DslChecker, ThreadsSeesGenericsAndTunables) {
  EXPECT_ACCEPTED("kernel k<W: 2>() tune V: 1 grid (1) threads (W + V) * 32 {}");
  auto ds = check_text("kernel k(a: f32[N]) grid (1) threads N {}");
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].message, "runtime size 'N' cannot be used in 'threads' (compile time: "
                           "generics and tunables only)");
}

TEST(DslChecker, LocalsLiveInTheirBlock) {
  // Sibling scopes may reuse names (softmax has two `for c0` loops, each with its own `x`).
  EXPECT_ACCEPTED("kernel k(a: f32[N]) grid (1) {\n"
                  "  for i in range(0, 4) { let x = i; }\n"
                  "  for i in range(0, 4) { let x = i; }\n"
                  "  if true { let y = 1; } else { let y = 2; }\n"
                  "  { let z = 1; } { let z = 2; }\n"
                  "  let x = 3;\n"
                  "}");
  // ...but a local is gone after its block.
  auto ds = check_text("kernel k() grid (1) {\n  { let z = 1; }\n  let w = z;\n}");
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].message, "unknown name 'z'");
  EXPECT_EQ(ds[0].loc.line, 3);
  EXPECT_EQ(ds[0].loc.col, 11);
}

TEST(DslChecker, NothingShadowsAnything) {
  auto ds = check_text("kernel k<D: 64>(a: f32[N]) grid (1) {\n"
                       "  let D = 1;\n"
                       "  let N = 1;\n"
                       "  let x = 1;\n"
                       "  for i in range(0, 4) { let x = 2; }\n"
                       "  for x in range(0, 4) {}\n"
                       "}");
  ASSERT_EQ(ds.size(), 4u) << messages(ds);
  EXPECT_EQ(ds[0].message, "'D' is already declared as a generic parameter at line 1; pick "
                           "another name");
  EXPECT_EQ(ds[1].message, "'N' is already declared as a runtime size at line 1; pick another "
                           "name");
  EXPECT_EQ(ds[2].message, "'x' is already declared as a variable at line 4; pick another name");
  EXPECT_EQ(ds[2].loc.line, 5);
  EXPECT_EQ(ds[3].loc.line, 6);
}

TEST(DslChecker, ReportsEveryErrorOfEveryKernelAtOnce) {
  auto ds = check_text("kernel a() grid (1) { let x = y; let z = w; }\n"
                       "kernel b() { foo(1); }\n");
  ASSERT_EQ(ds.size(), 4u) << messages(ds);
  EXPECT_EQ(ds[0].message, "unknown name 'y'");
  EXPECT_EQ(ds[1].message, "unknown name 'w'");
  EXPECT_EQ(ds[2].message, "kernel 'b' needs a 'grid (...)' clause");
  EXPECT_EQ(ds[3].message, "unknown function 'foo'");
}

TEST(DslChecker, KernelNamesAreUnique) {
  auto ds = check_text("kernel a() grid (1) {}\nkernel a() grid (1) {}");
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].message, "kernel 'a' is defined twice");
  EXPECT_EQ(ds[0].loc.line, 2);
}

TEST(DslChecker, NoEffectStatementWarnsAlongsideErrors) {
  // The warning is carried with the errors of the same check.
  auto ds = check_text("kernel k() grid (1) {\n  1 + 2;\n  let a = nope;\n}");
  ASSERT_EQ(ds.size(), 2u) << messages(ds);
  EXPECT_EQ(ds[0].severity, Severity::Warning);
  EXPECT_EQ(ds[0].message, "expression statement has no effect");
  EXPECT_EQ(ds[1].severity, Severity::Error);
  EXPECT_NE(ds[0].render().find("c.tile:2:3: warning: expression statement has no effect"),
            std::string::npos);
}

TEST(DslChecker, ReturnsItsWarningsWhenThereIsNoError) {
  // Without an error nothing is thrown: the warnings come back for the caller to show.
  auto m = parse_text("c.tile", "kernel k() grid (1) {\n  1 + 2;\n}");
  std::vector<Diagnostic> ws = check_module(*m);
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(ws[0].severity, Severity::Warning);
  EXPECT_EQ(ws[0].message, "expression statement has no effect");
  EXPECT_EQ(ws[0].loc.line, 2);
  EXPECT_EQ(ws[0].loc.col, 3);
  auto clean = parse_text("c.tile", "kernel k(x: f32[N]) grid (1) { store(x[0], 1.0); }");
  EXPECT_TRUE(check_module(*clean).empty());
}

TEST(DslChecker, TensorsOnlyInsideAccesses) {
  EXPECT_ACCEPTED("kernel k(a: f32[N], b: f32[N]) grid (1) {\n"
                  "  frag x = load(a[0 : 8]);\n"
                  "  frag g = gather(a[iota(8)]);\n"
                  "  shared s = copy(a[0 : 8]);\n"
                  "  store(b[0 : 8], x, mask = iota(8) < N);\n"
                  "  atomic_add(b[0], 1.0);\n"
                  "  let w = load(a);\n" // a whole tensor is an access too
                  "}");
  auto ds = check_text("kernel k(a: f32[N]) grid (1) { let v = a[0] + a; }");
  ASSERT_EQ(ds.size(), 2u) << messages(ds);
  EXPECT_EQ(ds[0].message,
            "tensor 'a' can only be indexed inside load/gather/copy/store/atomic_add");
  EXPECT_EQ(ds[1].message,
            "tensor 'a' must be indexed inside load/copy/store/atomic_add, e.g. load(a[i, :])");
}

TEST(DslChecker, BuiltinTableAndDtypes) {
  for (const char* n :
       {"f16", "bf16", "f32", "f64", "i8", "u8", "i16", "i32", "u32", "i64", "bool"})
    EXPECT_TRUE(is_dtype_name(n)) << n;
  EXPECT_FALSE(is_dtype_name("f8"));
  EXPECT_FALSE(is_dtype_name("u16"));
  ASSERT_NE(find_builtin("gather"), nullptr);
  EXPECT_EQ(find_builtin("gather")->kind, BuiltinKind::Load); // gather is load
  EXPECT_EQ(find_builtin("nope"), nullptr);
  EXPECT_EQ(all_builtins().size(), 40u);
  for (const auto& b : all_builtins()) {
    EXPECT_LE(b.min_args, b.max_args) << b.name;
    EXPECT_EQ(find_builtin(b.name), &b) << b.name; // names are unique
    EXPECT_EQ(b.signature.substr(0, b.name.size()), b.name);
  }
}

TEST(DslChecker, EveryBuiltinNameIsReserved) {
  for (const auto& b : all_builtins()) {
    std::string name(b.name);
    auto ds = check_text("kernel k() grid (1) { let " + name + " = 1; }");
    ASSERT_EQ(ds.size(), 1u) << name;
    if (name == "where") // a keyword: the parser stops first
      EXPECT_EQ(ds[0].message, "expected a variable name but got 'where'");
    else
      EXPECT_EQ(ds[0].message, "'" + name + "' is a reserved name");
  }
}

} // namespace
} // namespace tilejit::dsl
