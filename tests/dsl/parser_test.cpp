// Parser: every header, clause and statement form, expression precedence and associativity
// (through dsl::expr_to_string), the AST printer, and error recovery.
#include "dsl/ast_printer.h"
#include "dsl/parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tilejit::dsl {
namespace {

std::unique_ptr<Module> parse(const std::string& text) {
  return parse_text("p.tile", text);
}

/// Parses `text` as the body of a kernel and returns its statements' owner.
std::unique_ptr<Module> parse_body(const std::string& body) {
  return parse("kernel k(x: f32[N]) grid (1) {\n" + body + "\n}");
}

/// The expression `e` as the AST printer shows it (binary operations parenthesised).
std::string expr(const std::string& e) {
  auto m = parse_body("let v = " + e + ";");
  return expr_to_string(*m->kernels[0]->body[0]->value);
}

/// The diagnostics of a text that must not parse.
std::vector<Diagnostic> errors_of(const std::string& text) {
  try {
    parse(text);
  } catch (const CompileError& e) {
    return e.diagnostics();
  }
  ADD_FAILURE() << "parsed without errors:\n" << text;
  return {};
}

/// The first diagnostic as "line:col: message".
std::string first_error(const std::string& text) {
  auto ds = errors_of(text);
  if (ds.empty()) return "";
  return std::to_string(ds[0].loc.line) + ":" + std::to_string(ds[0].loc.col) + ": " +
         ds[0].message;
}

// ---- kernel header ----------------------------------------------------------------------

TEST(DslParser, MinimalKernel) {
  auto m = parse("kernel k() grid (1) {}");
  ASSERT_EQ(m->kernels.size(), 1u);
  const Kernel& k = *m->kernels[0];
  EXPECT_EQ(k.name, "k");
  EXPECT_TRUE(k.generics.empty());
  EXPECT_TRUE(k.params.empty());
  EXPECT_TRUE(k.body.empty());
  EXPECT_EQ(k.grid.size(), 1u);
  EXPECT_EQ(k.threads, nullptr);
  EXPECT_EQ(k.loc.line, 1);
  EXPECT_EQ(k.loc.col, 1);
  EXPECT_EQ(m->file->path, "p.tile");
}

TEST(DslParser, SeveralKernelsInOneFile) {
  auto m = parse("kernel a() grid (1) {}\n// between\nkernel b() grid (2) {}");
  ASSERT_EQ(m->kernels.size(), 2u);
  EXPECT_EQ(m->kernels[0]->name, "a");
  EXPECT_EQ(m->kernels[1]->name, "b");
  EXPECT_EQ(m->kernels[1]->loc.line, 3);
}

TEST(DslParser, GenericsWithDtypeAndIntegerChoicesAndDefaults) {
  auto m = parse("kernel k<T: f16|bf16 = bf16, D: 64|128, G: 1..4 = 2, O: -2..1, U: f32>() "
                 "grid (1) {}");
  const Kernel& k = *m->kernels[0];
  ASSERT_EQ(k.generics.size(), 5u);
  const Choice& t = k.generics[0].choice;
  EXPECT_EQ(k.generics[0].name, "T");
  EXPECT_TRUE(t.is_dtype);
  EXPECT_EQ(t.names, (std::vector<std::string>{"f16", "bf16"}));
  EXPECT_TRUE(t.has_default);
  EXPECT_EQ(t.default_name, "bf16");
  const Choice& d = k.generics[1].choice;
  EXPECT_FALSE(d.is_dtype);
  EXPECT_EQ(d.ints, (std::vector<int64_t>{64, 128}));
  EXPECT_FALSE(d.has_default);
  const Choice& g = k.generics[2].choice;
  EXPECT_EQ(g.ints, (std::vector<int64_t>{1, 2, 3, 4})); // ranges are inclusive and expanded
  EXPECT_EQ(g.default_int, 2);
  EXPECT_EQ(k.generics[3].choice.ints, (std::vector<int64_t>{-2, -1, 0, 1}));
  EXPECT_EQ(k.generics[4].choice.names, (std::vector<std::string>{"f32"}));
  EXPECT_EQ(k.generics[1].loc.col, 30);
}

TEST(DslParser, MixedRangesAndValuesInOneChoice) {
  auto m = parse("kernel k() tune S: 1..3|8|16..17 grid (1) {}");
  EXPECT_EQ(m->kernels[0]->tunables[0].choice.ints, (std::vector<int64_t>{1, 2, 3, 8, 16, 17}));
}

TEST(DslParser, TensorScalarAndScratchParameters) {
  auto m = parse("kernel k<T: f16, D: 64>(q: T[B, HQ, D], n: i32, scale: f32,\n"
                 "    scratch part: f32[B, cdiv(N, 64) + 1], scratch c: i32[B] = 0) grid (1) {}");
  const Kernel& k = *m->kernels[0];
  ASSERT_EQ(k.params.size(), 5u);
  EXPECT_EQ(k.params[0].name, "q");
  EXPECT_EQ(type_to_string(k.params[0].type), "T[B, HQ, D]");
  EXPECT_TRUE(k.params[0].type.has_dims);
  EXPECT_FALSE(k.params[0].is_scratch);
  EXPECT_FALSE(k.params[1].type.has_dims); // scalar
  EXPECT_EQ(k.params[1].type.dtype, "i32");
  EXPECT_EQ(type_to_string(k.params[2].type), "f32");
  EXPECT_TRUE(k.params[3].is_scratch);
  EXPECT_FALSE(k.params[3].zero_init);
  EXPECT_EQ(type_to_string(k.params[3].type), "f32[B, (cdiv(N, 64) + 1)]");
  EXPECT_TRUE(k.params[4].is_scratch);
  EXPECT_TRUE(k.params[4].zero_init);
  EXPECT_EQ(k.params[3].loc.line, 2);
  EXPECT_EQ(k.params[3].loc.col, 5); // the 'scratch' keyword
}

TEST(DslParser, EmptyShapeParsesAsATensorWithNoDims) {
  auto m = parse("kernel k(x: f32[]) grid (1) {}");
  EXPECT_TRUE(m->kernels[0]->params[0].type.has_dims);
  EXPECT_TRUE(m->kernels[0]->params[0].type.dims.empty());
}

// ---- clauses ----------------------------------------------------------------------------

TEST(DslParser, Clauses) {
  auto m = parse("kernel k<D: 64>(x: f32[N, M])\n"
                 "  tune BN: 16|32 = 32, S: 1..4\n"
                 "  where BN <= D, S * BN <= SMEM\n"
                 "  require N % 4 == 0, M > 0\n"
                 "  grid (cdiv(N, BN), M, 1)\n"
                 "  threads S * 32\n"
                 "{}");
  const Kernel& k = *m->kernels[0];
  ASSERT_EQ(k.tunables.size(), 2u);
  EXPECT_EQ(k.tunables[0].name, "BN");
  EXPECT_EQ(k.tunables[0].choice.default_int, 32);
  EXPECT_EQ(k.tunables[1].choice.ints.size(), 4u);
  ASSERT_EQ(k.where.size(), 2u);
  EXPECT_EQ(expr_to_string(*k.where[1]), "((S * BN) <= SMEM)");
  ASSERT_EQ(k.require.size(), 2u);
  EXPECT_EQ(expr_to_string(*k.require[0]), "((N % 4) == 0)");
  ASSERT_EQ(k.grid.size(), 3u);
  EXPECT_EQ(expr_to_string(*k.grid[0]), "cdiv(N, BN)");
  EXPECT_EQ(k.grid_loc.line, 5);
  EXPECT_EQ(k.grid_loc.col, 3);
  ASSERT_NE(k.threads, nullptr);
  EXPECT_EQ(expr_to_string(*k.threads), "(S * 32)");
}

TEST(DslParser, ClausesComeInAnyOrderAndTuneWhereRequireRepeat) {
  auto m = parse("kernel k() threads 64 grid (1) where 1 < 2 tune A: 1 require 3 > 2 tune B: 2 "
                 "where 2 < 3 {}");
  const Kernel& k = *m->kernels[0];
  EXPECT_EQ(k.tunables.size(), 2u);
  EXPECT_EQ(k.where.size(), 2u);
  EXPECT_EQ(k.require.size(), 1u);
}

TEST(DslParser, GridAndThreadsAppearOnce) {
  EXPECT_EQ(first_error("kernel k() grid (1) grid (2) {}"), "1:21: a kernel has one 'grid' clause");
  EXPECT_EQ(first_error("kernel k() threads 32 grid (1) threads 64 {}"),
            "1:32: a kernel has one 'threads' clause");
}

// ---- statements -------------------------------------------------------------------------

TEST(DslParser, Declarations) {
  auto m = parse_body("let a = 1;\nfrag b: f32[16, 8] = 0;\nshared c: T[4] = load(x[0 : 4]);\n"
                      "frag d = a;");
  const auto& body = m->kernels[0]->body;
  ASSERT_EQ(body.size(), 4u);
  EXPECT_EQ(body[0]->kind, StmtKind::Let);
  EXPECT_EQ(body[0]->let_kind, LetKind::Let);
  EXPECT_EQ(body[0]->type, nullptr);
  EXPECT_EQ(body[1]->let_kind, LetKind::Frag);
  ASSERT_NE(body[1]->type, nullptr);
  EXPECT_EQ(type_to_string(*body[1]->type), "f32[16, 8]");
  EXPECT_EQ(body[2]->let_kind, LetKind::Shared);
  EXPECT_EQ(type_to_string(*body[2]->type), "T[4]");
  EXPECT_EQ(body[3]->type, nullptr);
  EXPECT_EQ(body[2]->loc.line, 4);
  EXPECT_EQ(body[2]->loc.col, 1);
}

TEST(DslParser, AssignmentAndCompoundAssignment) {
  auto m = parse_body("a = 1; a += 2; a -= 3; a *= 4; a /= 5;");
  const auto& body = m->kernels[0]->body;
  ASSERT_EQ(body.size(), 5u);
  EXPECT_EQ(body[0]->kind, StmtKind::Assign);
  EXPECT_FALSE(body[0]->compound);
  const BinaryOp ops[] = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div};
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(body[i + 1]->compound);
    EXPECT_EQ(body[i + 1]->assign_op, ops[i]);
    EXPECT_EQ(body[i + 1]->name, "a");
  }
}

