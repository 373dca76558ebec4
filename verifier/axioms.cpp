// The axiom file syntax: parser, consistency checks and canonical printing.
#include "verifier/axioms.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "ir/scanner.h"
#include "util/utf8.h"

namespace tgr::axioms {

namespace {

const std::set<std::string, std::less<>>& reserved_words() {
  static const std::set<std::string, std::less<>> words{"axiom", "vars",  "where", "in",       "dim",
                                                        "rank",  "shape", "pick",  "positive", "nonnegative"};
  return words;
}

// The pieces of a parameter value joined by 'x' ("S1xS2" -> S1, S2).
}  // namespace

// ---- kinds ------------------------------------------------------------------

std::string_view kind_name(Kind kind) {
  switch (kind) {
    case Kind::kScalar: return "scalar";
    case Kind::kMatrix: return "matrix";
    case Kind::kBatch: return "batch";
    case Kind::kImage: return "image";
    case Kind::kKernel: return "kernel";
    case Kind::kAny: return "any";
  }
  return "?";
}

namespace {

std::optional<Kind> parse_kind(std::string_view name) {
  for (Kind k : {Kind::kScalar, Kind::kMatrix, Kind::kBatch, Kind::kImage, Kind::kKernel, Kind::kAny})
    if (kind_name(k) == name) return k;
  return std::nullopt;
}

// Every shape whose dimension i ranges over ranges[i], the last fastest.
void product(const std::vector<std::vector<int64_t>>& ranges, std::vector<Shape>& out) {
  Shape s(ranges.size());
  std::function<void(size_t)> rec = [&](size_t d) {
    if (d == ranges.size()) {
      out.push_back(s);
      return;
    }
    for (int64_t v : ranges[d]) {
      s[d] = v;
      rec(d + 1);
    }
  };
  rec(0);
}

}  // namespace

const std::vector<Shape>& kind_shapes(Kind kind) {
  static const std::vector<std::vector<Shape>> table = [] {
    const std::vector<int64_t> small{1, 2, 3}, batch{1, 2}, spatial{1, 2, 3, 4};
    std::vector<std::vector<Shape>> t(6);
    t[static_cast<int>(Kind::kScalar)] = {Shape{}};
    product({small, small}, t[static_cast<int>(Kind::kMatrix)]);
    product({batch, small, small}, t[static_cast<int>(Kind::kBatch)]);
    product({batch, small, spatial, spatial}, t[static_cast<int>(Kind::kImage)]);
    product({small, small, small, small}, t[static_cast<int>(Kind::kKernel)]);
    for (size_t rank = 1; rank <= 4; ++rank)
      product(std::vector<std::vector<int64_t>>(rank, small), t[static_cast<int>(Kind::kAny)]);
    return t;
  }();
  return table[static_cast<int>(kind)];
}

// ---- errors -----------------------------------------------------------------

AxiomError::AxiomError(std::string file, int line, int column, const std::string& message, std::string_view source_line)
    : std::runtime_error(
          file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": error: " + message +
          (source_line.empty() ? std::string() : "\n" + caret_excerpt(source_line, static_cast<size_t>(column)))),
      file_(std::move(file)),
      line_(line),
      column_(column),
      message_(message) {}

const Variable* Axiom::find_variable(std::string_view var_name) const {
  for (const Variable& v : variables)
    if (v.name == var_name) return &v;
  return nullptr;
}

const ParamVar* Axiom::find_param(std::string_view param_name) const {
  for (const ParamVar& p : params)
    if (p.name == param_name) return &p;
  return nullptr;
}

bool is_param_name(std::string_view s) { return !s.empty() && std::isupper(static_cast<unsigned char>(s[0])); }

std::vector<std::string_view> value_tokens(std::string_view raw) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= raw.size(); ++i)
    if (i == raw.size() || raw[i] == 'x') {
      out.push_back(raw.substr(start, i - start));
      start = i + 1;
    }
  return out;
}


