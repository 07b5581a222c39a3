#include "compiler/ir_reader.h"

#include "compiler/ir_printer.h"
#include "compiler/target.h"
#include "dsl/diagnostics.h"
#include "support/text.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace tilejit::ir {
namespace {

using dsl::BinaryOp;
using dsl::UnaryOp;

struct Token {
  enum Kind { Ident, Number, String, Punct, Comment, End } kind = End;
  std::string text;
  int col = 1; // 1-based
  bool space_before = false;
};

/// The tokens of one line. A `//` comment runs to the end of the line (its text, trimmed).
std::vector<Token> tokenize(const std::string& line, std::string& error, int& error_col) {
  std::vector<Token> out;
  size_t i = 0;
  bool space = false;
  static const char* const multi[] = {":+", "<-", "<=", ">=", "==", "!=", "&&", "||", "<<", ">>"};
  while (i < line.size()) {
    char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      space = true;
      continue;
    }
    Token t;
    t.col = static_cast<int>(i) + 1;
    t.space_before = space;
    space = false;
    auto digit = [&](size_t j) {
      return j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]));
    };
    if (c == '/' && i + 1 < line.size() && line[i + 1] == '/') {
      t.kind = Token::Comment;
      t.text = std::string(trim(line.substr(i + 2)));
      out.push_back(t);
      break;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < line.size() &&
             (std::isalnum(static_cast<unsigned char>(line[j])) || line[j] == '_'))
        ++j;
      t.kind = Token::Ident;
      t.text = line.substr(i, j - i);
      i = j;
    } else if (digit(i) || (c == '-' && digit(i + 1))) {
      size_t j = i + 1;
      while (digit(j)) ++j;
      if (j < line.size() && line[j] == '.') {
        ++j;
        while (digit(j)) ++j;
      }
      if (j < line.size() && (line[j] == 'e' || line[j] == 'E') &&
          (digit(j + 1) || ((line[j + 1] == '+' || line[j + 1] == '-') && digit(j + 2)))) {
        j += 2;
        while (digit(j)) ++j;
      }
      t.kind = Token::Number;
      t.text = line.substr(i, j - i);
      i = j;
    } else if (c == '"') {
      size_t j = i + 1;
      std::string s;
      while (j < line.size() && line[j] != '"') {
        if (line[j] == '\\' && j + 1 < line.size()) {
          ++j;
          s += line[j] == 'n' ? '\n' : line[j];
        } else {
          s += line[j];
        }
        ++j;
      }
      if (j >= line.size()) {
        error = "unterminated string";
        error_col = t.col;
        return {};
      }
      t.kind = Token::String;
      t.text = s;
      i = j + 1;
    } else {
      t.kind = Token::Punct;
      t.text = std::string(1, c);
      for (const char* m : multi)
        if (line.compare(i, 2, m) == 0) t.text = m;
      if (std::string("()[]{},:=<>+-*/%!~&|^@#.?").find(c) == std::string::npos) {
        error = str("unexpected character '", c, "'");
        error_col = t.col;
        return {};
      }
      i += t.text.size();
    }
    out.push_back(t);
  }
  Token end;
  end.col = static_cast<int>(line.size()) + 1;
  out.push_back(end);
  return out;
}

const std::map<std::string, BinaryOp>& binary_ops() {
  static const std::map<std::string, BinaryOp> ops = [] {
    std::map<std::string, BinaryOp> m;
    for (int i = 0; i <= static_cast<int>(BinaryOp::Shr); ++i)
      m[dsl::binary_op_spelling(static_cast<BinaryOp>(i))] = static_cast<BinaryOp>(i);
    return m;
  }();
  return ops;
}

std::optional<MathFn> math_fn(const std::string& name) {
  for (int i = 0; i <= static_cast<int>(MathFn::Max); ++i)
    if (name == math_fn_name(static_cast<MathFn>(i))) return static_cast<MathFn>(i);
  return std::nullopt;
}

std::optional<ReduceOp> reduce_op(const std::string& name) {
  for (int i = 0; i <= static_cast<int>(ReduceOp::Prod); ++i)
    if (name == reduce_op_name(static_cast<ReduceOp>(i))) return static_cast<ReduceOp>(i);
  return std::nullopt;
}

class Reader {
public:
  Reader(const std::string& path, const std::string& text)
      : file_(dsl::make_source(path, text)), lines_(split(text, '\n')) {}

  std::unique_ptr<Kernel> run() {
    k_ = std::make_unique<Kernel>();
    PrintContext context(*k_); // implied types read parameters' dtypes
    next_line();
    if (at_line() && toks_[0].kind == Token::Comment && starts_with(toks_[0].text, "after ")) {
      k_->after_pass = std::string(trim(toks_[0].text.substr(6)));
      advance_line();
      next_line();
    }
    header();
    Block body = block(/*nested=*/false);
    k_->body = std::move(body);
    // The reducing warp's reads of tiles the other threads declare further down: typed now.
    for (Expr* e : forward_refs_) e->type = e->var->type;
    for (const auto& [name, v] : vars_)
      if (!declared_.count(v))
        fail_at(1, 1, str("variable '", name, "' is used but never declared"));
    return std::move(k_);
  }

private:
  std::shared_ptr<const dsl::SourceFile> file_;
  bool in_reduce_warp_ = false;     ///< reading a reduce_warp block
  std::vector<Expr*> forward_refs_; ///< its references to tiles declared further down
  std::vector<std::string> lines_;
  size_t line_ = 0; // index of the current line
  std::vector<Token> toks_;
  size_t pos_ = 0;
  std::string above_; // a comment on the line right above the current one
  std::unique_ptr<Kernel> k_;
  std::map<std::string, Var*> vars_;
  std::set<const Var*> declared_;
  std::set<const Expr*> layout_annotated_; // expressions whose annotation gave a layout
  std::set<const Expr*> annotated_;        // expressions with an annotation

  /// Constants beside a value take its dtype unless annotated (implied_const_type).
  void partners(Expr& x, Expr& y) {
    if (x.kind == ExprKind::Const && !annotated_.count(&x)) x.type = implied_const_type(x, &y);
    if (y.kind == ExprKind::Const && !annotated_.count(&y)) y.type = implied_const_type(y, &x);
  }
  std::shared_ptr<const dsl::SourceFile> source_; // the .tile file `// line N` refers to

