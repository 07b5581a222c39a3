#include "dsl/parser.h"

#include "dsl/lexer.h"

#include <cerrno>
#include <cstdlib>
#include <limits>

namespace tilejit::dsl {

const char* unary_op_spelling(UnaryOp op) {
  switch (op) {
  case UnaryOp::Neg:
    return "-";
  case UnaryOp::Not:
    return "!";
  case UnaryOp::BitNot:
    return "~";
  }
  return "?";
}

const char* binary_op_spelling(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add:
    return "+";
  case BinaryOp::Sub:
    return "-";
  case BinaryOp::Mul:
    return "*";
  case BinaryOp::Div:
    return "/";
  case BinaryOp::Mod:
    return "%";
  case BinaryOp::Lt:
    return "<";
  case BinaryOp::Le:
    return "<=";
  case BinaryOp::Gt:
    return ">";
  case BinaryOp::Ge:
    return ">=";
  case BinaryOp::Eq:
    return "==";
  case BinaryOp::Ne:
    return "!=";
  case BinaryOp::And:
    return "&&";
  case BinaryOp::Or:
    return "||";
  case BinaryOp::BitAnd:
    return "&";
  case BinaryOp::BitOr:
    return "|";
  case BinaryOp::BitXor:
    return "^";
  case BinaryOp::Shl:
    return "<<";
  case BinaryOp::Shr:
    return ">>";
  }
  return "?";
}

namespace {

/// Thrown inside the parser to unwind to the nearest recovery point; never escapes it.
struct ParseAbort {};

constexpr int kMaxDepth = 200; // nesting limit: deeper input gets an error, not a stack overflow

class Parser {
public:
  Parser(std::vector<Token> tokens, DiagnosticSink& sink)
      : tokens_(std::move(tokens)), sink_(sink) {}

  /// module ::= kernel*
  std::unique_ptr<Module> parse_module(const std::shared_ptr<const SourceFile>& file) {
    auto module = std::make_unique<Module>();
    module->file = file;
    while (!at(TokenKind::End)) {
      if (at(TokenKind::KwKernel)) {
        try {
          module->kernels.push_back(parse_kernel());
        } catch (ParseAbort&) {
          // Skip to the next top-level 'kernel'.
          while (!at(TokenKind::End) && !at(TokenKind::KwKernel)) advance();
        }
      } else {
        sink_.error(peek().loc, str("expected 'kernel' but got ", describe(peek())));
        advance();
        while (!at(TokenKind::End) && !at(TokenKind::KwKernel)) advance();
      }
    }
    if (module->kernels.empty() && !sink_.has_errors())
      sink_.error(SourceLoc{file, 1, 1}, "no kernel in this file");
    return module;
  }

private:
  // ---- token helpers ------------------------------------------------------------------
  const Token& peek(size_t ahead = 0) const {
    size_t i = std::min(pos_ + ahead, tokens_.size() - 1);
    return tokens_[i];
  }
  bool at(TokenKind k) const { return peek().kind == k; }
  const Token& advance() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool accept(TokenKind k) {
    if (!at(k)) return false;
    advance();
    return true;
  }
  static std::string describe(const Token& t) {
    if (t.kind == TokenKind::End) return "end of file";
    return str("'", t.text, "'");
  }
  [[noreturn]] void fail(const SourceLoc& loc, const std::string& message) {
    sink_.error(loc, message);
    throw ParseAbort{};
  }
  const Token& expect(TokenKind k, const char* context = nullptr) {
    if (!at(k)) {
      std::string msg = str("expected ", token_kind_name(k), " but got ", describe(peek()));
      if (context) msg += str(" ", context);
      fail(peek().loc, msg);
    }
    return advance();
  }
  std::string expect_identifier(const char* what) {
    if (!at(TokenKind::Identifier))
      fail(peek().loc, str("expected ", what, " but got ", describe(peek())));
    return advance().text;
  }

  /// Counts nesting levels for as long as it lives; `enter` adds one more level (a link of a
  /// chain that the parser builds in a loop but later passes walk recursively).
  struct DepthGuard {
    Parser& p;
    int levels = 0;
    explicit DepthGuard(Parser& parser) : p(parser) {}
    DepthGuard(Parser& parser, const SourceLoc& loc) : p(parser) { enter(loc); }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
    void enter(const SourceLoc& loc) {
      if (p.depth_ + 1 > kMaxDepth) p.fail(loc, str("nesting deeper than ", kMaxDepth, " levels"));
      ++p.depth_;
      ++levels;
    }
    ~DepthGuard() { p.depth_ -= levels; }
  };