TEST(DslParser, ForLoops) {
  auto m = parse_body("for i in range(0, 10) {}\n"
                      "for t in serial(0, T, 2) { let a = t; }\n"
                      "for j in pipelined(lo, hi, BN, stages = 3) {}\n"
                      "for r in range(10, 0, -1) {}");
  const auto& body = m->kernels[0]->body;
  ASSERT_EQ(body.size(), 4u);
  EXPECT_EQ(body[0]->kind, StmtKind::For);
  EXPECT_EQ(body[0]->name, "i");
  EXPECT_EQ(body[0]->range_kind, "range");
  EXPECT_EQ(body[0]->range_args.size(), 2u);
  EXPECT_EQ(body[1]->range_kind, "serial");
  EXPECT_EQ(body[1]->range_args.size(), 3u);
  EXPECT_EQ(body[1]->body.size(), 1u);
  EXPECT_EQ(body[2]->range_kind, "pipelined");
  ASSERT_EQ(body[2]->range_kwargs.size(), 1u);
  EXPECT_EQ(body[2]->range_kwargs[0].name, "stages");
  EXPECT_EQ(expr_to_string(*body[2]->range_kwargs[0].value), "3");
  EXPECT_EQ(body[2]->range_loc.line, 4);
  EXPECT_EQ(body[2]->range_loc.col, 10);
  EXPECT_EQ(expr_to_string(*body[3]->range_args[2]), "-1");
}