  // ---- lines and tokens ------------------------------------------------------------------
  [[noreturn]] void fail_at(int line, int col, const std::string& message) {
    dsl::fail_at(dsl::SourceLoc{file_, line, col}, message);
  }
  [[noreturn]] void fail(const std::string& message) {
    fail_at(static_cast<int>(line_) + 1, tok().col, message);
  }
  bool at_line() const { return line_ < lines_.size(); }
  /// Moves to the next line that is not blank or only a comment, and tokenizes it; a comment
  /// on the line right above it is kept in `above_` (a loop's note, printed there).
  void next_line() {
    above_.clear();
    for (; line_ < lines_.size(); ++line_) {
      std::string error;
      int col = 0;
      toks_ = tokenize(lines_[line_], error, col);
      if (!error.empty()) fail_at(static_cast<int>(line_) + 1, col, error);
      pos_ = 0;
      if (toks_[0].kind == Token::End) {
        above_.clear();
        continue;
      }
      if (toks_[0].kind == Token::Comment &&
          !(k_->name.empty() && starts_with(toks_[0].text, "after "))) {
        above_ = toks_[0].text;
        continue;
      }
      return;
    }
    toks_.assign(1, Token{});
    pos_ = 0;
  }
  void advance_line() { ++line_; }
  const Token& tok() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  bool is(const char* text) const {
    return (tok().kind == Token::Punct || tok().kind == Token::Ident) && tok().text == text;
  }
  bool accept(const char* text) {
    if (!is(text)) return false;
    ++pos_;
    return true;
  }
  std::string describe(const Token& t) const {
    switch (t.kind) {
    case Token::End:
      return "the end of the line";
    case Token::Comment:
      return "a comment";
    case Token::String:
      return "a string";
    default:
      return "'" + t.text + "'";
    }
  }
  void expect(const char* text) {
    // '>>' closes two angle brackets (convert<slice<...>>).
    if (std::string(text) == ">" && is(">>")) {
      toks_[pos_].text = ">";
      toks_[pos_].col += 1;
      return;
    }
    if (!accept(text)) fail(str("expected '", text, "' but got ", describe(tok())));
  }
  std::string ident(const char* what) {
    if (tok().kind != Token::Ident) fail(str("expected ", what, " but got ", describe(tok())));
    return toks_[pos_++].text;
  }
  int64_t integer(const char* what) {
    const Token& t = tok();
    if (t.kind != Token::Number || t.text.find_first_of(".eE") != std::string::npos)
      fail(str("expected ", what, " (an integer) but got ", describe(t)));
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(t.text.c_str(), &end, 10);
    if (errno == ERANGE) fail(str("integer ", t.text, " out of range"));
    ++pos_;
    return v;
  }
  /// `, operand` and `, flag=0|1` after a call's fixed operands (dot's acc and exact=,
  /// unpack4's zero and interleaved=), up to the closing parenthesis.
  void operands_then_flag(ExprPtr& operand, const char* flag, const char* what, int64_t& value) {
    while (accept(",")) {
      if (is(flag) && peek().text == "=") {
        accept(flag);
        expect("=");
        value = small_int(what, 0, 1);
      } else {
        operand = expr();
      }
    }
  }
  int small_int(const char* what, int64_t lo = 0, int64_t hi = 1 << 30) {
    const int col = tok().col;
    int64_t v = integer(what);
    if (v < lo || v > hi)
      fail_at(static_cast<int>(line_) + 1, col,
              str(what, " ", v, " out of range [", lo, ", ", hi, "]"));
    return static_cast<int>(v);
  }
  /// The integer after `x` in "64x32" or "x2" (lexed as the identifier x32 / x2).
  int64_t times_suffix(const char* what) {
    const Token& t = tok();
    if (t.kind != Token::Ident || t.text.size() < 2 || t.text[0] != 'x' ||
        t.text.find_first_not_of("0123456789", 1) != std::string::npos)
      fail(str("expected 'x' and ", what, " but got ", describe(t)));
    // (Nine digits at most: every count printed IR holds is far below 10^9, and a longer one
    // would overflow std::stoll.)
    if (t.text.size() > 10) fail(str(what, " ", t.text.substr(1), " out of range"));
    ++pos_;
    return std::stoll(t.text.substr(1));
  }
  void end_of_line() {
    if (tok().kind != Token::End)
      fail(str("unexpected ", describe(tok()), " at the end of the statement"));
  }
  SourceLoc loc_here() const { return SourceLoc{file_, static_cast<int>(line_) + 1, tok().col}; }
  /// A trailing `// line N` (the .tile line the statement came from).
  SourceLoc trailing_loc() {
    SourceLoc loc;
    if (tok().kind == Token::Comment) {
      const std::string& c = tok().text;
      if (!starts_with(c, "line ") || c.find_first_not_of("0123456789", 5) != std::string::npos ||
          c.size() == 5 || c.size() > 14)
        fail(str("expected '// line N' but got '// ", c, "'"));
      loc = SourceLoc{source_, std::stoi(c.substr(5)), 1};
      ++pos_;
    }
    return loc;
  }
  /// A trailing `// note` (barriers, waits).
  std::string trailing_note() {
    if (tok().kind != Token::Comment) return "";
    return toks_[pos_++].text;
  }