  int64_t parse_int_text(const Token& t) {
    errno = 0;
    char* end = nullptr;
    unsigned long long v = std::strtoull(t.text.c_str(), &end, 10);
    if (errno == ERANGE || v > static_cast<unsigned long long>(std::numeric_limits<int64_t>::max()))
      fail(t.loc, str("integer '", t.text, "' does not fit in 64 bits"));
    return static_cast<int64_t>(v);
  }

  // ---- kernel header ------------------------------------------------------------------
  /// kernel ::= 'kernel' IDENT ['<' generic {',' generic} '>'] '(' [param {',' param}] ')'
  ///            {clause} block
  std::unique_ptr<Kernel> parse_kernel() {
    auto k = std::make_unique<Kernel>();
    k->loc = expect(TokenKind::KwKernel).loc;
    k->name = expect_identifier("a kernel name");
    if (accept(TokenKind::Less)) {
      do {
        k->generics.push_back(parse_generic());
      } while (accept(TokenKind::Comma));
      expect(TokenKind::Greater, "to close the generic parameters");
    }
    expect(TokenKind::LParen, "to open the parameter list");
    if (!at(TokenKind::RParen)) {
      do {
        k->params.push_back(parse_param());
      } while (accept(TokenKind::Comma));
    }
    expect(TokenKind::RParen, "to close the parameter list");
    parse_clauses(*k);
    k->body = parse_block();
    return k;
  }

  /// generic ::= IDENT ':' choice
  GenericParam parse_generic() {
    GenericParam g;
    g.loc = peek().loc;
    g.name = expect_identifier("a generic parameter name");
    expect(TokenKind::Colon, "after a generic parameter name");
    g.choice = parse_choice();
    return g;
  }

  /// choice ::= item {'|' item} ['=' value];  item ::= IDENT | INT | INT '..' INT
  Choice parse_choice() {
    Choice c;
    c.loc = peek().loc;
    do {
      if (at(TokenKind::Identifier)) {
        if (!c.ints.empty()) fail(peek().loc, "cannot mix dtype and integer choices");
        c.is_dtype = true;
        c.names.push_back(advance().text);
      } else if (at(TokenKind::IntLiteral) || at(TokenKind::Minus)) {
        if (c.is_dtype) fail(peek().loc, "cannot mix dtype and integer choices");
        int64_t lo = parse_signed_int();
        if (accept(TokenKind::DotDot)) {
          SourceLoc hi_loc = peek().loc;
          int64_t hi = parse_signed_int();
          if (hi < lo) fail(hi_loc, str("empty range ", lo, "..", hi));
          // Unsigned: hi - lo overflows int64 for ranges spanning zero near the limits.
          const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
          if (span >= 4096) fail(hi_loc, str("range ", lo, "..", hi, " has more than 4096 values"));
          // Counted, not `v <= hi; ++v`, which never ends when hi is the largest int64.
          for (uint64_t i = 0; i <= span; ++i) c.ints.push_back(lo + static_cast<int64_t>(i));
        } else {
          c.ints.push_back(lo);
        }
      } else {
        fail(peek().loc,
             str("expected a choice (a dtype or an integer) but got ", describe(peek())));
      }
    } while (accept(TokenKind::Pipe));
    if (accept(TokenKind::Assign)) {
      c.has_default = true;
      if (c.is_dtype) {
        c.default_name = expect_identifier("a default dtype");
      } else {
        c.default_int = parse_signed_int();
      }
    }
    return c;
  }

  int64_t parse_signed_int() {
    bool neg = accept(TokenKind::Minus);
    const Token& t = expect(TokenKind::IntLiteral);
    int64_t v = parse_int_text(t);
    return neg ? -v : v;
  }

  /// param ::= ['scratch'] IDENT ':' type ['=' '0']
  Param parse_param() {
    Param p;
    p.loc = peek().loc;
    p.is_scratch = accept(TokenKind::KwScratch);
    p.name = expect_identifier("a parameter name");
    expect(TokenKind::Colon, "after a parameter name");
    p.type = parse_type();
    if (accept(TokenKind::Assign)) {
      const Token& t = peek();
      if (!p.is_scratch) fail(t.loc, "only scratch tensors take an initial value ('= 0')");
      if (!(t.kind == TokenKind::IntLiteral && t.text == "0"))
        fail(t.loc, str("a scratch tensor can only be initialised to 0, not ", describe(t)));
      advance();
      p.zero_init = true;
    }
    return p;
  }

