#include "ir/text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>

#include "ir/scanner.h"

namespace tgr {

void collect_variables(const Expr& e, std::vector<std::string>& names) {
  if (e.kind == Expr::Kind::kVar) {
    if (std::find(names.begin(), names.end(), e.name) == names.end()) names.push_back(e.name);
    return;
  }
  for (const Expr& a : e.args) collect_variables(a, names);
}

namespace {

std::string caret_message(std::string_view text, size_t position, const std::string& what) {
  position = std::min(position, text.size());
  size_t start = position;
  while (start > 0 && text[start - 1] != '\n') --start;
  size_t end = text.find('\n', start);
  if (end == std::string_view::npos) end = text.size();
  size_t line = 1;
  for (size_t i = 0; i < start; ++i) line += text[i] == '\n';
  const size_t column = position - start + 1;
  std::string where = line > 1 || text.find('\n') != std::string_view::npos
                          ? "line " + std::to_string(line) + ", column " + std::to_string(column)
                          : "column " + std::to_string(column);
  return "at " + where + ": " + what + "\n" + caret_excerpt(text.substr(start, end - start), column);
}

// Recursive-descent parser over text[pos, limit).
class Parser : public Scanner {
 public:
  Parser(std::string_view text, size_t pos = 0, size_t limit = std::string_view::npos,
         const ParseHooks* hooks = nullptr)
      : Scanner(text, pos, limit, Style{}), hooks_(hooks) {}

  [[noreturn]] void fail(size_t at, const std::string& what) const override { throw ParseError(text_, at, what); }

  Expr expr() {
    skip_ws();
    // Every later pass over an expression (canonical form, graph building,
    // the prover) recurses too: a depth limit here keeps all of them off the
    // end of the stack and out of quadratic time.
    if (depth_ >= kMaxExprDepth)
      fail(pos_, "expression nested more than " + std::to_string(kMaxExprDepth) + " calls deep (the limit)");
    ++depth_;
    struct Leave {
      int& depth;
      ~Leave() { --depth; }
    } leave{depth_};
    Expr e;
    e.pos = pos_;
    e.name = ident("a variable or an operator");
    const OpDef* op = OpTable::instance().find(e.name);
    if (peek('[') || peek('(')) {
      if (!op) fail(e.pos, "unknown operator '" + e.name + "'");
      e.kind = Expr::Kind::kCall;
      if (accept("[")) params(*op, e);
      expect("(", ("to open the arguments of " + e.name).c_str());
      if (!accept(")")) {
        do e.args.push_back(expr());
        while (accept(","));
        expect(")", ("to close the arguments of " + e.name).c_str());
      }
      if (!op->accepts_input_count(e.args.size()))
        fail(e.pos, e.name + " takes " + (op->variadic ? "at least " : "") + std::to_string(op->inputs.size()) +
                        " argument(s), given " + std::to_string(e.args.size()));
    } else if (op) {
      fail(e.pos, "'" + e.name + "' is an operator, not a variable: write " + e.name + "(...)");
    }
    if (accept(".")) {
      skip_ws();
      const size_t at = pos_;
      int k = -1;
      auto [ptr, ec] = std::from_chars(text_.data() + pos_, text_.data() + limit_, k);
      if (ec != std::errc() || k < 0) fail(at, "expected an output number after '.'");
      pos_ = ptr - text_.data();
      e.output = k;
    }
    if (hooks_ && hooks_->check) hooks_->check(e);
    return e;
  }

  // A single expression, or a parenthesised tuple of them.
  std::vector<Expr> tuple() {
    std::vector<Expr> out;
    if (accept("(")) {
      do out.push_back(expr());
      while (accept(","));
      expect(")", "to close the tuple");
    } else {
      out.push_back(expr());
    }
    return out;
  }

 private:
  void params(const OpDef& op, Expr& e) {
    do {
      skip_ws();
      const size_t key_pos = pos_;
      std::string key = ident("a parameter name");
      const ParamSpec* spec = op.find_param(key);
      if (!spec) {
        std::string known;
        for (const auto& p : op.params) known += (known.empty() ? "" : ", ") + p.name;
        fail(key_pos, op.name + " has no parameter '" + key + "'" +
                          (known.empty() ? " (it takes none)" : " (it takes: " + known + ")"));
      }
      for (const auto& [k, v] : e.params)
        if (k == key) fail(key_pos, "parameter '" + key + "' given twice");
      expect("=", "after the parameter name");
      skip_ws();
      const size_t value_pos = pos_;
      while (pos_ < limit_ && text_[pos_] != ',' && text_[pos_] != ']') ++pos_;
      std::string_view raw = text_.substr(value_pos, pos_ - value_pos);
      while (!raw.empty() && std::isspace(static_cast<unsigned char>(raw.back()))) raw.remove_suffix(1);
      if (hooks_ && hooks_->param_value) {
        if (std::optional<ParamValue> kept = hooks_->param_value(op, *spec, raw, value_pos)) {
          e.params.emplace_back(key, std::move(*kept));
          continue;
        }
      }
      try {
        ParamValue value = parse_param_value(*spec, raw);
        check_param_value(op.name, *spec, value);
        e.params.emplace_back(key, std::move(value));
      } catch (const ParamError& err) {
        fail(value_pos, err.what());
      }
    } while (accept(","));
    expect("]", "to close the parameters");
  }