  // ---- header ----------------------------------------------------------------------------
  void header() {
    if (!at_line() || !accept("kernel")) fail("expected 'kernel' (printed IR starts with it)");
    k_->name = ident("the kernel's name");
    while (tok().kind != Token::End) {
      std::string n = ident("a binding NAME=VALUE");
      expect("=");
      const Token& v = tok();
      if (v.kind != Token::Ident && v.kind != Token::Number) fail("expected the binding's value");
      k_->bindings[n] = v.text;
      ++pos_;
    }
    advance_line();
    next_line();
    // threads N[, blocks per sm N], shared memory N bytes[, 32-bit indices], scratch N bytes,
    // limit N bytes,
    // grid rank N[, cluster X Y Z], target ARCH[, debug bounds], source "PATH"
    expect("threads");
    k_->threads = small_int("the thread count", 1, 1 << 20);
    std::string arch;
    while (accept(",")) {
      if (accept("shared")) {
        expect("memory");
        k_->smem_bytes = integer("shared memory bytes");
        expect("bytes");
      } else if (accept("producer")) {
        expect("warps");
        k_->producer_threads = small_int("the producer warps' threads", 32, 1024);
        expect("registers");
        k_->producer_regs = small_int("the producer warps' registers", 0, 256);
        k_->consumer_regs = small_int("the other warps' registers", 0, 256);
      } else if (accept("blocks")) {
        expect("per");
        expect("sm");
        k_->blocks_per_sm = small_int("the blocks per multiprocessor", 1, 32);
      } else if (is("-") || tok().kind == Token::Number) {
        if (integer("32") != 32) fail("expected '32-bit indices'");
        expect("-");
        expect("bit");
        expect("indices");
        k_->index32 = true;
      } else if (accept("scratch")) {
        k_->scratch_bytes = integer("scratch bytes");
        expect("bytes");
      } else if (accept("limit")) {
        k_->smem_limit = small_int("the shared memory limit");
        expect("bytes");
      } else if (accept("grid")) {
        expect("rank");
        k_->grid_rank = small_int("the grid rank", 1, 3);
      } else if (accept("cluster")) {
        for (int& c : k_->cluster) c = small_int("a cluster extent", 1, 8);
        if (k_->cluster_size() > 8) fail("a cluster holds at most 8 programs");
      } else if (accept("target")) {
        const SourceLoc at = loc_here();
        arch = ident("the target's arch");
        if (arch != "none") {
          try {
            k_->target = &target_for(arch);
          } catch (const Error& e) {
            dsl::fail_at(at, e.what());
          }
        }
      } else if (accept("debug")) {
        expect("bounds");
        k_->debug_bounds = true;
      } else if (accept("source")) {
        if (tok().kind != Token::String) fail("expected the source path in quotes");
        k_->source_path = toks_[pos_++].text;
      } else {
        fail(str("unexpected ", describe(tok()), " in the kernel's header"));
      }
    }
    end_of_line();
    if (!k_->target) k_->target = &target_for(default_arch());
    const int warp = k_->target->warp_size(), most = k_->target->max_threads_per_block();
    if (k_->threads % warp != 0 || k_->threads > most)
      fail_at(static_cast<int>(line_) + 1, 3,
              str(k_->threads, " threads: a block has a multiple of ", warp, ", at most ", most));
    k_->layouts.set_warp_size(k_->target->warp_size());
    source_ = dsl::make_source(k_->source_path, "");
    advance_line();
    next_line();
    while (at_line() && is("param")) {
      param();
      advance_line();
      next_line();
    }
  }

  DType dtype(const char* what) {
    const SourceLoc at = loc_here();
    std::string n = ident(what);
    auto d = parse_dtype(n);
    if (!d) dsl::fail_at(at, str("unknown dtype '", n, "'"));
    return *d;
  }

  /// param [scratch] [zeroed] NAME: DTYPE[dims] [aligned16]; a dim is NAME, VALUE, NAME=VALUE,
  /// with NAME any text balanced in parentheses ("cdiv(MAXK, CHUNK)", "1|B").
  void param() {
    expect("param");
    Param p;
    p.loc = loc_here();
    // `scratch` and `zeroed` are flags unless followed by ':' (a parameter called so).
    if (is("scratch") && peek().text != ":") p.is_scratch = accept("scratch");
    if (is("zeroed") && peek().text != ":") p.zero_init = accept("zeroed");
    p.name = ident("the parameter's name");
    expect(":");
    p.dtype = dtype("the parameter's dtype");
    if (accept("[")) {
      p.is_tensor = true;
      for (;;) {
        // Raw text up to the ',' or ']' at depth 0.
        const std::string& line = lines_[line_];
        size_t start = tok().col - 1, i = start;
        int depth = 0;
        for (; i < line.size(); ++i) {
          char c = line[i];
          if (c == '(') ++depth;
          if (c == ')') --depth;
          if (depth == 0 && (c == ',' || c == ']')) break;
        }
        if (i >= line.size()) fail("expected ']' closing the parameter's dimensions");
        std::string dim(trim(line.substr(start, i - start)));
        if (dim.empty()) fail("expected a dimension");
        int64_t value = -1;
        size_t eq = dim.rfind('=');
        if (eq != std::string::npos && eq + 1 < dim.size() &&
            dim.find_first_not_of("0123456789", eq + 1) == std::string::npos) {
          value = std::stoll(dim.substr(eq + 1));
          dim = std::string(trim(dim.substr(0, eq)));
        } else if (dim.find_first_not_of("0123456789") == std::string::npos) {
          value = std::stoll(dim);
        }
        std::string to;
        if (size_t at = dim.find(" to "); at != std::string::npos) {
          to = dim.substr(at + 4);
          dim = dim.substr(0, at);
        } else if (starts_with(dim, "1|")) {
          to = dim.substr(2);
        }
        if (value < 0 && !to.empty() && to.find_first_not_of("0123456789") == std::string::npos)
          value = std::stoll(to); // 1|64 broadcasts to a constant
        p.dim_names.push_back(dim);
        p.dim_values.push_back(value);
        p.broadcast_to.push_back(to);
        while (tok().kind != Token::End && tok().col - 1 < static_cast<int>(i)) ++pos_;
        if (accept("]")) break;
        expect(",");
      }
    }
    if (accept("aligned16")) p.vector_aligned = true;
    if (accept("tma")) p.tma = true;
    end_of_line();
    if (k_->find_param(p.name) >= 0) dsl::fail_at(p.loc, str("parameter '", p.name, "' twice"));
    k_->params.push_back(std::move(p));
  }

  // ---- variables ---------------------------------------------------------------------------
  Var* var_named(const std::string& name) {
    auto it = vars_.find(name);
    if (it != vars_.end()) return it->second;
    Var* v = k_->new_var(name, Type{}, {});
    vars_[name] = v;
    return v;
  }

  bool at_type() const {
    if (is("frag") || is("shared")) return true;
    return tok().kind == Token::Ident && parse_dtype(tok().text).has_value() &&
           peek().kind == Token::Ident;
  }

  Type type() {
    Type t;
    if (accept("frag"))
      t.space = Space::Frag;
    else if (accept("shared"))
      t.space = Space::Shared;
    t.dtype = dtype("a dtype");
    if (accept("[")) {
      do {
        const int col = tok().col;
        t.shape.push_back(integer("a dimension"));
        if (t.shape.back() < 1 || t.shape.back() > (int64_t(1) << 24))
          fail_at(static_cast<int>(line_) + 1, col, "a tile dimension out of range");
      } while (accept(","));
      expect("]");
    }
    return t;
  }