  /// type ::= IDENT ['[' expr {',' expr} ']']
  TypeExpr parse_type() {
    TypeExpr t;
    t.loc = peek().loc;
    t.dtype = expect_identifier("a dtype");
    if (accept(TokenKind::LBracket)) {
      t.has_dims = true;
      if (!at(TokenKind::RBracket)) {
        do {
          t.dims.push_back(parse_expr());
        } while (accept(TokenKind::Comma));
      }
      expect(TokenKind::RBracket, "to close the shape");
    }
    return t;
  }

  /// clause ::= 'tune' tunable {',' tunable} | 'where' expr {',' expr}
  ///          | 'require' expr {',' expr} | 'grid' '(' expr {',' expr} ')' | 'threads' expr
  ///          | 'cluster' '(' expr {',' expr} ')'
  /// ('cluster' is not a keyword: only here, where an identifier cannot appear, is it one.)
  void parse_clauses(Kernel& k) {
    while (true) {
      if (accept(TokenKind::KwTune)) {
        do {
          Tunable t;
          t.loc = peek().loc;
          t.name = expect_identifier("a tunable name");
          expect(TokenKind::Colon, "after a tunable name");
          t.choice = parse_choice();
          k.tunables.push_back(std::move(t));
        } while (accept(TokenKind::Comma));
      } else if (accept(TokenKind::KwWhere)) {
        do {
          k.where.push_back(parse_expr());
        } while (accept(TokenKind::Comma));
      } else if (accept(TokenKind::KwRequire)) {
        do {
          k.require.push_back(parse_expr());
        } while (accept(TokenKind::Comma));
      } else if (at(TokenKind::KwGrid)) {
        k.grid_loc = advance().loc;
        if (!k.grid.empty()) fail(k.grid_loc, "a kernel has one 'grid' clause");
        expect(TokenKind::LParen, "after 'grid'");
        do {
          k.grid.push_back(parse_expr());
        } while (accept(TokenKind::Comma));
        expect(TokenKind::RParen, "to close the grid");
      } else if (at(TokenKind::KwThreads)) {
        SourceLoc loc = advance().loc;
        if (k.threads) fail(loc, "a kernel has one 'threads' clause");
        k.threads = parse_expr();
      } else if (at(TokenKind::Identifier) && peek().text == "blocks_per_sm") {
        SourceLoc loc = advance().loc;
        if (k.blocks_per_sm) fail(loc, "a kernel has one 'blocks_per_sm' clause");
        k.blocks_per_sm = parse_expr();
      } else if (at(TokenKind::Identifier) && peek().text == "cluster") {
        k.cluster_loc = advance().loc;
        if (!k.cluster.empty()) fail(k.cluster_loc, "a kernel has one 'cluster' clause");
        expect(TokenKind::LParen, "after 'cluster'");
        do {
          k.cluster.push_back(parse_expr());
        } while (accept(TokenKind::Comma));
        expect(TokenKind::RParen, "to close the cluster");
      } else {
        return;
      }
    }
  }

  // ---- statements ---------------------------------------------------------------------
  /// block ::= '{' {stmt} '}'
  std::vector<StmtPtr> parse_block() {
    SourceLoc open = expect(TokenKind::LBrace, "to open a block").loc;
    DepthGuard guard(*this, open);
    std::vector<StmtPtr> out;
    while (!at(TokenKind::RBrace)) {
      if (at(TokenKind::End)) fail(open, "this '{' is never closed");
      try {
        out.push_back(parse_stmt());
      } catch (ParseAbort&) {
        recover();
      }
    }
    advance();
    return out;
  }

  /// Skips to just after the next ';' or to the next '}' at this nesting level.
  void recover() {
    int depth = 0;
    while (!at(TokenKind::End)) {
      if (at(TokenKind::LBrace)) ++depth;
      if (at(TokenKind::RBrace)) {
        if (depth == 0) return;
        --depth;
      }
      if (at(TokenKind::Semicolon) && depth == 0) {
        advance();
        return;
      }
      advance();
    }
  }