TEST(DslParser, IfElseAndElseIf) {
  auto m = parse_body("if a { return; }\n"
                      "if a { } else { let b = 1; }\n"
                      "if a { } else if b { } else { }");
  const auto& body = m->kernels[0]->body;
  ASSERT_EQ(body.size(), 3u);
  EXPECT_EQ(body[0]->kind, StmtKind::If);
  EXPECT_FALSE(body[0]->has_else);
  EXPECT_EQ(body[0]->body[0]->kind, StmtKind::Return);
  EXPECT_TRUE(body[1]->has_else);
  EXPECT_EQ(body[1]->else_body.size(), 1u);
  // `else if` is an else branch holding one if statement.
  ASSERT_EQ(body[2]->else_body.size(), 1u);
  EXPECT_EQ(body[2]->else_body[0]->kind, StmtKind::If);
  EXPECT_TRUE(body[2]->else_body[0]->has_else);
}

TEST(DslParser, ReturnBlockAndExpressionStatements) {
  auto m = parse_body("return;\n{ let a = 1; }\nstore(x[0], 1.0);\natomic_add(x[0], 1.0, mask = "
                      "true);\nfence();");
  const auto& body = m->kernels[0]->body;
  ASSERT_EQ(body.size(), 5u);
  EXPECT_EQ(body[0]->kind, StmtKind::Return);
  EXPECT_EQ(body[1]->kind, StmtKind::Block);
  EXPECT_EQ(body[1]->body.size(), 1u);
  for (int i = 2; i < 5; ++i) EXPECT_EQ(body[i]->kind, StmtKind::ExprStmt);
  EXPECT_EQ(expr_to_string(*body[3]->value), "atomic_add(x[0], 1.0, mask=true)");
  EXPECT_EQ(expr_to_string(*body[4]->value), "fence()");
}