  /// [frag|shared] TYPE NAME [declared] [#LAYOUT] [@smem[N]] [row_stride=N] [xN stages]
  /// [read_slot=NAME]
  Var* var_decl() {
    const SourceLoc at = loc_here();
    Type t = type();
    std::string name = ident("the variable's name");
    Var* v = var_named(name);
    if (declared_.count(v) && !(v->type == t))
      dsl::fail_at(at, str("'", name, "' declared again with another type"));
    declared_.insert(v);
    v->type = t;
    v->loc = SourceLoc{source_, 0, 0};
    if (accept("declared")) v->declared_type = true;
    if (accept("#")) v->layout = layout(t.rank());
    if (accept("@")) {
      expect("smem");
      expect("[");
      v->smem_offset = integer("the shared memory offset");
      expect("]");
    }
    if (accept("row_stride")) {
      expect("=");
      v->smem_row_stride = integer("the row stride");
    }
    if (accept("swizzle")) {
      expect("=");
      v->smem_swizzle = small_int("the swizzle", 0, 128);
      if (v->smem_swizzle != 0 && v->smem_swizzle != 128)
        fail(str("swizzle ", v->smem_swizzle, ": shared tiles are swizzled by 128 bytes or not"));
    }
    if (tok().kind == Token::Ident && tok().text[0] == 'x' && peek().text == "stages") {
      const int col = tok().col;
      int64_t n = times_suffix("a stage count");
      if (n < 2 || n > 64) fail_at(static_cast<int>(line_) + 1, col, "stage count out of range");
      v->stages = static_cast<int>(n);
      expect("stages");
    }
    if (accept("read_slot")) {
      expect("=");
      v->read_slot = var_named(ident("the read slot's variable"));
    }
    if (accept("by_mbarrier")) v->by_mbarrier = true;
    return v;
  }

  /// blocked<RxC vec=V tc=T nt=N [warp=W]> | mma_acc<MxN warps=AxB> | mfma_acc<MxN waves=AxB> |
  /// slice<LAYOUT, axis=N>
  const Layout* layout(int rank) {
    const SourceLoc at = loc_here();
    std::string kind = ident("a layout");
    expect("<");
    const Layout* l = nullptr;
    try {
      if (kind == "blocked") {
        int64_t rows = integer("rows"), cols = times_suffix("columns");
        expect("vec");
        expect("=");
        int vec = small_int("vec", 1, 1024);
        expect("tc");
        expect("=");
        int tc = small_int("tc", 1, 1 << 16);
        expect("nt");
        expect("=");
        int nt = small_int("nt", 1, 1 << 16);
        if (accept("warp")) {
          expect("=");
          if (small_int("warp", 1, 1024) != k_->layouts.warp_size())
            dsl::fail_at(at, "the layout's warp size is not the target's");
        }
        if (rows < 1 || cols < 1) dsl::fail_at(at, "a layout of an empty tile");
        std::vector<int64_t> shape =
            rank == 1 && rows == 1 ? std::vector<int64_t>{cols} : std::vector<int64_t>{rows, cols};
        if (nt % tc != 0) dsl::fail_at(at, str("tc=", tc, " does not divide nt=", nt));
        // Every layout spreads a tile over the whole block (the printer and the passes derive
        // layouts from the kernel's thread count).
        if (nt != k_->threads)
          dsl::fail_at(at, str("nt=", nt, " is not the kernel's ", k_->threads, " threads"));
        if (k_->threads % tc != 0)
          dsl::fail_at(at,
                       str("tc=", tc, " does not divide the kernel's ", k_->threads, " threads"));
        l = k_->layouts.blocked(shape, vec, tc, nt);
      } else if (kind == "mma_acc" || kind == "mfma_acc") {
        const bool mfma = kind == "mfma_acc";
        const char* groups = mfma ? "waves" : "warps";
        int64_t m = integer("rows"), n = times_suffix("columns");
        expect(groups);
        expect("=");
        int wm = small_int(groups, 1, 1024);
        int wn = static_cast<int>(times_suffix(groups));
        if (m < 1 || n < 1 || wn < 1 || wn > 1024) dsl::fail_at(at, str("a bad ", kind, " layout"));
        if (wm * wn * k_->layouts.warp_size() != k_->threads)
          dsl::fail_at(
              at, str(groups, "=", wm, "x", wn, " is not the kernel's ", k_->threads, " threads"));
        if (mfma && k_->layouts.warp_size() != 64)
          dsl::fail_at(at, "an mfma_acc layout needs a target with wavefronts of 64 (gfx90a)");
        l = mfma ? k_->layouts.mfma_acc(m, n, wm, wn, k_->threads)
                 : k_->target->accumulator_layout(k_->layouts, m, n, wm, wn,
                                                  wm * wn * k_->layouts.warp_size());
      } else if (kind == "slice") {
        const Layout* parent = layout(2);
        expect(",");
        expect("axis");
        expect("=");
        int axis = small_int("axis", 0, 1);
        if (parent->rank() != 2 || parent->kind == LayoutKind::Slice)
          dsl::fail_at(at, "a slice of a layout that is not 2-D");
        l = k_->layouts.slice(parent, axis);
      } else {
        dsl::fail_at(at, str("unknown layout '", kind, "' (blocked, mma_acc, mfma_acc, slice)"));
      }
    } catch (const InternalError& e) {
      dsl::fail_at(at, str("invalid layout: ", e.what()));
    }
    expect(">");
    return l;
  }

  // ---- expressions -------------------------------------------------------------------------
  ExprPtr make(ExprKind kind) { return std::make_unique<Expr>(kind, cur_loc_); }
  SourceLoc cur_loc_; // the statement's .tile location, given to its expressions

  /// Sets the implied type and layout (ir_printer.h); an annotation overrides them.
  ExprPtr typed(ExprPtr e) {
    e->type = implied_type(*e);
    e->layout = implied_layout(*e);
    return e;
  }

  void check_operand(const Expr* e, const char* what) {
    if (!e) fail(str("missing ", what));
  }

  Access access() {
    Access a;
    a.loc = cur_loc_;
    const SourceLoc at = loc_here();
    std::string name = ident("a tensor");
    a.param = k_->find_param(name);
    if (a.param < 0 || !k_->params[a.param].is_tensor)
      dsl::fail_at(at, str("'", name, "' is not a tensor parameter"));
    expect("[");
    std::map<int, int> gather_axis_count;
    std::vector<int> gather_axis;
    do {
      AccessIndex ix;
      int axis = -1;
      if (accept("zip")) {
        expect("@");
        ix.zip = small_int("a zip group", 0, 16);
        ix.index = expr();
      } else if (accept("gather")) {
        ix.kind = AccessIndex::Kind::Gather;
        if (accept("@")) axis = small_int("a gather axis", 0, 16);
        ix.index = expr();
      } else {
        ix.index = expr();
        if (accept(":+")) {
          ix.kind = AccessIndex::Kind::Range;
          ix.extent = integer("a range's extent");
          if (ix.extent < 1) fail("a range's extent is positive");
        }
      }
      if (axis >= 0) ++gather_axis_count[axis];
      gather_axis.push_back(axis);
      a.indices.push_back(std::move(ix));
    } while (accept(","));
    expect("]");
    // Gathers that name the same axis were zipped.
    for (size_t d = 0; d < a.indices.size(); ++d)
      if (gather_axis[d] >= 0 && gather_axis_count[gather_axis[d]] > 1)
        a.indices[d].zip = gather_axis[d];
    if (static_cast<int>(a.indices.size()) != k_->params[a.param].rank())
      dsl::fail_at(at, str("'", name, "' has ", k_->params[a.param].rank(), " dimensions, not ",
                           a.indices.size()));
    return a;
  }