  const ParseHooks* hooks_;
  int depth_ = 0;  // calls open around the current expression
};

// Turns expressions into graph nodes; `bound` maps names to values.
class Builder {
 public:
  Builder(std::string_view text, Graph& graph, const util::Limits& limits)
      : text_(text), graph_(graph), limits_(limits) {}

  std::map<std::string, ValueRef, std::less<>> bound;

  ValueRef build(const Expr& e) {
    if (e.kind == Expr::Kind::kVar) {
      auto it = bound.find(e.name);
      if (it == bound.end()) throw ParseError(text_, e.pos, "variable '" + e.name + "' has no shape");
      if (e.output > 0) throw ParseError(text_, e.pos, "'" + e.name + "' has only one output");
      return it->second;
    }
    std::vector<ValueRef> args;
    for (const Expr& a : e.args) args.push_back(build(a));
    const OpDef& op = OpTable::instance().get(e.name);
    std::vector<ValueRef> outs;
    const size_t nodes = graph_.nodes().size();
    try {
      outs = graph_.find_or_add_op(op, op.make_params(e.params), std::move(args));
    } catch (const ParamError& err) {
      throw ParseError(text_, e.pos, err.what());
    } catch (const ShapeError& err) {
      throw ParseError(text_, e.pos, err.what());
    }
    if (graph_.nodes().size() > nodes)  // a new node, not a shared one
      for (ValueRef v : outs) check_size(e.pos, graph_.shape(v), graph_.dtype(v));
    if (outs.size() > 1 && e.output < 0)
      throw ParseError(text_, e.pos, e.name + " has " + std::to_string(outs.size()) +
                                         " outputs: select one with ." + "k, e.g. " + e.name + "(...).0");
    const int k = std::max(e.output, 0);
    if (k >= static_cast<int>(outs.size()))
      throw ParseError(text_, e.pos, e.name + " has no output " + std::to_string(k));
    return outs[k];
  }

  // A value beyond the element limit, or one that takes the graph's values
  // past the byte limit, is a ParseError at `pos`.
  void check_size(size_t pos, const Shape& shape, DType dtype, const std::string& what = "a tensor") {
    double count = 1;
    for (int64_t d : shape) count *= static_cast<double>(d);
    if (!util::within(count, limits_.max_elements))
      throw ParseError(text_, pos,
                       what + " of shape " + shape_to_string(shape) + " has more than " +
                           std::to_string(limits_.max_elements) + " elements (the limit for rules and expressions)");
    bytes_ += count * (dtype == DType::kFloat ? sizeof(float) : sizeof(int64_t));
    if (!util::within(bytes_, limits_.max_bytes))
      throw ParseError(text_, pos, util::byte_limit_message("the graph's values", bytes_, limits_));
  }

