#include "dsl/lexer.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <unordered_map>

namespace tilejit::dsl {

std::string token_kind_name(TokenKind kind) {
  switch (kind) {
  case TokenKind::End:
    return "end of file";
  case TokenKind::Identifier:
    return "identifier";
  case TokenKind::IntLiteral:
    return "integer";
  case TokenKind::FloatLiteral:
    return "number";
  case TokenKind::KwKernel:
    return "'kernel'";
  case TokenKind::KwTune:
    return "'tune'";
  case TokenKind::KwWhere:
    return "'where'";
  case TokenKind::KwRequire:
    return "'require'";
  case TokenKind::KwGrid:
    return "'grid'";
  case TokenKind::KwThreads:
    return "'threads'";
  case TokenKind::KwLet:
    return "'let'";
  case TokenKind::KwFrag:
    return "'frag'";
  case TokenKind::KwShared:
    return "'shared'";
  case TokenKind::KwScratch:
    return "'scratch'";
  case TokenKind::KwFor:
    return "'for'";
  case TokenKind::KwIn:
    return "'in'";
  case TokenKind::KwIf:
    return "'if'";
  case TokenKind::KwElse:
    return "'else'";
  case TokenKind::KwReturn:
    return "'return'";
  case TokenKind::KwTrue:
    return "'true'";
  case TokenKind::KwFalse:
    return "'false'";
  case TokenKind::KwNone:
    return "'None'";
  case TokenKind::LParen:
    return "'('";
  case TokenKind::RParen:
    return "')'";
  case TokenKind::LBracket:
    return "'['";
  case TokenKind::RBracket:
    return "']'";
  case TokenKind::LBrace:
    return "'{'";
  case TokenKind::RBrace:
    return "'}'";
  case TokenKind::Comma:
    return "','";
  case TokenKind::Semicolon:
    return "';'";
  case TokenKind::Colon:
    return "':'";
  case TokenKind::DotDot:
    return "'..'";
  case TokenKind::Pipe:
    return "'|'";
  case TokenKind::PipePipe:
    return "'||'";
  case TokenKind::Amp:
    return "'&'";
  case TokenKind::AmpAmp:
    return "'&&'";
  case TokenKind::Caret:
    return "'^'";
  case TokenKind::Tilde:
    return "'~'";
  case TokenKind::Bang:
    return "'!'";
  case TokenKind::Assign:
    return "'='";
  case TokenKind::PlusAssign:
    return "'+='";
  case TokenKind::MinusAssign:
    return "'-='";
  case TokenKind::StarAssign:
    return "'*='";
  case TokenKind::SlashAssign:
    return "'/='";
  case TokenKind::EqEq:
    return "'=='";
  case TokenKind::NotEq:
    return "'!='";
  case TokenKind::Less:
    return "'<'";
  case TokenKind::LessEq:
    return "'<='";
  case TokenKind::Greater:
    return "'>'";
  case TokenKind::GreaterEq:
    return "'>='";
  case TokenKind::Shl:
    return "'<<'";
  case TokenKind::Shr:
    return "'>>'";
  case TokenKind::Plus:
    return "'+'";
  case TokenKind::Minus:
    return "'-'";
  case TokenKind::Star:
    return "'*'";
  case TokenKind::Slash:
    return "'/'";
  case TokenKind::Percent:
    return "'%'";
  }
  return "token";
}

namespace {

const std::unordered_map<std::string, TokenKind>& keywords() {
  static const std::unordered_map<std::string, TokenKind> table = {
      {"kernel", TokenKind::KwKernel}, {"tune", TokenKind::KwTune},
      {"where", TokenKind::KwWhere},   {"require", TokenKind::KwRequire},
      {"grid", TokenKind::KwGrid},     {"threads", TokenKind::KwThreads},
      {"let", TokenKind::KwLet},       {"frag", TokenKind::KwFrag},
      {"shared", TokenKind::KwShared}, {"scratch", TokenKind::KwScratch},
      {"for", TokenKind::KwFor},       {"in", TokenKind::KwIn},
      {"if", TokenKind::KwIf},         {"else", TokenKind::KwElse},
      {"return", TokenKind::KwReturn}, {"true", TokenKind::KwTrue},
      {"false", TokenKind::KwFalse},   {"None", TokenKind::KwNone},
  };
  return table;
}

class Lexer {
public:
  Lexer(const std::shared_ptr<const SourceFile>& file, DiagnosticSink& sink)
      : file_(file), text_(file->text), sink_(sink) {}