  ExprPtr expr() {
    ExprPtr e = primary();
    // Postfix: a shared tile's window t[start :+ n] or row t[i, :].
    while (is("[")) {
      ++pos_;
      auto s = make(ExprKind::SharedSlice);
      s->a = std::move(e);
      s->b = expr();
      if (accept(",")) {
        expect(":");
        s->axes = {0};
      } else {
        expect(":+");
        s->extent = integer("the window's extent");
      }
      s->int_value = s->a->type.rank();
      if (accept("of")) {
        expect("=");
        s->int_value = integer("the subscripts written");
      }
      expect("]");
      e = typed(std::move(s));
    }
    return e;
  }

  ExprPtr constant(const Token& t, bool negate_inf = false) {
    auto e = make(ExprKind::Const);
    e->literal = true;
    if (t.text == "true" || t.text == "false") {
      e->int_value = e->float_value = t.text == "true";
      e->type = Type{DType::Bool, {}, Space::Scalar};
    } else if (t.text == "inf" || t.text == "nan") {
      double v = t.text == "inf" ? std::numeric_limits<double>::infinity()
                                 : std::numeric_limits<double>::quiet_NaN();
      e = make_float(negate_inf ? -v : v, DType::F32, cur_loc_);
      e->literal = true;
    } else if (t.text.find_first_of(".eE") != std::string::npos) {
      e = make_float(std::strtod(t.text.c_str(), nullptr), DType::F32, cur_loc_);
      e->literal = true;
    } else {
      errno = 0;
      long long v = std::strtoll(t.text.c_str(), nullptr, 10);
      if (errno == ERANGE) fail(str("integer ", t.text, " out of range"));
      e = make_int(v, DType::I32, cur_loc_);
      e->literal = true;
    }
    return typed(std::move(e));
  }

  ExprPtr call_args1(ExprPtr e) {
    expect("(");
    e->a = expr();
    expect(")");
    return e;
  }

  /// `scratch=N` (place-scratch's half of the scratch area), `scratch=whole` (both halves) or
  /// `scratch=exchange` (plan-shared-memory's exchange over the dead tiles), after a leading ','
  /// was read.
  void scratch_arg(Expr& e) {
    expect("scratch");
    expect("=");
    if (accept("exchange")) {
      e.scratch_region = ir::kExchangeRegion;
      return;
    }
    if (accept("whole")) {
      e.scratch_region = ir::kWholeScratch;
      return;
    }
    e.scratch_region = small_int("a scratch half", 0, 1);
  }