TEST(DslParser, EmptyStatementIsAnError) {
  EXPECT_EQ(first_error("kernel k() grid (1) { ; }"), "1:23: expected an expression but got ';'");
}

// ---- expressions ------------------------------------------------------------------------

TEST(DslParser, Literals) {
  EXPECT_EQ(expr("42"), "42");
  EXPECT_EQ(expr("1.5"), "1.5");
  EXPECT_EQ(expr("1."), "1.0");
  EXPECT_EQ(expr("1e-3"), "0.001");
  EXPECT_EQ(expr("true"), "true");
  EXPECT_EQ(expr("false"), "false");
  EXPECT_EQ(expr("9223372036854775807"), "9223372036854775807");
  auto m = parse_body("let v = 2.5e1;");
  EXPECT_EQ(m->kernels[0]->body[0]->value->kind, ExprKind::FloatLit);
  EXPECT_DOUBLE_EQ(m->kernels[0]->body[0]->value->float_value, 25.0);
}

TEST(DslParser, PrecedenceTable) {
  // Lowest to highest: || && | ^ & (== !=) (< <= > >=) (<< >>) (+ -) (* / %) unary postfix.
  EXPECT_EQ(expr("a || b && c"), "(a || (b && c))");
  EXPECT_EQ(expr("a && b | c"), "(a && (b | c))");
  EXPECT_EQ(expr("a | b ^ c"), "(a | (b ^ c))");
  EXPECT_EQ(expr("a ^ b & c"), "(a ^ (b & c))");
  EXPECT_EQ(expr("a & b == c"), "(a & (b == c))");
  EXPECT_EQ(expr("a == b < c"), "(a == (b < c))");
  EXPECT_EQ(expr("a < b << c"), "(a < (b << c))");
  EXPECT_EQ(expr("a << b + c"), "(a << (b + c))");
  EXPECT_EQ(expr("a + b * c"), "(a + (b * c))");
  EXPECT_EQ(expr("a * -b"), "(a * -b)");
  EXPECT_EQ(expr("-a[0]"), "-a[0]");
  EXPECT_EQ(expr("a * b + c"), "((a * b) + c)");
  EXPECT_EQ(expr("a + b < c + d"), "((a + b) < (c + d))");
  EXPECT_EQ(expr("a < b && c >= d || !e"), "(((a < b) && (c >= d)) || !e)");
  EXPECT_EQ(expr("x & 15 << 4 | y"), "((x & (15 << 4)) | y)");
  EXPECT_EQ(expr("lo + iota(C) < hi && pos < seq"), "(((lo + iota(C)) < hi) && (pos < seq))");
}

TEST(DslParser, BinaryOperatorsAreLeftAssociative) {
  EXPECT_EQ(expr("a - b - c"), "((a - b) - c)");
  EXPECT_EQ(expr("a / b * c % d"), "(((a / b) * c) % d)");
  EXPECT_EQ(expr("a << b >> c"), "((a << b) >> c)");
  EXPECT_EQ(expr("a || b || c"), "((a || b) || c)");
  EXPECT_EQ(expr("a & b & c"), "((a & b) & c)");
}

TEST(DslParser, ParenthesesAndUnaryOperators) {
  EXPECT_EQ(expr("(a + b) * c"), "((a + b) * c)");
  EXPECT_EQ(expr("a - (b - c)"), "(a - (b - c))");
  EXPECT_EQ(expr("--a"), "--a");
  EXPECT_EQ(expr("!~-a"), "!~-a");
  EXPECT_EQ(expr("-(a + b)"), "-(a + b)");
  EXPECT_EQ(expr("-inf"), "-inf");
}