  /// stmt ::= ('let'|'frag'|'shared') IDENT [':' type] '=' expr ';'
  ///        | IDENT ('='|'+='|'-='|'*='|'/=') expr ';'
  ///        | 'for' IDENT 'in' IDENT '(' args ')' block
  ///        | 'if' expr block ['else' (block | if_stmt)]
  ///        | 'return' ';' | block | expr ';'
  StmtPtr parse_stmt() {
    auto s = std::make_unique<Stmt>(Stmt{});
    s->loc = peek().loc;
    switch (peek().kind) {
    case TokenKind::KwLet:
    case TokenKind::KwFrag:
    case TokenKind::KwShared: {
      TokenKind k = advance().kind;
      s->kind = StmtKind::Let;
      s->let_kind = k == TokenKind::KwLet    ? LetKind::Let
                    : k == TokenKind::KwFrag ? LetKind::Frag
                                             : LetKind::Shared;
      s->name = expect_identifier("a variable name");
      if (accept(TokenKind::Colon)) s->type = std::make_unique<TypeExpr>(parse_type());
      expect(TokenKind::Assign, "in a declaration (every variable starts with a value)");
      s->value = parse_expr();
      expect(TokenKind::Semicolon, "after a declaration");
      return s;
    }
    case TokenKind::KwFor: {
      advance();
      s->kind = StmtKind::For;
      s->name = expect_identifier("a loop variable");
      expect(TokenKind::KwIn, "after the loop variable");
      s->range_loc = peek().loc;
      s->range_kind = expect_identifier("'range', 'serial' or 'pipelined'");
      expect(TokenKind::LParen, "after the loop kind");
      parse_args(s->range_args, s->range_kwargs);
      s->body = parse_block();
      return s;
    }
    case TokenKind::KwIf: {
      advance();
      s->kind = StmtKind::If;
      s->value = parse_expr();
      s->body = parse_block();
      if (accept(TokenKind::KwElse)) {
        s->has_else = true;
        if (at(TokenKind::KwIf)) {
          // `else if` nests an if statement in the else branch: a level like a block.
          DepthGuard guard(*this, peek().loc);
          s->else_body.push_back(parse_stmt());
        } else {
          s->else_body = parse_block();
        }
      }
      return s;
    }
    case TokenKind::KwReturn:
      advance();
      s->kind = StmtKind::Return;
      expect(TokenKind::Semicolon, "after 'return'");
      return s;
    case TokenKind::LBrace:
      s->kind = StmtKind::Block;
      s->body = parse_block();
      return s;
    default:
      break;
    }
    if (at(TokenKind::Identifier)) {
      TokenKind next = peek(1).kind;
      bool plain = next == TokenKind::Assign;
      bool compound = next == TokenKind::PlusAssign || next == TokenKind::MinusAssign ||
                      next == TokenKind::StarAssign || next == TokenKind::SlashAssign;
      if (plain || compound) {
        s->kind = StmtKind::Assign;
        s->name = advance().text;
        TokenKind op = advance().kind;
        s->compound = compound;
        s->assign_op = op == TokenKind::PlusAssign    ? BinaryOp::Add
                       : op == TokenKind::MinusAssign ? BinaryOp::Sub
                       : op == TokenKind::StarAssign  ? BinaryOp::Mul
                                                      : BinaryOp::Div;
        s->value = parse_expr();
        expect(TokenKind::Semicolon, "after an assignment");
        return s;
      }
    }
    s->kind = StmtKind::ExprStmt;
    s->value = parse_expr();
    if (at(TokenKind::Assign))
      fail(peek().loc, "only a variable can be assigned; write to a tensor with store(...)");
    expect(TokenKind::Semicolon, "after an expression");
    return s;
  }

  // ---- expressions --------------------------------------------------------------------
  ExprPtr make(ExprKind k, const SourceLoc& loc) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->loc = loc;
    return e;
  }

  ExprPtr binary(BinaryOp op, ExprPtr l, ExprPtr r, const SourceLoc& loc) {
    auto e = make(ExprKind::Binary, loc);
    e->binary_op = op;
    e->lhs = std::move(l);
    e->rhs = std::move(r);
    return e;
  }

  /// expr ::= or_expr
  ExprPtr parse_expr() {
    DepthGuard guard(*this, peek().loc);
    return parse_binary(0);
  }