  ExprPtr primary() {
    const Token t = tok();
    if (t.kind == Token::Number) {
      ++pos_;
      return constant(t);
    }
    if (t.kind == Token::Punct) {
      if (t.text == "(") {
        ++pos_;
        ExprPtr inner = expr();
        if (accept(")")) return inner; // -(5): a parenthesised constant
        if (accept(":")) return annotated(std::move(inner));
        const Token op = tok();
        auto it = binary_ops().find(op.text);
        if (op.kind != Token::Punct || it == binary_ops().end())
          fail(str("expected an operator, ':' or ')' but got ", describe(op)));
        ++pos_;
        auto e = make(ExprKind::Binary);
        e->binary_op = it->second;
        e->a = std::move(inner);
        e->b = expr();
        expect(")");
        partners(*e->a, *e->b);
        return typed(std::move(e));
      }
      if (t.text == "-" || t.text == "!" || t.text == "~") {
        ++pos_;
        if (t.text == "-" && !tok().space_before && tok().kind == Token::Ident &&
            (tok().text == "inf" || tok().text == "nan")) {
          const Token inf = tok();
          ++pos_;
          return constant(inf, /*negate_inf=*/true);
        }
        auto e = make(ExprKind::Unary);
        e->unary_op = t.text == "-" ? UnaryOp::Neg : t.text == "!" ? UnaryOp::Not : UnaryOp::BitNot;
        e->a = primary();
        while (is("[")) fail("a unary operand with a subscript is printed in parentheses");
        return typed(std::move(e));
      }
      fail(str("expected an expression but got ", describe(t)));
    }
    if (t.kind != Token::Ident) fail(str("expected an expression but got ", describe(t)));
    const std::string name = t.text;
    ++pos_;
    if (name == "true" || name == "false" || name == "inf" || name == "nan") return constant(t);
    // NAME.shape[N], a runtime size
    if (is(".") && peek().text == "shape") {
      int p = k_->find_param(name);
      if (p < 0 || !k_->params[p].is_tensor) fail(str("'", name, "' is not a tensor parameter"));
      pos_ += 2;
      expect("[");
      auto e = make(ExprKind::DimRef);
      e->param = p;
      e->axis = small_int("a dimension", 0, k_->params[p].rank() - 1);
      expect("]");
      return typed(std::move(e));
    }
    // Suffixes of memory operations: copy.async, copy.tma, load.speculative, atomic_add.bulk.
    bool async = false, speculative = false, tma = false, bulk = false;
    while (is(".") && (peek().text == "async" || peek().text == "speculative" ||
                       peek().text == "tma" || peek().text == "bulk")) {
      const std::string& sfx = peek().text;
      (sfx == "async" ? async : sfx == "tma" ? tma : sfx == "bulk" ? bulk : speculative) = true;
      pos_ += 2;
    }
    if (tma && (async || speculative)) fail("copy.tma takes no other suffix");
    if (bulk && (name != "atomic_add" || async || speculative || tma))
      fail("only atomic_add is bulk, with no other suffix");
    // A call's '(' or '<' follows its name directly; `(a < b)` spaces its operator.
    if (!(is("(") || is("<")) || tok().space_before) {
      if ((async || speculative || tma || bulk)) fail("expected '('");
      int p = k_->find_param(name);
      if (p >= 0 && !k_->params[p].is_tensor && !vars_.count(name)) {
        auto e = make(ExprKind::ParamRef);
        e->param = p;
        return typed(std::move(e));
      }
      auto it = vars_.find(name);
      if (in_reduce_warp_ && (it == vars_.end() || !declared_.count(it->second))) {
        // The reducing warp reads the tiles the other threads stage, which their branch
        // (printed after it) declares: a forward reference, typed once the kernel is read
        // (never declared: the error after the kernel).
        auto e = make(ExprKind::VarRef);
        e->var = var_named(name);
        forward_refs_.push_back(e.get());
        return e;
      }
      if (it == vars_.end() || !declared_.count(it->second)) {
        pos_--;
        fail(str("'", name, "' is not a declared variable or a scalar parameter"));
      }
      auto e = make(ExprKind::VarRef);
      e->var = it->second;
      return typed(std::move(e));
    }
    if ((async || speculative) && name != "load" && name != "copy" && name != "prefetch" &&
        name != "atomic_add")
      fail(str("'", name, "' takes no suffix"));
    if (async && name != "copy") fail("only copy is asynchronous");
    if (tma && name != "copy") fail("only copy runs on the tensor memory accelerator");
    if (name == "program_id" || name == "num_programs") {
      auto e = make(name == "program_id" ? ExprKind::ProgramId : ExprKind::NumPrograms);
      expect("(");
      e->axis = small_int("a grid axis", 0, 2);
      expect(")");
      return typed(std::move(e));
    }
    if (name == "where") {
      auto e = make(ExprKind::Select);
      expect("(");
      e->a = expr();
      expect(",");
      e->b = expr();
      expect(",");
      e->c = expr();
      expect(")");
      partners(*e->b, *e->c);
      return typed(std::move(e));
    }
    if (auto fn = math_fn(name)) {
      auto e = make(ExprKind::Math);
      e->math = *fn;
      expect("(");
      e->a = expr();
      if (accept(",")) e->b = expr();
      expect(")");
      if (e->b) partners(*e->a, *e->b);
      return typed(std::move(e));
    }
    if (name == "cast") {
      auto e = make(ExprKind::Cast);
      expect("<");
      DType d = dtype("a dtype");
      expect(">");
      e = call_args1(std::move(e));
      e->type.dtype = d;
      return typed(std::move(e));
    }
    if (name == "unpack4") {
      auto e = make(ExprKind::Unpack);
      e->extent = 4;
      expect("<");
      DType d = dtype("a dtype");
      expect(">");
      expect("(");
      e->a = expr();
      // unpack4<T>(words[, zero][, interleaved=1])
      operands_then_flag(e->b, "interleaved", "unpack4's interleaved", e->int_value);
      expect(")");
      e->type.dtype = d;
      return typed(std::move(e));
    }
    if (name == "iota") {
      auto e = make(ExprKind::Iota);
      expect("(");
      e->extent = integer("a length");
      if (e->extent < 1) fail("iota of a length below 1");
      expect(")");
      return typed(std::move(e));
    }
    if (name == "expand") {
      auto e = make(ExprKind::Expand);
      expect("(");
      e->a = expr();
      expect(",");
      expect("axes");
      expect("=");
      expect("[");
      if (!is("]")) do
          e->axes.push_back(small_int("an axis", 0, 3));
        while (accept(","));
      expect("]");
      e->int_value = e->a->type.rank();
      if (accept(",")) {
        expect("of");
        expect("=");
        e->int_value = integer("a rank");
      }
      expect(")");
      return typed(std::move(e));
    }
    if (name == "trans") return typed(call_args1(make(ExprKind::Trans)));
    if (name == "load" || name == "copy" || name == "atomic_add") {
      auto e = make(name == "load"   ? ExprKind::Load
                    : name == "copy" ? ExprKind::Copy
                                     : ExprKind::AtomicAdd);
      e->async_copy = async || tma;
      e->bulk = bulk;
      expect("(");
      e->access = std::make_unique<Access>(access());
      e->access->speculative = speculative;
      if (e->kind == ExprKind::AtomicAdd) {
        expect(",");
        e->a = expr();
      }
      // Optional, in this order: mask=, other=, scratch= (uniform atomics), mbarrier=, reuse=.
      while (accept(",")) {
        if (!e->b && !e->c && e->scratch_region < 0 && accept("mask")) {
          expect("=");
          e->b = expr();
        } else if (!e->c && e->scratch_region < 0 && accept("other")) {
          expect("=");
          e->c = expr();
        } else if (e->kind == ExprKind::AtomicAdd && e->scratch_region < 0 && is("scratch")) {
          scratch_arg(*e);
        } else if (tma && e->tma_barrier < 0 && accept("mbarrier")) {
          expect("=");
          e->tma_barrier = integer("the mbarrier's shared-memory offset");
        } else if (e->kind == ExprKind::Copy && !e->reuse_slot && accept("reuse")) {
          expect("=");
          e->reuse_slot = small_int("copy's reuse", 1, 1) == 1;
        } else {
          fail(e->kind == ExprKind::AtomicAdd ? "expected mask=, other= or scratch="
                                              : "expected mask= or other=");
        }
      }
      if (tma && e->tma_barrier < 0) fail("copy.tma needs mbarrier=OFFSET");
      expect(")");
      return typed(std::move(e));
    }
    if (name == "prefetch") {
      auto e = make(ExprKind::Prefetch);
      expect("(");
      e->access = std::make_unique<Access>(access());
      e->access->speculative = speculative;
      expect(")");
      return typed(std::move(e));
    }
    if (name == "dot") {
      auto e = make(ExprKind::Dot);
      expect("(");
      e->a = expr();
      expect(",");
      e->b = expr();
      // dot(a, b[, acc][, exact=1][, wgmma=0|1|2][, issue=1][, shared_a=0])
      int64_t wgmma = 0;
      bool saw_wgmma = false;
      while (accept(",")) {
        if (is("exact") && peek().text == "=") {
          accept("exact");
          expect("=");
          e->int_value = small_int("dot's exact", 0, 1);
        } else if (is("wgmma") && peek().text == "=") {
          accept("wgmma");
          expect("=");
          wgmma = small_int("dot's wgmma", 0, 2);
          saw_wgmma = true;
        } else if (is("issue") && peek().text == "=") {
          accept("issue");
          expect("=");
          e->issue_early = small_int("dot's issue", 0, 1) != 0;
        } else if (is("shared_a") && peek().text == "=") {
          accept("shared_a");
          expect("=");
          e->registers_a = small_int("dot's shared_a", 0, 1) == 0;
        } else {
          e->c = expr();
        }
      }
      if (saw_wgmma) e->wgmma = wgmma ? static_cast<int>(wgmma) : -1;
      expect(")");
      return typed(std::move(e));
    }
    if (name == "sum_to") { // before infer_types resolves it
      auto e = make(ExprKind::Reduce);
      e->reduce_op = ReduceOp::Sum;
      e->axis = kSumToLike;
      expect("(");
      e->a = expr();
      expect(",");
      e->b = expr();
      expect(")");
      return typed(std::move(e));
    }
    if (starts_with(name, "reduce_") || starts_with(name, "scan_")) {
      const bool reduce = starts_with(name, "reduce_");
      auto op = reduce_op(name.substr(reduce ? 7 : 5));
      if (!op) fail(str("unknown operation '", name, "'"));
      auto e = make(reduce ? ExprKind::Reduce : ExprKind::Scan);
      e->reduce_op = *op;
      expect("(");
      e->a = expr();
      expect(",");
      expect("axis");
      expect("=");
      e->axis = small_int("an axis", -1, 1);
      if (accept(",")) scratch_arg(*e);
      expect(")");
      return typed(std::move(e));
    }
    if (name == "fence") {
      expect("(");
      expect(")");
      return typed(make(ExprKind::Fence));
    }
    if (name == "solve_tril") {
      auto e = make(ExprKind::SolveTril);
      expect("(");
      e->a = expr();
      if (accept(",")) scratch_arg(*e);
      expect(")");
      return typed(std::move(e));
    }
    if (name == "cluster_sum") {
      auto e = make(ExprKind::ClusterSum);
      expect("(");
      e->a = expr();
      if (accept(",")) scratch_arg(*e);
      expect(")");
      return typed(std::move(e));
    }
    if (name == "convert") {
      auto e = make(ExprKind::Convert);
      size_t layout_at = 0;
      expect("<");
      if (is("frag") || is("shared") || is("scalar")) {
        if (peek().text == ">" || peek().text == ">>") {
          e->type.space = is("frag") ? Space::Frag : is("shared") ? Space::Shared : Space::Scalar;
          ++pos_;
        } else {
          e->var = var_decl(); // staged in a shared tile
        }
      } else {
        layout_at = pos_;
        e->layout = layout(-1);
      }
      expect(">");
      expect("(");
      e->a = expr();
      if (accept(",")) scratch_arg(*e);
      expect(")");
      if (e->layout) {
        // A rank-1 and a [1, N] blocked layout print alike: read it again knowing the rank.
        const size_t end = pos_;
        pos_ = layout_at;
        e->layout = layout(e->a->type.rank());
        pos_ = end;
        e->type.space = Space::Frag;
      }
      return typed(std::move(e));
    }
    pos_--;
    fail(str("unknown operation '", name, "'"));
  }