bool is_symbolic(const ParamValue& value) {
  const auto* s = std::get_if<std::string>(&value);
  return s && std::any_of(s->begin(), s->end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
}

std::vector<std::string> symbols_of(const ParamValue& value) {
  std::vector<std::string> out;
  if (!is_symbolic(value)) return out;
  for (std::string_view t : value_tokens(std::get<std::string>(value)))
    if (is_param_name(t)) out.emplace_back(t);
  return out;
}

// ---- parser -----------------------------------------------------------------

namespace {

// Axiom files: '#' starts a comment, and "found ..." quotes a whole word.
constexpr Scanner::Style kAxiomFileStyle{true, true, "the end of the file"};

class FileParser : public Scanner {
 public:
  FileParser(std::string_view text, const std::string& file)
      : Scanner(text, 0, std::string_view::npos, kAxiomFileStyle), file_(file) {}

  std::vector<Axiom> parse() {
    std::vector<Axiom> out;
    skip_ws();
    while (pos_ < text_.size()) {
      if (!peek_keyword("axiom")) fail(pos_, "expected 'axiom' to start an entry" + found());
      out.push_back(entry());
      for (size_t i = 0; i + 1 < out.size(); ++i)
        if (out[i].name == out.back().name)
          fail(name_pos_, "axiom '" + out.back().name + "' is already defined at line " +
                                     std::to_string(out[i].line));
    }
    return out;
  }

 private:
  [[noreturn]] void fail(size_t at, const std::string& what) const override {
    auto [line, column] = line_column(at);
    throw AxiomError(file_, line, column, what, line_text(at));
  }

  std::pair<int, int> line_column(size_t at) const {
    at = std::min(at, text_.size());
    int line = 1;
    size_t start = 0;
    for (size_t i = 0; i < at; ++i)
      if (text_[i] == '\n') {
        ++line;
        start = i + 1;
      }
    return {line, static_cast<int>(at - start) + 1};
  }

  std::string_view line_text(size_t at) const {
    at = std::min(at, text_.size());
    size_t start = at;
    while (start > 0 && text_[start - 1] != '\n') --start;
    size_t end = text_.find('\n', start);
    if (end == std::string_view::npos) end = text_.size();
    return text_.substr(start, end - start);
  }

  // ---- one entry ----

  Axiom entry() {
    entry_start_ = pos_;
    pos_ += 5;  // "axiom"
    Axiom ax;
    ax.file = file_;
    ax.line = line_column(entry_start_).first;
    skip_blanks();
    name_pos_ = pos_;
    ax.name = ident("the axiom's name");
    if (is_param_name(ax.name)) fail(name_pos_, "axiom names start with a lower-case letter");
    skip_blanks();
    if (pos_ < text_.size() && text_[pos_] == '[') {
      ++pos_;
      do ax.params.push_back(param_decl(ax));
      while (accept(","));
      expect("]", "to close the axiom's parameters");
    }
    skip_blanks();
    if (pos_ >= text_.size() || text_[pos_] != '#')
      fail(pos_, "expected '# meaning' after the header: every axiom has a one-line comment" + found_on_line());
    ++pos_;
    const size_t comment_start = pos_;
    while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    std::string_view comment = text_.substr(comment_start, pos_ - comment_start);
    while (!comment.empty() && std::isspace(static_cast<unsigned char>(comment.front()))) comment.remove_prefix(1);
    while (!comment.empty() && std::isspace(static_cast<unsigned char>(comment.back()))) comment.remove_suffix(1);
    if (comment.empty()) fail(comment_start - 1, "the comment after the header is empty: say what the axiom means");
    ax.comment = std::string(comment);

    while (true) {
      if (peek_keyword("vars")) {
        pos_ += 4;
        do ax.variables.push_back(var_decl(ax));
        while (accept(","));
      } else if (peek_keyword("where")) {
        pos_ += 5;
        do {
          std::vector<Condition> cs = condition(ax);
          ax.conditions.insert(ax.conditions.end(), cs.begin(), cs.end());
        } while (accept(","));
      } else {
        break;
      }
    }
    skip_ws();
    if (pos_ >= text_.size() || peek_keyword("axiom"))
      fail(pos_, "axiom '" + ax.name + "' has no equation (LHS = RHS)" + found());
    const size_t eq_pos = pos_;
    ax.lhs = tuple(ax);
    skip_ws();
    if (text_.substr(pos_, 2) == "=>") fail(pos_, "write '=' between the two sides of an axiom, not '=>'");
    expect("=", "between the two sides of the axiom");
    ax.rhs = tuple(ax);
    if (ax.lhs.size() != ax.rhs.size())
      fail(eq_pos, "the two sides have different numbers of outputs (" + std::to_string(ax.lhs.size()) + " vs " +
                       std::to_string(ax.rhs.size()) + ")");
    skip_ws();
    if (pos_ < text_.size() && !peek_keyword("axiom"))
      fail(pos_, "expected the next 'axiom' or the end of the file after the equation" + found());
    check(ax);
    return ax;
  }

  std::string found_on_line() {
    skip_blanks();
    if (pos_ >= text_.size() || text_[pos_] == '\n') return ", found the end of the line";
    return ", found '" + std::string(text_.substr(pos_, util::utf8_char_bytes(text_, pos_))) + "'";
  }

  ParamVar param_decl(const Axiom& ax) {
    skip_ws();
    ParamVar p;
    const size_t at = pos_;
    std::tie(p.line, p.column) = line_column(at);
    p.name = ident("a parameter name");
    if (!is_param_name(p.name)) fail(at, "parameter names start with an upper-case letter (A, S1, KH), got '" + p.name + "'");
    if (ax.find_param(p.name)) fail(at, "parameter '" + p.name + "' declared twice");
    if (peek_keyword("in")) {
      skip_ws();
      pos_ += 2;
      if (accept("{")) {
        do {
          skip_ws();
          if (pos_ < text_.size() && is_ident_start(text_[pos_])) p.domain.emplace_back(ident("a value"));
          else p.domain.emplace_back(integer("a value"));
        } while (accept(","));
        expect("}", "to close the values of " + p.name);
      } else {
        const size_t range_at = pos_;
        const int64_t lo = integer("a range 'LO..HI' or values '{V, ...}'");
        expect("..", "in the range of " + p.name);
        const int64_t hi = integer("the end of the range");
        if (hi < lo || hi - lo > 1000) fail(range_at, "bad range " + std::to_string(lo) + ".." + std::to_string(hi));
        for (int64_t v = lo; v <= hi; ++v) p.domain.emplace_back(v);
      }
    }
    return p;
  }

  Variable var_decl(const Axiom& ax) {
    skip_ws();
    Variable v;
    const size_t at = pos_;
    std::tie(v.line, v.column) = line_column(at);
    v.name = ident("a variable name");
    if (is_param_name(v.name)) fail(at, "variable names start with a lower-case letter, got '" + v.name + "'");
    if (OpTable::instance().find(v.name)) fail(at, "'" + v.name + "' is an operator, not a variable name");
    if (reserved_words().count(v.name)) fail(at, "'" + v.name + "' is a reserved word");
    if (ax.find_variable(v.name)) fail(at, "variable '" + v.name + "' declared twice");
    expect(":", "and the variable's kind after its name");
    skip_ws();
    const size_t kind_at = pos_;
    const std::string kind = ident("a kind (scalar, matrix, batch, image, kernel, any)");
    auto k = parse_kind(kind);
    if (!k) fail(kind_at, "unknown kind '" + kind + "' (kinds: scalar, matrix, batch, image, kernel, any)");
    v.kind = *k;
    return v;
  }

  // ---- conditions ----

  std::vector<Condition> condition(const Axiom& ax) {
    skip_ws();
    const size_t at = pos_;
    auto [line, column] = line_column(at);
    for (auto [word, kind] : {std::pair{"positive", Condition::Kind::kPositive},
                              std::pair{"nonnegative", Condition::Kind::kNonnegative}}) {
      if (peek_keyword(word)) {
        pos_ += std::string_view(word).size();
        Condition c;
        c.kind = kind;
        c.line = line;
        c.column = column;
        expect("(", std::string("after ") + word);
        c.var = variable_ref(ax);
        expect(")", "to close " + std::string(word) + "(...)");
        return {c};
      }
    }
    std::vector<Condition> out;
    Term left = term(ax);
    auto cmp = comparison();
    if (!cmp) fail(pos_, "expected a comparison (=, !=, <, <=, >, >=)" + found());
    do {
      Condition c;
      c.line = line;
      c.column = column;
      c.cmp = *cmp;
      c.lhs = left;
      c.rhs = term(ax);
      left = c.rhs;
      out.push_back(std::move(c));
    } while ((cmp = comparison()));
    return out;
  }

  std::optional<Condition::Cmp> comparison() {
    using C = Condition::Cmp;
    skip_ws();
    if (text_.substr(pos_, 2) == "=>") return std::nullopt;
    for (auto [tok, c] : {std::pair{"!=", C::kNe}, std::pair{"<=", C::kLe}, std::pair{">=", C::kGe},
                          std::pair{"<", C::kLt}, std::pair{">", C::kGt}, std::pair{"=", C::kEq}})
      if (accept(tok)) return c;
    return std::nullopt;
  }

  std::string variable_ref(const Axiom& ax) {
    skip_ws();
    const size_t at = pos_;
    std::string name = ident("a variable");
    if (!ax.find_variable(name)) fail(at, "'" + name + "' is not a declared variable (declare it in a vars line first)");
    return name;
  }

  // Terms are evaluated and freed recursively: their depth (nesting, and
  // the left-leaning trees of long + and * chains) is limited like that of
  // expressions (ir/text.h).
  void deeper(int chain) const {
    if (term_depth_ + chain > kMaxExprDepth)
      fail(pos_, "term nested more than " + std::to_string(kMaxExprDepth) + " levels deep (the limit)");
  }
  struct DepthGuard {
    explicit DepthGuard(const FileParser& p) : parser(p) {
      parser.deeper(1);
      ++parser.term_depth_;
    }
    ~DepthGuard() { --parser.term_depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
    const FileParser& parser;
  };

  Term term(const Axiom& ax) {
    Term t = product_term(ax);
    for (int chain = 1;; ++chain) {
      skip_ws();
      Term::Op op;
      if (accept("+")) op = Term::Op::kAdd;
      else if (pos_ < text_.size() && text_[pos_] == '-' && text_.substr(pos_, 2) != "->") {
        ++pos_;
        op = Term::Op::kSub;
      } else break;
      deeper(chain);
      Term r = product_term(ax);
      Term n;
      n.op = op;
      n.args = {std::move(t), std::move(r)};
      t = std::move(n);
    }
    return t;
  }

  Term product_term(const Axiom& ax) {
    Term t = unary_term(ax);
    for (int chain = 1;; ++chain) {
      Term::Op op;
      if (accept("*")) op = Term::Op::kMul;
      else if (accept("/")) op = Term::Op::kDiv;
      else if (accept("%")) op = Term::Op::kMod;
      else break;
      deeper(chain);
      Term r = unary_term(ax);
      Term n;
      n.op = op;
      n.args = {std::move(t), std::move(r)};
      t = std::move(n);
    }
    return t;
  }

  Term unary_term(const Axiom& ax) {
    const DepthGuard guard(*this);
    if (accept("-")) {
      Term n;
      n.op = Term::Op::kNeg;
      n.args = {unary_term(ax)};
      return n;
    }
    return atom(ax);
  }

  Term atom(const Axiom& ax) {
    skip_ws();
    Term t;
    if (accept("(")) {
      t = term(ax);
      expect(")", "to close the parenthesis");
      return t;
    }
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      t.op = Term::Op::kInt;
      t.value = integer("an integer");
      return t;
    }
    const size_t at = pos_;
    const std::string name = ident("a term (an integer, a parameter, dim(v, axis), rank(v), shape(v) or pick(i, ...))");
    if (name == "pick") {  // pick(I, T0, T1, ...): T_I
      expect("(", "after pick");
      t.op = Term::Op::kPick;
      t.args.push_back(term(ax));
      do {
        expect(",", "between the index and the choices of pick(i, t0, t1, ...)");
        t.args.push_back(term(ax));
      } while (!accept(")"));
      return t;
    }
    if (name == "dim" || name == "rank" || name == "shape") {
      expect("(", "after " + name);
      t.op = name == "dim" ? Term::Op::kDim : name == "rank" ? Term::Op::kRank : Term::Op::kShape;
      t.name = variable_ref(ax);
      if (t.op == Term::Op::kDim) {
        expect(",", "between the variable and the axis of dim(v, axis)");
        t.args.push_back(term(ax));
      }
      expect(")", "to close " + name + "(...)");
      return t;
    }
    if (is_param_name(name)) {
      if (!ax.find_param(name)) fail(at, "'" + name + "' is not a parameter of this axiom (declare it in the header: " + ax.name + "[" + name + "])");
      t.op = Term::Op::kParam;
      t.name = name;
      return t;
    }
    if (ax.find_variable(name))
      fail(at, "'" + name + "' is a variable: compare shape(" + name + "), rank(" + name + ") or dim(" + name + ", i)");
    t.op = Term::Op::kWord;  // a word value (same, valid) for a parameter of words
    t.name = name;
    return t;
  }

  // ---- expressions ----

  // A side: the text form's parser (ir/text.h) with two hooks, one that
  // keeps parameter values naming the axiom's parameters as their text
  // ("S1xS2") and one that checks variables and calls against the axiom.
  std::vector<Expr> tuple(const Axiom& ax) {
    ParseHooks hooks;
    hooks.param_value = [&](const OpDef& op, const ParamSpec& spec, std::string_view raw, size_t at) {
      return symbolic_value(ax, op, spec, raw, at);
    };
    hooks.check = [&](const Expr& e) {
      if (e.kind == Expr::Kind::kCall) {
        check_call(*OpTable::instance().find(e.name), e);
      } else if (is_param_name(e.name)) {
        fail(e.pos, "'" + e.name + "' is a parameter; variables start with a lower-case letter");
      } else if (!ax.find_variable(e.name)) {
        fail(e.pos, "variable '" + e.name + "' is not declared (add it to a vars line: vars " + e.name + ": any)");
      }
    };
    try {
      return parse_tuple_at(text_, pos_, hooks);
    } catch (const ParseError& err) {
      fail(err.position(), err.message());
    }
  }

  // Required parameters, and the output selector where the number of
  // outputs is known before the parameters have values (split's sizes
  // S1xS2 has two, whatever S1 and S2 are).
  void check_call(const OpDef& op, const Expr& e) {
    for (const ParamSpec& spec : op.params) {
      bool given = false;
      for (const auto& entry : e.params) given = given || entry.first == spec.name;
      if (!spec.default_value && !given) fail(e.pos, e.name + " needs the parameter '" + spec.name + "'");
    }
    std::vector<std::pair<std::string, ParamValue>> trial;
    for (const auto& [key, value] : e.params) {
      if (!is_symbolic(value)) {
        trial.emplace_back(key, value);
        continue;
      }
      const ParamSpec& spec = *op.find_param(key);
      const auto tokens = value_tokens(std::get<std::string>(value));
      if (tokens.size() == 1 && spec.kind != ParamKind::kInt) return;  // a list or a word: unknown length
      std::string dummy;
      for (size_t i = 0; i < tokens.size(); ++i) {
        if (i) dummy.push_back('x');
        if (is_param_name(tokens[i])) dummy.push_back('1');
        else dummy.append(tokens[i]);
      }
      try {
        trial.emplace_back(key, parse_param_value(spec, dummy));
      } catch (const ParamError&) {
        return;
      }
    }
    int outputs = 1;
    try {
      outputs = op.num_outputs(op.make_params(trial));
    } catch (const ParamError&) {
      return;
    }
    if (outputs > 1 && e.output < 0)
      fail(e.pos, e.name + " has " + std::to_string(outputs) + " outputs: select one with .k, e.g. " + e.name + "(...).0");
    if (e.output >= outputs) fail(e.pos, e.name + " has no output " + std::to_string(e.output));
  }

  // A parameter value that names axiom parameters (A, S1xS2, KHxKW), kept
  // as its text; nothing for a plain value, which the table parses.
  std::optional<ParamValue> symbolic_value(const Axiom& ax, const OpDef& op, const ParamSpec& spec, std::string_view raw,
                                           size_t value_pos) const {
    std::string compact;
    for (char c : raw)
      if (!std::isspace(static_cast<unsigned char>(c))) compact += c;
    if (!is_symbolic(ParamValue(compact))) return std::nullopt;
    size_t offset = 0;
    const auto tokens = value_tokens(compact);
    for (std::string_view t : tokens) {
      int64_t dummy;
      const bool is_int = !t.empty() && std::from_chars(t.data(), t.data() + t.size(), dummy).ptr == t.data() + t.size();
      if (is_param_name(t)) {
        if (!ax.find_param(t))
          fail(value_pos + offset, "'" + std::string(t) + "' is not a parameter of this axiom (declare it in the header: " +
                                       ax.name + "[" + std::string(t) + "])");
      } else if (!is_int) {
        fail(value_pos + offset,
             "bad value '" + compact + "' for " + spec.name + ": write integers and parameters joined by x (S1xS2)");
      }
      offset += t.size() + 1;
    }
    if (spec.kind == ParamKind::kInt && tokens.size() != 1)
      fail(value_pos, "parameter '" + spec.name + "' of " + op.name + " is one integer, given '" + compact + "'");
    if (spec.kind == ParamKind::kFloat) fail(value_pos, "parameters cannot stand for real numbers");
    return ParamValue(compact);
  }

  // ---- consistency ----

  [[noreturn]] void fail_at(int line, int column, const std::string& what) const {
    size_t offset = 0;
    for (int l = 1; l < line && offset < text_.size(); ++offset)
      if (text_[offset] == '\n') ++l;
    throw AxiomError(file_, line, column, what, line_text(offset));
  }

  static void collect(const Expr& e, std::set<std::string>& vars, std::set<std::string>& params,
                      std::map<std::string, bool>& axis_only) {
    if (e.kind == Expr::Kind::kVar) {
      vars.insert(e.name);
      return;
    }
    for (const auto& [key, value] : e.params)
      for (const std::string& s : symbols_of(value)) {
        params.insert(s);
        const bool is_axis = key == "axis" && std::get<std::string>(value) == s;
        auto [it, fresh] = axis_only.emplace(s, is_axis);
        if (!fresh) it->second = it->second && is_axis;
      }
    for (const Expr& a : e.args) collect(a, vars, params, axis_only);
  }

  static void term_symbols(const Term& t, std::set<std::string>& params) {
    if (t.op == Term::Op::kParam) params.insert(t.name);
    for (const Term& a : t.args) term_symbols(a, params);
  }

  void check(Axiom& ax) const {
    std::set<std::string> vars, params;
    std::map<std::string, bool> axis_only;
    for (const Expr& e : ax.lhs) collect(e, vars, params, axis_only);
    for (const Expr& e : ax.rhs) collect(e, vars, params, axis_only);
    for (const Variable& v : ax.variables)
      if (!vars.count(v.name)) fail_at(v.line, v.column, "variable '" + v.name + "' is declared but not used in the equation");
    for (const Condition& c : ax.conditions) {
      term_symbols(c.lhs, params);
      term_symbols(c.rhs, params);
    }
    for (ParamVar& p : ax.params) {
      if (!params.count(p.name)) fail_at(p.line, p.column, "parameter '" + p.name + "' is declared but never used");
      if (!p.domain.empty()) continue;
      for (size_t ci = 0; ci < ax.conditions.size() && p.definition < 0; ++ci) {
        const Condition& c = ax.conditions[ci];
        if (c.kind == Condition::Kind::kCompare && c.cmp == Condition::Cmp::kEq && c.lhs.op == Term::Op::kParam &&
            c.lhs.name == p.name) {
          std::set<std::string> used;
          term_symbols(c.rhs, used);
          if (used.count(p.name)) fail_at(c.line, c.column, "the definition of " + p.name + " uses " + p.name);
          p.definition = static_cast<int>(ci);
        }
      }
      if (p.definition >= 0) continue;
      auto it = axis_only.find(p.name);
      if (it != axis_only.end() && it->second) {
        p.default_domain = true;
        for (int64_t a = 0; a <= 3; ++a) p.domain.emplace_back(a);
        continue;
      }
      fail_at(p.line, p.column, "parameter '" + p.name + "' has no values: give a domain (" + p.name + " in 1..3, " +
                                    p.name + " in {1, 3}) or define it (where " + p.name + " = dim(a, 0))");
    }
  }

  std::string file_;
  size_t entry_start_ = 0;
  size_t name_pos_ = 0;
  mutable int term_depth_ = 0;  // terms open around the current one (DepthGuard)
};

// ---- printing ---------------------------------------------------------------

int precedence(const Term& t) {
  switch (t.op) {
    case Term::Op::kAdd:
    case Term::Op::kSub: return 1;
    case Term::Op::kMul:
    case Term::Op::kDiv:
    case Term::Op::kMod: return 2;
    case Term::Op::kNeg: return 3;
    default: return 4;
  }
}

std::string domain_text(const ParamVar& p) {
  bool range = p.domain.size() >= 2;
  for (size_t i = 0; range && i < p.domain.size(); ++i) {
    const auto* v = std::get_if<int64_t>(&p.domain[i]);
    range = v && (i == 0 || *v == std::get<int64_t>(p.domain[i - 1]) + 1);
  }
  if (range)
    return std::to_string(std::get<int64_t>(p.domain.front())) + ".." + std::to_string(std::get<int64_t>(p.domain.back()));
  std::string s = "{";
  for (size_t i = 0; i < p.domain.size(); ++i) s += (i ? ", " : "") + param_value_to_string(p.domain[i]);
  return s + "}";
}

std::string tuple_text(const std::vector<Expr>& side) {
  if (side.size() == 1) return tgr::to_text(side[0]);
  std::string s = "(";
  for (size_t i = 0; i < side.size(); ++i) s += (i ? ", " : "") + tgr::to_text(side[i]);
  return s + ")";
}

}  // namespace

std::vector<Axiom> parse_axioms(std::string_view text, const std::string& file) { return FileParser(text, file).parse(); }

std::vector<Axiom> load_axioms(const std::filesystem::path& file_or_dir) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  if (fs::is_directory(file_or_dir)) {
    for (const auto& entry : fs::directory_iterator(file_or_dir))
      if (entry.is_regular_file() && entry.path().extension() == ".axioms") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw std::runtime_error("no *.axioms files in '" + file_or_dir.string() + "'");
  } else if (fs::exists(file_or_dir)) {
    files.push_back(file_or_dir);
  } else {
    throw std::runtime_error("no such file or directory '" + file_or_dir.string() + "'");
  }
  std::vector<Axiom> all;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read '" + f.string() + "'");
    std::stringstream buf;
    buf << in.rdbuf();
    const std::string text = buf.str();
    std::vector<Axiom> some = parse_axioms(text, f.string());
    for (Axiom& a : some) {
      for (const Axiom& b : all)
        if (b.name == a.name)
          throw AxiomError(a.file, a.line, 1, "axiom '" + a.name + "' is already defined at " + b.location());
      all.push_back(std::move(a));
    }
  }
  return all;
}

