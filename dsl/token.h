// Tokens of the tile DSL.
#pragma once

#include "dsl/source.h"

#include <string>

namespace tilejit::dsl {

enum class TokenKind {
  End,
  Identifier,
  IntLiteral,
  FloatLiteral,
  // keywords
  KwKernel,
  KwTune,
  KwWhere,
  KwRequire,
  KwGrid,
  KwThreads,
  KwLet,
  KwFrag,
  KwShared,
  KwScratch,
  KwFor,
  KwIn,
  KwIf,
  KwElse,
  KwReturn,
  KwTrue,
  KwFalse,
  KwNone,
  // punctuation
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Semicolon,
  Colon,
  DotDot,
  Pipe,
  PipePipe,
  Amp,
  AmpAmp,
  Caret,
  Tilde,
  Bang,
  Assign,
  PlusAssign,
  MinusAssign,
  StarAssign,
  SlashAssign,
  EqEq,
  NotEq,
  Less,
  LessEq,
  Greater,
  GreaterEq,
  Shl,
  Shr,
  Plus,
  Minus,
  Star,
  Slash,
  Percent,
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text; ///< exact spelling
  SourceLoc loc;
};

/// How a token kind is shown in diagnostics: "'('", "identifier", "end of file".
std::string token_kind_name(TokenKind kind);

} // namespace tilejit::dsl