  /// After '(' expr ':': TYPE ['#' LAYOUT | '#none'] ['typed'] ')'
  ExprPtr annotated(ExprPtr e) {
    e->type = type();
    bool layout_given = false;
    const Layout* l = nullptr;
    if (accept("#")) {
      layout_given = true;
      if (!accept("none")) l = layout(e->type.rank());
    }
    if (accept("typed")) {
      if (e->kind != ExprKind::Const) fail("only a constant is 'typed'");
      e->literal = false;
    }
    expect(")");
    e->layout = layout_given ? l : implied_layout(*e);
    if (layout_given) layout_annotated_.insert(e.get());
    annotated_.insert(e.get());
    return e;
  }

  // ---- statements --------------------------------------------------------------------------
  /// Statements up to a closing '}' (nested) or the end of the text.
  Block block(bool nested) {
    Block out;
    for (;;) {
      next_line();
      if (!at_line()) {
        if (nested)
          fail_at(static_cast<int>(lines_.size()), 1, "expected '}' before the end of the text");
        return out;
      }
      if (is("}")) {
        if (!nested) fail("'}' without an open block");
        return out; // the caller reads the rest of this line
      }
      if (is("param") || is("kernel"))
        fail(str("unexpected ", describe(tok()), " in the kernel's body"));
      out.push_back(stmt());
    }
  }

  void role(Stmt& s) {
    if (accept("producer"))
      s.pipeline_role = Stmt::PipelineRole::Producer;
    else if (accept("producer_input"))
      s.pipeline_role = Stmt::PipelineRole::ProducerInput;
  }

  void slot_and_role(Stmt& s) {
    if (accept("[")) {
      expect("slot");
      s.slot = expr();
      expect("]");
    }
    role(s);
  }