std::string to_text(const Term& t) {
  auto child = [&](const Term& c, bool right) {
    const bool parens = precedence(c) < precedence(t) || (right && precedence(c) == precedence(t));
    return parens ? "(" + to_text(c) + ")" : to_text(c);
  };
  switch (t.op) {
    case Term::Op::kInt: return std::to_string(t.value);
    case Term::Op::kParam:
    case Term::Op::kWord: return t.name;
    case Term::Op::kDim: return "dim(" + t.name + ", " + to_text(t.args[0]) + ")";
    case Term::Op::kRank: return "rank(" + t.name + ")";
    case Term::Op::kShape: return "shape(" + t.name + ")";
    case Term::Op::kPick: {
      std::string s = "pick(";
      for (size_t i = 0; i < t.args.size(); ++i) s += (i ? ", " : "") + to_text(t.args[i]);
      return s + ")";
    }
    case Term::Op::kNeg: return "-" + child(t.args[0], true);
    default: break;
  }
  const char* op = t.op == Term::Op::kAdd ? " + " : t.op == Term::Op::kSub ? " - " : t.op == Term::Op::kMul ? " * "
                   : t.op == Term::Op::kDiv ? " / " : " % ";
  return child(t.args[0], false) + op + child(t.args[1], true);
}

std::string to_text(const Condition& c) {
  switch (c.kind) {
    case Condition::Kind::kPositive: return "positive(" + c.var + ")";
    case Condition::Kind::kNonnegative: return "nonnegative(" + c.var + ")";
    case Condition::Kind::kCompare: break;
  }
  static const char* ops[] = {" = ", " != ", " < ", " <= ", " > ", " >= "};
  return to_text(c.lhs) + ops[static_cast<int>(c.cmp)] + to_text(c.rhs);
}