TEST(DslParser, ComparisonsDoNotChain) {
  EXPECT_EQ(first_error("kernel k() grid (1) { let v = a < b < c; }"),
            "1:37: comparisons do not chain; use '&&' (a < b && b < c)");
  EXPECT_EQ(first_error("kernel k() grid (1) { let v = a <= b > c; }"),
            "1:38: comparisons do not chain; use '&&' (a < b && b < c)");
  // Equality operators do not chain either.
  EXPECT_EQ(first_error("kernel k() grid (1) { let v = a == b != c; }"),
            "1:38: comparisons do not chain; use '&&' (a < b && b < c)");
  // Parenthesised, or across levels, is fine.
  EXPECT_EQ(expr("(a < b) == (c < d)"), "((a < b) == (c < d))");
  EXPECT_EQ(expr("(a < b) < c"), "((a < b) < c)");
}

TEST(DslParser, CallsWithKeywordArguments) {
  EXPECT_EQ(expr("load(x[i, a : a + 4], mask = m, other = -inf)"),
            "load(x[i, a : (a + 4)], mask=m, other=-inf)");
  EXPECT_EQ(expr("reduce_sum(p, axis = 1)"), "reduce_sum(p, axis=1)");
  EXPECT_EQ(expr("fence()"), "fence()");
  EXPECT_EQ(expr("f(g(h(1)), 2)"), "f(g(h(1)), 2)");
  EXPECT_EQ(first_error("kernel k() grid (1) { let v = f(a = 1, 2); }"),
            "1:40: positional argument after a keyword argument");
  EXPECT_EQ(first_error("kernel k() grid (1) { let v = f(a = 1, a = 2); }"),
            "1:40: keyword argument 'a' given twice");
}

TEST(DslParser, WhereIsAKeywordAndTheSelectFunction) {
  auto m = parse("kernel k<D: 64>() where D > 0 grid (1) { let v = where(c, a, b); }");
  EXPECT_EQ(m->kernels[0]->where.size(), 1u);
  const Expr& v = *m->kernels[0]->body[0]->value;
  EXPECT_EQ(v.kind, ExprKind::Call);
  EXPECT_EQ(v.name, "where");
  EXPECT_EQ(expr_to_string(v), "where(c, a, b)");
  // Inside a where clause, where(...) is the function again.
  auto m2 = parse("kernel k() where where(true, 1, 0) == 1 grid (1) {}");
  EXPECT_EQ(expr_to_string(*m2->kernels[0]->where[0]), "(where(true, 1, 0) == 1)");
  EXPECT_EQ(first_error("kernel k() grid (1) { let v = where; }"),
            "1:31: expected an expression but got 'where' (the select function is "
            "where(cond, a, b))");
}

TEST(DslParser, CastTakesATypeArgument) {
  EXPECT_EQ(expr("cast<f32>(x) + 1"), "(cast<f32>(x) + 1)");
  EXPECT_EQ(expr("cast<T>(a < b)"), "cast<T>((a < b))");
  EXPECT_EQ(expr("cast<f16[4]>(x)"), "cast<f16[4]>(x)"); // parsed; the checker rejects it
  // Without '<' it is an ordinary call (the checker asks for a dtype).
  EXPECT_EQ(expr("cast(x)"), "cast(x)");
  // Other names followed by '<' are comparisons.
  EXPECT_EQ(expr("a < b"), "(a < b)");
  EXPECT_EQ(first_error("kernel k() grid (1) { let v = cast<f32 x; }"),
            "1:40: expected '>' but got 'x' to close cast<...>");
}