  StmtPtr stmt() {
    // The .tile line comes last on the line; read it first so expressions carry it.
    cur_loc_ = SourceLoc{};
    if (toks_.size() >= 2 && toks_[toks_.size() - 2].kind == Token::Comment) {
      const std::string& c = toks_[toks_.size() - 2].text;
      if (starts_with(c, "line ") && c.size() > 5 && c.size() <= 14 &&
          c.find_first_not_of("0123456789", 5) == std::string::npos)
        cur_loc_ = SourceLoc{source_, std::stoi(c.substr(5)), 1};
    }
    const SourceLoc at = loc_here();
    if (accept("for")) return for_stmt();
    if (accept("if")) return if_stmt();
    if (accept("return")) {
      auto s = std::make_unique<Stmt>(StmtKind::Return);
      s->loc = trailing_loc();
      end_of_line();
      advance_line();
      return s;
    }
    if (accept("barrier")) {
      auto s = std::make_unique<Stmt>(StmtKind::Barrier);
      s->wait_async = accept("wait_async");
      s->note = trailing_note();
      end_of_line();
      advance_line();
      return s;
    }
    if (accept("async_commit")) {
      auto s = std::make_unique<Stmt>(StmtKind::AsyncCommit);
      end_of_line();
      advance_line();
      return s;
    }
    if (accept("async_wait")) {
      auto s = std::make_unique<Stmt>(StmtKind::AsyncWait);
      s->pending = small_int("the groups in flight", 0, 64);
      s->note = trailing_note();
      end_of_line();
      advance_line();
      return s;
    }
    if (accept("mbarrier_arrive")) {
      // mbarrier_arrive [fence_async] @smem[OFF][SLOT]
      auto s = std::make_unique<Stmt>(StmtKind::MbarrierArrive);
      s->fence_async = accept("fence_async");
      expect("@");
      expect("smem");
      expect("[");
      s->barrier_offset = integer("the mbarriers' shared-memory offset");
      expect("]");
      expect("[");
      s->value = expr();
      expect("]");
      s->note = trailing_note();
      end_of_line();
      advance_line();
      return s;
    }
    if (accept("mbarrier_init") || accept("mbarrier_wait")) {
      const bool init = toks_[pos_ - 1].text == "mbarrier_init";
      auto s = std::make_unique<Stmt>(init ? StmtKind::MbarrierInit : StmtKind::MbarrierWait);
      // mbarrier_wait producer: only the thread issuing the TMA copies waits.
      if (!init) s->producer_only = accept("producer");
      expect("@");
      expect("smem");
      expect("[");
      s->barrier_offset = integer("the mbarriers' shared-memory offset");
      expect("]");
      if (init) {
        // mbarrier_init @smem[OFF] xSLOTS arrivals=N
        const int col = tok().col;
        const int64_t n = times_suffix("the mbarrier count (one per ring slot)");
        if (n < 1 || n > 64)
          fail_at(static_cast<int>(line_) + 1, col, "the mbarrier count out of range [1, 64]");
        s->barrier_slots = static_cast<int>(n);
        expect("arrivals");
        expect("=");
        s->barrier_arrivals = small_int("the arrivals per phase", 1, 1024);
      } else {
        // mbarrier_wait @smem[OFF][SLOT] parity=EXPR
        expect("[");
        s->value = expr();
        expect("]");
        expect("parity");
        expect("=");
        s->mask = expr();
      }
      s->note = trailing_note();
      end_of_line();
      advance_line();
      return s;
    }
    if (accept("wgmma_wait")) {
      auto s = std::make_unique<Stmt>(StmtKind::WgmmaWait);
      const SourceLoc at = loc_here();
      const std::string name = ident("the accumulator waited for");
      auto it = vars_.find(name);
      if (it == vars_.end() || !declared_.count(it->second))
        dsl::fail_at(at, str("wgmma_wait of '", name, "', which is not declared"));
      s->var = it->second;
      s->note = trailing_note();
      end_of_line();
      advance_line();
      return s;
    }
    if (accept("store")) {
      auto s = std::make_unique<Stmt>(StmtKind::Store);
      s->access = std::make_unique<Access>(access());
      expect("<-");
      s->value = expr();
      if (accept("mask")) {
        expect("=");
        s->mask = expr();
      }
      role(*s);
      s->loc = trailing_loc();
      end_of_line();
      advance_line();
      return s;
    }
    std::unique_ptr<Stmt> s;
    if (at_type()) {
      s = std::make_unique<Stmt>(StmtKind::Decl);
      s->var = var_decl();
    } else if (tok().kind == Token::Ident &&
               (peek().text == "=" || peek().text == "[" || peek().text == "producer" ||
                peek().text == "producer_input")) {
      s = std::make_unique<Stmt>(StmtKind::Assign);
      std::string name = ident("a variable");
      auto it = vars_.find(name);
      if (it == vars_.end() || !declared_.count(it->second))
        dsl::fail_at(at, str("'", name, "' is assigned before it is declared"));
      s->var = it->second;
    }
    if (s) {
      slot_and_role(*s);
      expect("=");
      s->value = expr();
      // Unless its annotation says otherwise, the value has the variable's layout where it fits.
      if (!layout_annotated_.count(s->value.get()))
        s->value->layout = implied_value_layout(*s->value, *s->var);
      if (s->value->kind == ExprKind::Const && !annotated_.count(s->value.get())) {
        const ExprPtr target = make_var_ref(s->var);
        s->value->type = implied_const_type(*s->value, target.get());
      }
    } else {
      s = std::make_unique<Stmt>(StmtKind::Eval);
      s->value = expr();
      role(*s);
    }
    s->loc = trailing_loc();
    if (s->var && s->kind == StmtKind::Decl && s->loc.known()) s->var->loc = s->loc;
    end_of_line();
    advance_line();
    return s;
  }

  StmtPtr for_stmt() {
    auto s = std::make_unique<Stmt>(StmtKind::For);
    s->note = above_; // the printer writes a loop's note on the line above it
    std::string name = ident("the loop variable");
    Var* v = var_named(name);
    declared_.insert(v);
    v->is_loop_var = true;
    v->type = Type{DType::I32, {}, Space::Scalar};
    if (accept(":")) v->type = type(); // printed when not i32
    s->var = v;
    expect("in");
    expect("[");
    s->lo = expr();
    expect(",");
    s->hi = expr();
    expect(")");
    expect("step");
    s->step = expr();
    if (s->step->kind != ExprKind::Const) fail("a loop's step is a constant");
    if (accept("pipelined")) {
      expect("(");
      expect("stages");
      expect("=");
      s->loop_kind = LoopKind::Pipelined;
      s->stages = small_int("stages", 1, 64);
      if (accept(",")) {
        expect("producer");
        expect("=");
        if (small_int("producer", 1, 1) == 1) s->producer = true;
      }
      expect(")");
    }
    if (accept("unroll")) s->unroll = small_int("unroll", 1, 1 << 16);
    role(*s);
    expect("{");
    s->loc = trailing_loc();
    v->loc = s->loc;
    end_of_line();
    advance_line();
    s->body = block(/*nested=*/true);
    expect("}");
    end_of_line();
    advance_line();
    return s;
  }

  StmtPtr if_stmt() {
    auto s = std::make_unique<Stmt>(StmtKind::If);
    if (accept("producer_warps") || accept("copy_thread") || accept("reduce_warp")) {
      const std::string& word = toks_[pos_ - 1].text;
      s->warp_role = word == "producer_warps" ? WarpRole::Split
                     : word == "copy_thread"  ? WarpRole::CopyThread
                                              : WarpRole::ReduceWarp;
      s->value = make_bool(true, loc_here());
    } else {
      s->value = expr();
    }
    role(*s);
    expect("{");
    s->loc = trailing_loc();
    end_of_line();
    advance_line();
    const bool was_reducing = in_reduce_warp_;
    in_reduce_warp_ = in_reduce_warp_ || s->warp_role == WarpRole::ReduceWarp;
    s->body = block(/*nested=*/true);
    in_reduce_warp_ = was_reducing;
    expect("}");
    if (accept("else")) {
      expect("{");
      end_of_line();
      advance_line();
      s->else_body = block(/*nested=*/true);
      expect("}");
    }
    end_of_line();
    advance_line();
    return s;
  }
};

} // namespace

std::unique_ptr<Kernel> read_kernel(const std::string& path, const std::string& text) {
  return Reader(path, text).run();
}

} // namespace tilejit::ir