  std::vector<Token> run() {
    bad_characters_ = 0;
    std::vector<Token> out;
    while (true) {
      skip_space_and_comments();
      Token t;
      t.loc = here();
      if (pos_ >= text_.size()) {
        t.kind = TokenKind::End;
        out.push_back(std::move(t));
        return out;
      }
      char c = text_[pos_];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t start = pos_;
        while (pos_ < text_.size() &&
               (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
          advance();
        t.text = text_.substr(start, pos_ - start);
        if (t.text.size() > kMaxIdentifierLength)
          sink_.error(t.loc, str("a name of ", t.text.size(),
                                 " characters; names may have at most ", kMaxIdentifierLength));
        auto kw = keywords().find(t.text);
        t.kind = kw == keywords().end() ? TokenKind::Identifier : kw->second;
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 (c == '.' && pos_ + 1 < text_.size() &&
                  std::isdigit(static_cast<unsigned char>(text_[pos_ + 1])))) {
        lex_number(t);
      } else if (!lex_punct(t)) {
        if (c == '\0' || ++bad_characters_ > kMaxBadCharacters) {
          sink_.error(t.loc, str(c == '\0' ? "a NUL byte" : "too many characters that are not",
                                 c == '\0' ? "" : " part of the language",
                                 ": this looks like binary data, not a .tile program"));
          t.kind = TokenKind::End;
          out.push_back(std::move(t));
          return out;
        }
        sink_.error(t.loc, str("unexpected character '", printable(c), "'"));
        advance();
        continue;
      }
      out.push_back(std::move(t));
    }
  }

private:
  static std::string printable(char c) {
    if (std::isprint(static_cast<unsigned char>(c))) return std::string(1, c);
    return fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
  }

  SourceLoc here() const { return SourceLoc{file_, line_, col_}; }

  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  bool peek_is(size_t offset, char c) const {
    return pos_ + offset < text_.size() && text_[pos_ + offset] == c;
  }

  void skip_space_and_comments() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        advance();
      } else if (c == '/' && peek_is(1, '/')) {
        while (pos_ < text_.size() && text_[pos_] != '\n') advance();
      } else if (c == '/' && peek_is(1, '*')) {
        SourceLoc start = here();
        advance();
        advance();
        bool closed = false;
        while (pos_ < text_.size()) {
          if (text_[pos_] == '*' && peek_is(1, '/')) {
            advance();
            advance();
            closed = true;
            break;
          }
          advance();
        }
        if (!closed) sink_.error(start, "unterminated comment");
      } else {
        return;
      }
    }
  }

  /// number ::= digits ['.' digits] [('e'|'E') ['+'|'-'] digits]   ("1..4" is 1, '..', 4)
  void lex_number(Token& t) {
    size_t start = pos_;
    bool is_float = false;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) advance();
    if (pos_ < text_.size() && text_[pos_] == '.' && !peek_is(1, '.')) {
      is_float = true;
      advance();
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])))
        advance();
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      size_t save_pos = pos_;
      int save_line = line_, save_col = col_;
      advance();
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) advance();
      if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        is_float = true;
        while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])))
          advance();
      } else {
        pos_ = save_pos;
        line_ = save_line;
        col_ = save_col;
      }
    }
    t.text = text_.substr(start, pos_ - start);
    t.kind = is_float ? TokenKind::FloatLiteral : TokenKind::IntLiteral;
    if (is_float) {
      // Out of f64's range: an error, not a silent infinity (or a silent zero).
      errno = 0;
      const double v = std::strtod(t.text.c_str(), nullptr);
      if (errno == ERANGE && std::isinf(v))
        sink_.error(t.loc, str("the number ", t.text, " is out of range (f64 holds up to about ",
                               "1.8e308)"));
      else if (errno == ERANGE && v == 0)
        sink_.error(t.loc, str("the number ", t.text, " is too small for f64 (it would be 0); ",
                               "write 0.0"));
    }
    if (pos_ < text_.size() &&
        (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      sink_.error(here(), str("invalid suffix '", text_[pos_], "' on number '", t.text, "'"));
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
        advance();
    }
  }

  bool lex_punct(Token& t) {
    struct P {
      const char* s;
      TokenKind k;
    };
    // Longest spellings first.
    static const P table[] = {
        {"..", TokenKind::DotDot},      {"||", TokenKind::PipePipe},
        {"&&", TokenKind::AmpAmp},      {"==", TokenKind::EqEq},
        {"!=", TokenKind::NotEq},       {"<=", TokenKind::LessEq},
        {">=", TokenKind::GreaterEq},   {"<<", TokenKind::Shl},
        {">>", TokenKind::Shr},         {"+=", TokenKind::PlusAssign},
        {"-=", TokenKind::MinusAssign}, {"*=", TokenKind::StarAssign},
        {"/=", TokenKind::SlashAssign}, {"(", TokenKind::LParen},
        {")", TokenKind::RParen},       {"[", TokenKind::LBracket},
        {"]", TokenKind::RBracket},     {"{", TokenKind::LBrace},
        {"}", TokenKind::RBrace},       {",", TokenKind::Comma},
        {";", TokenKind::Semicolon},    {":", TokenKind::Colon},
        {"|", TokenKind::Pipe},         {"&", TokenKind::Amp},
        {"^", TokenKind::Caret},        {"~", TokenKind::Tilde},
        {"!", TokenKind::Bang},         {"=", TokenKind::Assign},
        {"<", TokenKind::Less},         {">", TokenKind::Greater},
        {"+", TokenKind::Plus},         {"-", TokenKind::Minus},
        {"*", TokenKind::Star},         {"/", TokenKind::Slash},
        {"%", TokenKind::Percent},
    };
    for (const P& p : table) {
      size_t n = std::char_traits<char>::length(p.s);
      if (text_.compare(pos_, n, p.s) == 0) {
        t.kind = p.k;
        t.text = p.s;
        for (size_t i = 0; i < n; ++i) advance();
        return true;
      }
    }
    return false;
  }

  std::shared_ptr<const SourceFile> file_;
  const std::string& text_;
  DiagnosticSink& sink_;
  size_t pos_ = 0;
  int bad_characters_ = 0;
  int line_ = 1;
  int col_ = 1;
};

} // namespace

std::vector<Token> lex(const std::shared_ptr<const SourceFile>& file, DiagnosticSink& sink) {
  return Lexer(file, sink).run();
}

} // namespace tilejit::dsl