TEST(DslParser, SubscriptsAndSlices) {
  EXPECT_EQ(expr("x[i, j]"), "x[i, j]");
  EXPECT_EQ(expr("x[m0 : m0 + BM, :]"), "x[m0 : (m0 + BM), :]");
  EXPECT_EQ(expr("l[:, None]"), "l[:, None]");
  EXPECT_EQ(expr("l[None, :]"), "l[None, :]");
  EXPECT_EQ(expr("valid[r : r + BN][None, :]"), "valid[r : (r + BN)][None, :]");
  EXPECT_EQ(expr("k[page[r : r + 8], slot[r : r + 8], h, :]"),
            "k[page[r : (r + 8)], slot[r : (r + 8)], h, :]");
  EXPECT_EQ(expr("(a + b)[:, None]"), "(a + b)[:, None]");
  auto m = parse_body("let v = x[a : b, :, None, 3];");
  const Expr& v = *m->kernels[0]->body[0]->value;
  ASSERT_EQ(v.kind, ExprKind::Index);
  ASSERT_EQ(v.index.size(), 4u);
  EXPECT_EQ(v.index[0].kind, IndexItem::Kind::Slice);
  EXPECT_EQ(v.index[1].kind, IndexItem::Kind::Full);
  EXPECT_EQ(v.index[2].kind, IndexItem::Kind::NewAxis);
  EXPECT_EQ(v.index[3].kind, IndexItem::Kind::Expr);
  EXPECT_EQ(v.index[1].loc.col, 18);
}

TEST(DslParser, SliceNeedsBothEnds) {
  EXPECT_EQ(first_error("kernel k() grid (1) { let v = x[a :]; }"),
            "1:36: a slice needs its end: write 'lo : lo + N'");
  EXPECT_EQ(first_error("kernel k() grid (1) { let v = x[: a]; }"),
            "1:35: a slice needs its start: write 'lo : hi' (or ':' for the whole axis)");
  EXPECT_EQ(first_error("kernel k() grid (1) { let v = x[]; }"),
            "1:33: expected an expression but got ']'");
}

TEST(DslParser, ExpressionLocationsPointAtTheOperator) {
  auto m = parse_body("let v = a + b * c;");
  const Expr& v = *m->kernels[0]->body[0]->value;
  EXPECT_EQ(v.loc.line, 2);
  EXPECT_EQ(v.loc.col, 11);      // '+'
  EXPECT_EQ(v.rhs->loc.col, 15); // '*'
  EXPECT_EQ(v.lhs->loc.col, 9);  // 'a'
}

TEST(DslParser, ChainsCountAsNestingLevels) {
  // Subscript chains, `else if` chains and operator chains are built by loops in the parser but
  // nest in the AST, which later passes walk recursively: each link is a level of the 200.
  auto repeat = [](const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
  };
  const std::string deep = "nesting deeper than 200 levels";
  parse_body("let a = x" + repeat("[None]", 150) + ";");
  parse_body(repeat("if true {} else ", 150) + "{}");
  parse_body("let a = 1" + repeat(" + 1", 150) + ";");
  EXPECT_NE(
      first_error("kernel k() grid (1) { let a = x" + repeat("[None]", 30000) + "; }").find(deep),
      std::string::npos);
  EXPECT_NE(
      first_error("kernel k() grid (1) { " + repeat("if true {} else ", 20000) + "{} }").find(deep),
      std::string::npos);
  EXPECT_NE(
      first_error("kernel k() grid (1) { let a = 1" + repeat(" * 2", 20000) + "; }").find(deep),
      std::string::npos);
  // The error points at the link that goes too deep, and parsing goes on after the statement.
  auto ds =
      errors_of("kernel k() grid (1) {\n  let a = x" + repeat("[None]", 300) + ";\n  let b = ;\n}");
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].loc.line, 2);
  EXPECT_EQ(ds[1].loc.line, 3);
}

TEST(DslParser, IntegerLiteralOutOfRange) {
  EXPECT_EQ(first_error("kernel k() grid (1) { let v = 9223372036854775808; }"),
            "1:31: integer '9223372036854775808' does not fit in 64 bits");
  EXPECT_EQ(first_error("kernel k() tune A: 99999999999999999999 grid (1) {}"),
            "1:20: integer '99999999999999999999' does not fit in 64 bits");
}

// ---- recovery ---------------------------------------------------------------------------

TEST(DslParser, RecoversAtStatementBoundariesAndReportsEveryError) {
  auto ds = errors_of("kernel k() grid (1) {\n"
                      "  let a = ;\n"
                      "  let b = 1;\n"
                      "  let c = 1 +;\n"
                      "  if x { let d = ; }\n"
                      "}\n");
  ASSERT_EQ(ds.size(), 3u);
  EXPECT_EQ(ds[0].loc.line, 2);
  EXPECT_EQ(ds[1].loc.line, 4);
  EXPECT_EQ(ds[2].loc.line, 5);
  EXPECT_EQ(ds[2].message, "expected an expression but got ';'");
}