std::string header_text(const Axiom& ax) {
  std::string s = ax.name;
  if (!ax.params.empty()) {
    s += "[";
    for (size_t i = 0; i < ax.params.size(); ++i) {
      const ParamVar& p = ax.params[i];
      s += (i ? ", " : "") + p.name;
      if (!p.default_domain && p.definition < 0) s += " in " + domain_text(p);
    }
    s += "]";
  }
  return s;
}

std::string equation_text(const Axiom& ax) { return tuple_text(ax.lhs) + " = " + tuple_text(ax.rhs); }

std::string to_text(const Axiom& ax) {
  std::string s = "axiom " + header_text(ax) + "  # " + ax.comment + "\n";
  if (!ax.variables.empty()) {
    s += "  vars ";
    for (size_t i = 0; i < ax.variables.size(); ++i)
      s += (i ? ", " : "") + ax.variables[i].name + ": " + std::string(kind_name(ax.variables[i].kind));
    s += "\n";
  }
  if (!ax.conditions.empty()) {
    s += "  where ";
    for (size_t i = 0; i < ax.conditions.size(); ++i) s += (i ? ", " : "") + to_text(ax.conditions[i]);
    s += "\n";
  }
  return s + "  " + equation_text(ax) + "\n";
}

std::string to_text(const Instance& instance, const Axiom* axiom) {
  std::vector<std::string> vars, params;
  if (axiom) {
    for (const Variable& v : axiom->variables) vars.push_back(v.name);
    for (const ParamVar& p : axiom->params) params.push_back(p.name);
  } else {
    for (const auto& entry : instance.shapes) vars.push_back(entry.first);
    for (const auto& entry : instance.params) params.push_back(entry.first);
  }
  std::string s;
  for (const std::string& name : vars)
    if (auto it = instance.shapes.find(name); it != instance.shapes.end())
      s += (s.empty() ? "" : ", ") + name + "=" + shape_to_string(it->second);
  bool first = true;
  for (const std::string& name : params)
    if (auto it = instance.params.find(name); it != instance.params.end()) {
      s += first ? (s.empty() ? "" : "; ") : ", ";
      s += name + "=" + param_value_to_string(it->second);
      first = false;
    }
  return s;
}

}  // namespace tgr::axioms