  /// Precedence climbing over the table below (lowest first); all binary operators are
  /// left-associative. Comparisons do not chain: `a < b < c` is an error.
  ExprPtr parse_binary(int level) {
    struct Level {
      std::vector<std::pair<TokenKind, BinaryOp>> ops;
    };
    static const std::vector<Level> levels = {
        {{{TokenKind::PipePipe, BinaryOp::Or}}},
        {{{TokenKind::AmpAmp, BinaryOp::And}}},
        {{{TokenKind::Pipe, BinaryOp::BitOr}}},
        {{{TokenKind::Caret, BinaryOp::BitXor}}},
        {{{TokenKind::Amp, BinaryOp::BitAnd}}},
        {{{TokenKind::EqEq, BinaryOp::Eq}, {TokenKind::NotEq, BinaryOp::Ne}}},
        {{{TokenKind::Less, BinaryOp::Lt},
          {TokenKind::LessEq, BinaryOp::Le},
          {TokenKind::Greater, BinaryOp::Gt},
          {TokenKind::GreaterEq, BinaryOp::Ge}}},
        {{{TokenKind::Shl, BinaryOp::Shl}, {TokenKind::Shr, BinaryOp::Shr}}},
        {{{TokenKind::Plus, BinaryOp::Add}, {TokenKind::Minus, BinaryOp::Sub}}},
        {{{TokenKind::Star, BinaryOp::Mul},
          {TokenKind::Slash, BinaryOp::Div},
          {TokenKind::Percent, BinaryOp::Mod}}},
    };
    if (level == static_cast<int>(levels.size())) return parse_unary();
    ExprPtr lhs = parse_binary(level + 1);
    bool comparison = level == 5 || level == 6;
    int chained = 0;
    // `a + b + c + ...` is parsed by this loop but nests to the left: each operator is a level.
    DepthGuard links(*this);
    while (true) {
      const Token& t = peek();
      bool matched = false;
      for (const auto& [tk, op] : levels[level].ops) {
        if (t.kind == tk) {
          if (comparison && chained++ > 0)
            fail(t.loc, "comparisons do not chain; use '&&' (a < b && b < c)");
          links.enter(t.loc);
          SourceLoc loc = advance().loc;
          ExprPtr rhs = parse_binary(level + 1);
          lhs = binary(op, std::move(lhs), std::move(rhs), loc);
          matched = true;
          break;
        }
      }
      if (!matched) return lhs;
    }
  }

  /// unary ::= ('-' | '!' | '~') unary | postfix
  ExprPtr parse_unary() {
    DepthGuard guard(*this, peek().loc);
    UnaryOp op;
    if (at(TokenKind::Minus))
      op = UnaryOp::Neg;
    else if (at(TokenKind::Bang))
      op = UnaryOp::Not;
    else if (at(TokenKind::Tilde))
      op = UnaryOp::BitNot;
    else
      return parse_postfix();
    SourceLoc loc = advance().loc;
    auto e = make(ExprKind::Unary, loc);
    e->unary_op = op;
    e->lhs = parse_unary();
    return e;
  }

  /// postfix ::= primary {'[' index_item {',' index_item} ']'}
  ExprPtr parse_postfix() {
    ExprPtr e = parse_primary();
    // Each subscript wraps the expression once more: a level of nesting, like a parenthesis.
    DepthGuard links(*this);
    while (at(TokenKind::LBracket)) {
      links.enter(peek().loc);
      SourceLoc loc = advance().loc;
      auto idx = make(ExprKind::Index, loc);
      idx->lhs = std::move(e);
      do {
        idx->index.push_back(parse_index_item());
      } while (accept(TokenKind::Comma));
      expect(TokenKind::RBracket, "to close the subscript");
      e = std::move(idx);
    }
    return e;
  }

  /// index_item ::= 'None' | ':' | expr | expr ':' expr
  IndexItem parse_index_item() {
    IndexItem item;
    item.loc = peek().loc;
    if (accept(TokenKind::KwNone)) {
      item.kind = IndexItem::Kind::NewAxis;
      return item;
    }
    if (at(TokenKind::Colon)) {
      advance();
      if (!at(TokenKind::Comma) && !at(TokenKind::RBracket))
        fail(peek().loc, "a slice needs its start: write 'lo : hi' (or ':' for the whole axis)");
      item.kind = IndexItem::Kind::Full;
      return item;
    }
    ExprPtr first = parse_expr();
    if (accept(TokenKind::Colon)) {
      if (at(TokenKind::Comma) || at(TokenKind::RBracket))
        fail(peek().loc, "a slice needs its end: write 'lo : lo + N'");
      item.kind = IndexItem::Kind::Slice;
      item.start = std::move(first);
      item.stop = parse_expr();
      return item;
    }
    item.kind = IndexItem::Kind::Expr;
    item.expr = std::move(first);
    return item;
  }