TEST(DslParser, RecoversAtTheNextKernel) {
  auto ds = errors_of("kernel a( grid (1) {}\nkernel b() grid (1) { let = 1; }\n"
                      "kernel c() grid (1) {}");
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].loc.line, 1);
  EXPECT_EQ(ds[1].loc.line, 2);
  EXPECT_EQ(ds[1].message, "expected a variable name but got '='");
}

TEST(DslParser, TopLevelErrors) {
  EXPECT_EQ(first_error(""), "1:1: no kernel in this file");
  EXPECT_EQ(first_error("// only a comment\n"), "1:1: no kernel in this file");
  EXPECT_EQ(first_error("let x = 1;"), "1:1: expected 'kernel' but got 'let'");
  EXPECT_EQ(first_error("kernel k() grid (1) {"), "1:21: this '{' is never closed");
  EXPECT_EQ(first_error("kernel k() grid (1)"),
            "1:20: expected '{' but got end of file to open a block");
}

TEST(DslParser, DiagnosticsRenderWithTheLineAndACaret) {
  try {
    parse("kernel k() grid (1) {\n\tlet v = x[a :];\n}");
    FAIL() << "parsed";
  } catch (const CompileError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u);
    // Tabs in the source line are kept in the caret line so the caret lines up.
    EXPECT_EQ(e.diagnostics()[0].render(),
              "p.tile:2:15: error: a slice needs its end: write 'lo : lo + N'\n"
              "  \tlet v = x[a :];\n"
              "  \t             ^");
    EXPECT_EQ(std::string(e.what()), e.diagnostics()[0].render());
  }
}

// ---- AST printer ------------------------------------------------------------------------

TEST(DslAstPrinter, PrintsEveryNodeWithItsLocation) {
  auto m = parse("kernel k<T: f16|bf16 = f16, D: 1..3>(x: T[N, D], s: f32, scratch c: i32[N] "
                 "= 0)\n"
                 "  tune BN: 16|32 = 32\n"
                 "  where BN <= 64\n"
                 "  require N > 0\n"
                 "  grid (cdiv(N, BN))\n"
                 "  threads 64\n"
                 "{\n"
                 "  let i = program_id(0) * BN;\n"
                 "  frag a: f32[BN] = 0;\n"
                 "  for j in pipelined(0, N, BN, stages = 2) {\n"
                 "    a += cast<f32>(load(x[j : j + BN, 0], mask = iota(BN) < N));\n"
                 "  }\n"
                 "  if s > 0.5 { return; } else { store(x[i : i + BN, 0], a); }\n"
                 "  { fence(); }\n"
                 "}\n");
  EXPECT_EQ(print_ast(*m), "kernel k  @1:1\n"
                           "  generic T: f16|bf16 = f16\n"
                           "  generic D: 1|2|3\n"
                           "  param x: T[N, D]\n"
                           "  param s: f32\n"
                           "  param scratch c: i32[N] = 0\n"
                           "  tune BN: 16|32 = 32\n"
                           "  where (BN <= 64)\n"
                           "  require (N > 0)\n"
                           "  grid (cdiv(N, BN))\n"
                           "  threads 64\n"
                           "  body\n"
                           "    let i = (program_id(0) * BN)  @8:3\n"
                           "    frag a: f32[BN] = 0  @9:3\n"
                           "    for j in pipelined(0, N, BN, stages=2)  @10:3\n"
                           "      a += cast<f32>(load(x[j : (j + BN), 0], mask=(iota(BN) < N)))  "
                           "@11:5\n"
                           "    if (s > 0.5)  @13:3\n"
                           "      return  @13:16\n"
                           "    else\n"
                           "      store(x[i : (i + BN), 0], a)  @13:33\n"
                           "    block  @14:3\n"
                           "      fence()  @14:5\n");
}

TEST(DslAstPrinter, TypesAndFloatLiterals) {
  EXPECT_EQ(expr("2.0"), "2.0");
  EXPECT_EQ(expr("0.5 * 3"), "(0.5 * 3)");
  EXPECT_EQ(expr("1e30"), "1e+30");
  auto m = parse("kernel k(x: f32[4, N]) grid (1) {}");
  EXPECT_EQ(type_to_string(m->kernels[0]->params[0].type), "f32[4, N]");
}

} // namespace
} // namespace tilejit::dsl