 private:
  std::string_view text_;
  Graph& graph_;
  util::Limits limits_;
  double bytes_ = 0;  // of the values built so far
};

void declare_inputs(std::string_view text, const std::vector<const Expr*>& roots, const ShapeMap& shapes,
                    const DTypeMap& dtypes, std::vector<Graph*> graphs, std::vector<Builder*> builders) {
  std::vector<std::string> names;
  for (const Expr* e : roots) collect_variables(*e, names);
  for (const std::string& name : names) {
    auto it = shapes.find(name);
    if (it == shapes.end()) {
      // Point at the first use.
      size_t at = 0;
      for (const Expr* e : roots) {
        std::vector<const Expr*> stack{e};
        while (!stack.empty() && at == 0) {
          const Expr* x = stack.back();
          stack.pop_back();
          if (x->kind == Expr::Kind::kVar && x->name == name) at = x->pos + 1;
          for (const Expr& a : x->args) stack.push_back(&a);
        }
      }
      throw ParseError(text, at ? at - 1 : 0, "variable '" + name + "' has no shape (give one, e.g. " + name + "=1x3x8x8)");
    }
    auto type = dtypes.find(name);
    const DType dtype = type == dtypes.end() ? DType::kFloat : type->second;
    builders[0]->check_size(0, it->second, dtype, "variable '" + name + "'");
    for (size_t i = 0; i < graphs.size(); ++i) builders[i]->bound[name] = graphs[i]->add_input(name, it->second, dtype);
  }
}

}  // namespace

ParseError::ParseError(std::string_view text, size_t position, const std::string& what)
    : std::runtime_error(caret_message(text, position, what)), position_(position), message_(what) {}

ShapeMap parse_shape_map(std::string_view text, DTypeMap* dtypes) {
  ShapeMap out;
  size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && (text[pos] == ',' || std::isspace(static_cast<unsigned char>(text[pos])))) ++pos;
    if (pos >= text.size()) break;
    size_t end = pos;
    while (end < text.size() && text[end] != ',' && !std::isspace(static_cast<unsigned char>(text[end]))) ++end;
    std::string_view entry = text.substr(pos, end - pos);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0)
      throw ShapeSyntaxError("bad shape entry '" + std::string(entry) + "': expected NAME=DIMS, e.g. x0=1x3x8x8");
    const std::string name(entry.substr(0, eq));
    std::string_view dims = entry.substr(eq + 1);
    if (const size_t colon = dims.find(':'); colon != std::string_view::npos) {
      if (!dtypes) throw ShapeSyntaxError("bad shape entry '" + std::string(entry) + "': no element types here");
      try {
        (*dtypes)[name] = parse_dtype(dims.substr(0, colon));
      } catch (const ShapeError& e) {
        throw ShapeSyntaxError("bad shape entry '" + std::string(entry) + "': " + e.what());
      }
      dims = dims.substr(colon + 1);
    }
    out[name] = parse_shape(dims);
    pos = end;
  }
  return out;
}

std::vector<Expr> parse_tuple(std::string_view text) {
  Parser p(text);
  std::vector<Expr> out = p.tuple();
  p.expect_end();
  return out;
}

std::vector<Expr> parse_tuple_at(std::string_view text, size_t& pos, const ParseHooks& hooks) {
  Parser p(text, pos, std::string_view::npos, &hooks);
  std::vector<Expr> out = p.tuple();
  pos = p.pos();
  return out;
}

RuleExpr parse_rule_expr(std::string_view text) {
  Parser p(text);
  RuleExpr rule;
  rule.source = p.tuple();
  p.expect("=>", "between the two sides of a rule");
  rule.target = p.tuple();
  p.expect_end();
  if (rule.source.size() != rule.target.size())
    throw ParseError(text, 0, "the two sides have different numbers of outputs (" +
                                  std::to_string(rule.source.size()) + " vs " +
                                  std::to_string(rule.target.size()) + ")");
  return rule;
}

Graph build_graph(std::string_view text, const ShapeMap& shapes, const DTypeMap& dtypes, const util::Limits& limits) {
  std::vector<Expr> exprs = parse_tuple(text);
  Graph g;
  Builder b(text, g, limits);
  std::vector<const Expr*> roots;
  for (const Expr& e : exprs) roots.push_back(&e);
  declare_inputs(text, roots, shapes, dtypes, {&g}, {&b});
  for (const Expr& e : exprs) g.add_output(b.build(e));
  return g;
}

Rule build_rule(std::string_view text, const ShapeMap& shapes, const DTypeMap& dtypes, const util::Limits& limits) {
  RuleExpr r = parse_rule_expr(text);
  Rule rule;
  Builder src(text, rule.source, limits), dst(text, rule.target, limits);
  std::vector<const Expr*> roots;
  for (const Expr& e : r.source) roots.push_back(&e);
  for (const Expr& e : r.target) roots.push_back(&e);
  declare_inputs(text, roots, shapes, dtypes, {&rule.source, &rule.target}, {&src, &dst});
  for (size_t i = 0; i < r.source.size(); ++i) {
    const size_t at = r.target[i].pos;
    rule.source.add_output(src.build(r.source[i]));
    rule.target.add_output(dst.build(r.target[i]));
    if (rule.source.shape(rule.source.outputs()[i]) != rule.target.shape(rule.target.outputs()[i]))
      throw ParseError(text, at, "output " + std::to_string(i) + " has shape " +
                                     shape_to_string(rule.source.shape(rule.source.outputs()[i])) +
                                     " on the left but " +
                                     shape_to_string(rule.target.shape(rule.target.outputs()[i])) + " on the right");
  }
  return rule;
}

void append_text(const Expr& e, std::string& out, const VariableRenamer& rename) {
  if (e.kind == Expr::Kind::kVar) {
    out += rename ? rename(e.name) : e.name;
  } else {
    out += e.name;
    if (!e.params.empty()) {
      out += '[';
      for (size_t i = 0; i < e.params.size(); ++i) {
        if (i) out += ", ";
        out += e.params[i].first;
        out += '=';
        out += param_value_to_string(e.params[i].second);
      }
      out += ']';
    }
    out += '(';
    for (size_t i = 0; i < e.args.size(); ++i) {
      if (i) out += ", ";
      append_text(e.args[i], out, rename);
    }
    out += ')';
  }
  if (e.output >= 0) {
    out += '.';
    out += std::to_string(e.output);
  }
}

