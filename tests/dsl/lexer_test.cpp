// Lexer: token kinds, spellings and locations; number forms; comments; lexical errors.
#include "dsl/lexer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tilejit::dsl {
namespace {

struct Lexed {
  std::vector<Token> tokens;
  std::vector<Diagnostic> diagnostics;
};

Lexed lex_text(const std::string& text) {
  DiagnosticSink sink;
  Lexed out;
  out.tokens = lex(make_source("t.tile", text), sink);
  out.diagnostics = sink.all();
  return out;
}

std::vector<TokenKind> kinds(const std::string& text) {
  std::vector<TokenKind> out;
  for (const Token& t : lex_text(text).tokens) out.push_back(t.kind);
  return out;
}

std::vector<std::string> spellings(const std::string& text) {
  std::vector<std::string> out;
  for (const Token& t : lex_text(text).tokens)
    if (t.kind != TokenKind::End) out.push_back(t.text);
  return out;
}

using K = TokenKind;

TEST(DslLexer, EmptyInputIsOneEndToken) {
  Lexed l = lex_text("");
  ASSERT_EQ(l.tokens.size(), 1u);
  EXPECT_EQ(l.tokens[0].kind, K::End);
  EXPECT_EQ(l.tokens[0].loc.line, 1);
  EXPECT_EQ(l.tokens[0].loc.col, 1);
  EXPECT_TRUE(l.diagnostics.empty());
}

TEST(DslLexer, Keywords) {
  EXPECT_EQ(
      kinds("kernel tune where require grid threads let frag shared scratch for in if "
            "else return true false None"),
      (std::vector<K>{K::KwKernel, K::KwTune, K::KwWhere, K::KwRequire, K::KwGrid, K::KwThreads,
                      K::KwLet, K::KwFrag, K::KwShared, K::KwScratch, K::KwFor, K::KwIn, K::KwIf,
                      K::KwElse, K::KwReturn, K::KwTrue, K::KwFalse, K::KwNone, K::End}));
}

TEST(DslLexer, KeywordsAreCaseSensitiveAndWhole) {
  // Loop kinds, builtins and dtypes are plain identifiers; only whole words are keywords.
  std::vector<K> expected(10, K::Identifier);
  expected.push_back(K::End);
  EXPECT_EQ(kinds("Kernel none kernels _let range serial pipelined load f16 cast"), expected);
}

TEST(DslLexer, Identifiers) {
  EXPECT_EQ(spellings("_ a_b x1 _0 T BM"),
            (std::vector<std::string>{"_", "a_b", "x1", "_0", "T", "BM"}));
}

TEST(DslLexer, PunctuationTakesTheLongestSpelling) {
  EXPECT_EQ(
      kinds("( ) [ ] { } , ; : .. | || & && ^ ~ ! = += -= *= /= == != < <= > >= << >> "
            "+ - * / %"),
      (std::vector<K>{
          K::LParen,     K::RParen,      K::LBracket,   K::RBracket,    K::LBrace,  K::RBrace,
          K::Comma,      K::Semicolon,   K::Colon,      K::DotDot,      K::Pipe,    K::PipePipe,
          K::Amp,        K::AmpAmp,      K::Caret,      K::Tilde,       K::Bang,    K::Assign,
          K::PlusAssign, K::MinusAssign, K::StarAssign, K::SlashAssign, K::EqEq,    K::NotEq,
          K::Less,       K::LessEq,      K::Greater,    K::GreaterEq,   K::Shl,     K::Shr,
          K::Plus,       K::Minus,       K::Star,       K::Slash,       K::Percent, K::End}));
  // No whitespace: still longest match, left to right.
  EXPECT_EQ(kinds("a<<=b"),
            (std::vector<K>{K::Identifier, K::Shl, K::Assign, K::Identifier, K::End}));
  EXPECT_EQ(kinds("|||"), (std::vector<K>{K::PipePipe, K::Pipe, K::End}));
  EXPECT_EQ(kinds("x[:,None]"), (std::vector<K>{K::Identifier, K::LBracket, K::Colon, K::Comma,
                                                K::KwNone, K::RBracket, K::End}));
  EXPECT_EQ(kinds("cast<f32>(x)>=0"),
            (std::vector<K>{K::Identifier, K::Less, K::Identifier, K::Greater, K::LParen,
                            K::Identifier, K::RParen, K::GreaterEq, K::IntLiteral, K::End}));
}

TEST(DslLexer, IntegerAndFloatForms) {
  Lexed l = lex_text("0 42 1.5 1. .5 1e-3 2E+2 7e5 1.5e3 3.e2");
  std::vector<std::pair<K, std::string>> got;
  for (const Token& t : l.tokens)
    if (t.kind != K::End) got.push_back({t.kind, t.text});
  EXPECT_EQ(got, (std::vector<std::pair<K, std::string>>{{K::IntLiteral, "0"},
                                                         {K::IntLiteral, "42"},
                                                         {K::FloatLiteral, "1.5"},
                                                         {K::FloatLiteral, "1."},
                                                         {K::FloatLiteral, ".5"},
                                                         {K::FloatLiteral, "1e-3"},
                                                         {K::FloatLiteral, "2E+2"},
                                                         {K::FloatLiteral, "7e5"},
                                                         {K::FloatLiteral, "1.5e3"},
                                                         {K::FloatLiteral, "3.e2"}}));
  EXPECT_TRUE(l.diagnostics.empty());
}

TEST(DslLexer, DotDotMakesARangeNotAFloat) {
  EXPECT_EQ(kinds("1..4"), (std::vector<K>{K::IntLiteral, K::DotDot, K::IntLiteral, K::End}));
  EXPECT_EQ(spellings("1..4"), (std::vector<std::string>{"1", "..", "4"}));
  EXPECT_EQ(kinds("16 .. 128"), (std::vector<K>{K::IntLiteral, K::DotDot, K::IntLiteral, K::End}));
  // Three dots: a range to a float literal (the parser then rejects it).
  EXPECT_EQ(kinds("1...5"), (std::vector<K>{K::IntLiteral, K::DotDot, K::FloatLiteral, K::End}));
  // A lone '.' is not a token.
  EXPECT_EQ(lex_text("a.b").diagnostics.size(), 1u);
}

TEST(DslLexer, ExponentWithoutDigitsIsASuffixError) {
  Lexed l = lex_text("3e + 1");
  ASSERT_EQ(l.diagnostics.size(), 1u);
  EXPECT_EQ(l.diagnostics[0].message, "invalid suffix 'e' on number '3'");
  EXPECT_EQ(l.diagnostics[0].loc.col, 2);
  // The number keeps its digits and lexing carries on after the bad suffix.
  EXPECT_EQ(kinds("3e + 1"), (std::vector<K>{K::IntLiteral, K::Plus, K::IntLiteral, K::End}));
}

TEST(DslLexer, InvalidNumberSuffix) {
  Lexed l = lex_text("12abc 4");
  ASSERT_EQ(l.diagnostics.size(), 1u);
  EXPECT_EQ(l.diagnostics[0].message, "invalid suffix 'a' on number '12'");
  EXPECT_EQ(l.diagnostics[0].loc.col, 3);
  ASSERT_EQ(l.tokens.size(), 3u);
  EXPECT_EQ(l.tokens[0].text, "12");
  EXPECT_EQ(l.tokens[1].text, "4");
  EXPECT_EQ(lex_text("1.5f").diagnostics.size(), 1u);
  EXPECT_EQ(lex_text("0x10").diagnostics.size(), 1u); // no hex literals
}

TEST(DslLexer, LineAndBlockComments) {
  EXPECT_EQ(kinds("a // b c\nd"), (std::vector<K>{K::Identifier, K::Identifier, K::End}));
  EXPECT_EQ(kinds("a /* b\n c */ d"), (std::vector<K>{K::Identifier, K::Identifier, K::End}));
  EXPECT_EQ(kinds("a/**/b"), (std::vector<K>{K::Identifier, K::Identifier, K::End}));
  // Block comments do not nest: the first */ ends the comment.
  EXPECT_EQ(kinds("/* /* */ x */"), (std::vector<K>{K::Identifier, K::Star, K::Slash, K::End}));
  // A comment at the end of the file without a newline.
  EXPECT_EQ(kinds("x // end"), (std::vector<K>{K::Identifier, K::End}));
  // '/' and '/=' are still operators.
  EXPECT_EQ(kinds("a / b /= c"), (std::vector<K>{K::Identifier, K::Slash, K::Identifier,
                                                 K::SlashAssign, K::Identifier, K::End}));
}

TEST(DslLexer, UnterminatedBlockComment) {
  Lexed l = lex_text("x\n  /* never closed\n\n");
  ASSERT_EQ(l.diagnostics.size(), 1u);
  EXPECT_EQ(l.diagnostics[0].message, "unterminated comment");
  EXPECT_EQ(l.diagnostics[0].loc.line, 2); // where the comment starts
  EXPECT_EQ(l.diagnostics[0].loc.col, 3);
  EXPECT_EQ(l.tokens.back().kind, K::End);
}

TEST(DslLexer, UnexpectedCharactersAreReportedAndSkipped) {
  Lexed l = lex_text("a @ b $\x01");
  ASSERT_EQ(l.diagnostics.size(), 3u);
  EXPECT_EQ(l.diagnostics[0].message, "unexpected character '@'");
  EXPECT_EQ(l.diagnostics[0].loc.col, 3);
  EXPECT_EQ(l.diagnostics[1].message, "unexpected character '$'");
  EXPECT_EQ(l.diagnostics[2].message, "unexpected character '\\x01'");
  EXPECT_EQ(kinds("a @ b"), (std::vector<K>{K::Identifier, K::Identifier, K::End}));
  EXPECT_EQ(lex_text("\xc3\xa9").diagnostics.size(), 2u); // UTF-8 bytes, one error each
}

TEST(DslLexer, LocationsCountLinesAndColumnsFromOne) {
  Lexed l = lex_text("kernel k\n  (x: f32)\r\n\tgrid");
  std::vector<std::tuple<std::string, int, int>> got;
  for (const Token& t : l.tokens) got.emplace_back(t.text, t.loc.line, t.loc.col);
  EXPECT_EQ(got, (std::vector<std::tuple<std::string, int, int>>{{"kernel", 1, 1},
                                                                 {"k", 1, 8},
                                                                 {"(", 2, 3},
                                                                 {"x", 2, 4},
                                                                 {":", 2, 5},
                                                                 {"f32", 2, 7},
                                                                 {")", 2, 10},
                                                                 {"grid", 3, 2},
                                                                 {"", 3, 6}}));
  EXPECT_EQ(l.tokens[0].loc.path(), "t.tile");
}

TEST(DslLexer, LocationsAfterMultiLineComments) {
  Lexed l = lex_text("/* one\ntwo\nthree */ x /* a */ y");
  ASSERT_EQ(l.tokens.size(), 3u);
  EXPECT_EQ(l.tokens[0].loc.line, 3);
  EXPECT_EQ(l.tokens[0].loc.col, 10);
  EXPECT_EQ(l.tokens[1].loc.line, 3);
  EXPECT_EQ(l.tokens[1].loc.col, 20);
}

TEST(DslLexer, TokenKindNames) {
  EXPECT_EQ(token_kind_name(K::End), "end of file");
  EXPECT_EQ(token_kind_name(K::Identifier), "identifier");
  EXPECT_EQ(token_kind_name(K::IntLiteral), "integer");
  EXPECT_EQ(token_kind_name(K::FloatLiteral), "number");
  EXPECT_EQ(token_kind_name(K::KwWhere), "'where'");
  EXPECT_EQ(token_kind_name(K::KwNone), "'None'");
  EXPECT_EQ(token_kind_name(K::DotDot), "'..'");
  EXPECT_EQ(token_kind_name(K::SlashAssign), "'/='");
  EXPECT_EQ(token_kind_name(K::Shr), "'>>'");
}

TEST(DslLexer, LexesTheExampleGemmHeader) {
  Lexed l = lex_text("kernel gemm<T: f16|bf16 = f16>(A: T[M, K])\n  tune BM: 16|32 = 16\n");
  EXPECT_TRUE(l.diagnostics.empty());
  EXPECT_EQ(spellings("kernel gemm<T: f16|bf16 = f16>(A: T[M, K])"),
            (std::vector<std::string>{"kernel", "gemm", "<",   "T", ":", "f16", "|",
                                      "bf16",   "=",    "f16", ">", "(", "A",   ":",
                                      "T",      "[",    "M",   ",", "K", "]",   ")"}));
}

} // namespace
} // namespace tilejit::dsl