  /// args ::= [arg {',' arg}] ')';  arg ::= expr | IDENT '=' expr
  void parse_args(std::vector<ExprPtr>& args, std::vector<KeywordArg>& kwargs) {
    if (accept(TokenKind::RParen)) return;
    do {
      if (at(TokenKind::Identifier) && peek(1).kind == TokenKind::Assign) {
        KeywordArg kw;
        kw.loc = peek().loc;
        kw.name = advance().text;
        advance();
        for (const auto& other : kwargs)
          if (other.name == kw.name)
            fail(kw.loc, str("keyword argument '", kw.name, "' given twice"));
        kw.value = parse_expr();
        kwargs.push_back(std::move(kw));
      } else {
        if (!kwargs.empty()) fail(peek().loc, "positional argument after a keyword argument");
        args.push_back(parse_expr());
      }
    } while (accept(TokenKind::Comma));
    expect(TokenKind::RParen, "to close the argument list");
  }

  /// primary ::= INT | FLOAT | 'true' | 'false' | IDENT | IDENT ['<' type '>'] '(' args
  ///           | '(' expr ')'
  ExprPtr parse_primary() {
    const Token& t = peek();
    switch (t.kind) {
    case TokenKind::IntLiteral: {
      auto e = make(ExprKind::IntLit, t.loc);
      e->int_value = parse_int_text(t);
      advance();
      return e;
    }
    case TokenKind::FloatLiteral: {
      auto e = make(ExprKind::FloatLit, t.loc);
      e->float_value = std::strtod(t.text.c_str(), nullptr);
      advance();
      return e;
    }
    case TokenKind::KwTrue:
    case TokenKind::KwFalse: {
      auto e = make(ExprKind::BoolLit, t.loc);
      e->bool_value = t.kind == TokenKind::KwTrue;
      advance();
      return e;
    }
    case TokenKind::KwWhere:
      // `where` introduces constraints after the header; inside expressions it is the
      // select function where(cond, a, b).
      if (peek(1).kind == TokenKind::LParen) {
        SourceLoc loc = advance().loc;
        advance();
        auto e = make(ExprKind::Call, loc);
        e->name = "where";
        parse_args(e->args, e->kwargs);
        return e;
      }
      fail(t.loc,
           "expected an expression but got 'where' (the select function is where(cond, a, b))");
    case TokenKind::LParen: {
      advance();
      ExprPtr e = parse_expr();
      expect(TokenKind::RParen, "to close '('");
      return e;
    }
    case TokenKind::Identifier: {
      SourceLoc loc = t.loc;
      std::string name = advance().text;
      // `cast<T>(x)` and `unpack4<T>(w)`: the only calls that take a type argument, so '<' is
      // unambiguous here.
      if ((name == "cast" || name == "unpack4") && at(TokenKind::Less)) {
        advance();
        auto e = make(ExprKind::Call, loc);
        e->name = name;
        e->type_arg = std::make_unique<TypeExpr>(parse_type());
        expect(TokenKind::Greater, str("to close ", name, "<...>").c_str());
        expect(TokenKind::LParen, str("after ", name, "<...>").c_str());
        parse_args(e->args, e->kwargs);
        return e;
      }
      if (accept(TokenKind::LParen)) {
        auto e = make(ExprKind::Call, loc);
        e->name = name;
        parse_args(e->args, e->kwargs);
        return e;
      }
      auto e = make(ExprKind::Name, loc);
      e->name = name;
      return e;
    }
    default:
      fail(t.loc, str("expected an expression but got ", describe(t)));
    }
  }

  std::vector<Token> tokens_;
  DiagnosticSink& sink_;
  size_t pos_ = 0;
  int depth_ = 0;
};

} // namespace

std::unique_ptr<Module> parse_module(const std::shared_ptr<const SourceFile>& file) {
  DiagnosticSink sink;
  std::vector<Token> tokens = lex(file, sink);
  Parser parser(std::move(tokens), sink);
  auto module = parser.parse_module(file);
  sink.check();
  return module;
}

std::unique_ptr<Module> parse_text(const std::string& path, const std::string& text) {
  return parse_module(make_source(path, text));
}

} // namespace tilejit::dsl