void append_text(const std::vector<Expr>& tuple, std::string& out, const VariableRenamer& rename) {
  if (tuple.size() == 1) {
    append_text(tuple[0], out, rename);
    return;
  }
  out += '(';
  for (size_t i = 0; i < tuple.size(); ++i) {
    if (i) out += ", ";
    append_text(tuple[i], out, rename);
  }
  out += ')';
}

std::string to_text(const Expr& e) {
  std::string s;
  append_text(e, s);
  return s;
}

std::string to_text(const std::vector<Expr>& tuple) {
  std::string s;
  append_text(tuple, s);
  return s;
}

Expr to_expr(const Graph& graph, ValueRef value) { return to_expr(graph, value, [](ValueRef) { return std::nullopt; }); }

Expr to_expr(const Graph& graph, ValueRef value, const std::function<std::optional<std::string>(ValueRef)>& leaf) {
  if (auto name = leaf(value)) {
    Expr var;
    var.name = *name;
    return var;
  }
  const Node& n = graph.node(value.node);
  Expr e;
  if (n.is_constant()) {  // weights print as a leaf: their name, or a hash
    char tag[32];
    std::snprintf(tag, sizeof tag, "const_%08llx", static_cast<unsigned long long>(n.hash & 0xffffffffULL));
    e.name = n.name.empty() ? tag : n.name;
    return e;
  }
  e.name = n.is_input() ? n.name : n.op->name;
  if (n.is_input()) return e;
  e.kind = Expr::Kind::kCall;
  for (const auto& [key, v] : n.params.entries()) {
    const ParamSpec* spec = n.op->find_param(key);
    if (!(spec->default_value && *spec->default_value == v)) e.params.emplace_back(key, v);
  }
  for (ValueRef in : n.inputs) e.args.push_back(to_expr(graph, in, leaf));
  if (n.output_shapes.size() > 1) e.output = value.output;
  return e;
}

std::string to_text(const Graph& graph) {
  std::vector<Expr> outputs;
  for (ValueRef v : graph.outputs()) outputs.push_back(to_expr(graph, v));
  return to_text(outputs);
}

std::string to_text(const Rule& rule) { return to_text(rule.source) + " => " + to_text(rule.target); }

Graph parse_graph_file(std::string_view text, const util::Limits& limits) {
  Graph g;
  Builder b(text, g, limits);
  size_t line_start = 0;
  while (line_start <= text.size()) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    size_t hash = text.find('#', line_start);
    const size_t limit = (hash != std::string_view::npos && hash < line_end) ? hash : line_end;
    Parser p(text, line_start, limit);
    if (!p.at_end()) {
      const size_t kw_pos = p.pos();
      const std::string keyword = p.ident("'input', 'let' or 'output'");
      if (keyword == "input") {
        const size_t name_pos = p.pos();
        std::string name = p.ident("an input name");
        if (b.bound.count(name)) p.fail(name_pos, "'" + name + "' is already defined");
        p.skip_ws();
        const size_t shape_pos = p.pos();
        std::string_view shape_text = text.substr(shape_pos, limit - shape_pos);
        while (!shape_text.empty() && std::isspace(static_cast<unsigned char>(shape_text.back())))
          shape_text.remove_suffix(1);
        Shape shape;
        try {
          shape = parse_shape(shape_text);
        } catch (const ShapeSyntaxError& err) {
          p.fail(shape_pos, err.what());
        }
        b.check_size(shape_pos, shape, DType::kFloat, "input '" + name + "'");
        b.bound[name] = g.add_input(name, shape);
      } else if (keyword == "let") {
        const size_t name_pos = p.pos();
        std::string name = p.ident("a name");
        if (b.bound.count(name) || OpTable::instance().find(name))
          p.fail(name_pos, "'" + name + "' is already defined");
        p.expect("=", "after the name");
        Expr e = p.expr();
        p.expect_end();
        b.bound[name] = b.build(e);
      } else if (keyword == "output") {
        Expr e = p.expr();
        p.expect_end();
        g.add_output(b.build(e));
      } else {
        p.fail(kw_pos, "expected 'input', 'let' or 'output', found '" + keyword + "'");
      }
    }
    line_start = line_end + 1;
  }
  if (g.outputs().empty()) throw ParseError(text, text.size(), "the graph has no 'output' line");
  return g;
}

}  // namespace tgr
