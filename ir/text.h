// The canonical text form of graphs and rules (a public interface: tests,
// the `rules` tool and the rules database use it; see README.md).
//
//   expr := var | op ['[' key '=' value {',' key '=' value} ']'] '(' [expr {',' expr}] ')' ['.' k]
//   tuple:= expr | '(' expr {',' expr} ')'
//   rule := tuple '=>' tuple
//
// Parameters equal to their default are omitted when printing; `.k` selects
// output k of a multi-output operator (split) and is required there.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "util/limits.h"

namespace tgr {

// How deeply calls may nest in one expression (rules have a few levels; a
// deeper text is refused with a ParseError rather than overflowing the stack
// of the parser or of the passes that walk expressions recursively).
inline constexpr int kMaxExprDepth = 256;

// The most elements any value of a graph built from text (rules, `run
// --expr`, `verify --prove`) may have: the ONNX importer's default
// (util::Limits::max_elements). `eye[n=20000]` asked the prover's
// evaluation for 3 GB.
inline constexpr int64_t kMaxTextElements = int64_t{1} << 28;

// What a graph built from text may hold unless a caller says otherwise:
// kMaxTextElements per value, no total. A program that evaluates the graph
// (`run --expr`, `run --graph`, `verify --prove`) passes util::Limits, whose
// max_bytes bounds all its values together (rule instances at a model's
// shapes are only built, never evaluated, so they keep this).
inline constexpr util::Limits kTextLimits{kMaxTextElements, INT64_MAX};

// A parsed expression, before shapes are known.
struct Expr {
  enum class Kind { kVar, kCall };
  Kind kind = Kind::kVar;
  std::string name;  // variable or operator name
  std::vector<std::pair<std::string, ParamValue>> params;
  std::vector<Expr> args;
  int output = -1;  // the `.k` selector; -1 when absent
  size_t pos = 0;   // byte offset in the source text
};

struct RuleExpr {
  std::vector<Expr> source, target;
};

// A rule: two graphs over the same input variables (same names, shapes and
// order), with outputs matched by position.
struct Rule {
  Graph source, target;
};

// Errors carry the byte offset and a message that shows the text and a caret.
class ParseError : public std::runtime_error {
 public:
  ParseError(std::string_view text, size_t position, const std::string& what);
  size_t position() const { return position_; }
  const std::string& message() const { return message_; }  // without the text and caret

 private:
  size_t position_;
  std::string message_;
};

using ShapeMap = std::map<std::string, Shape, std::less<>>;
// Element types of variables that are not float (indices, masks).
using DTypeMap = std::map<std::string, DType, std::less<>>;

// "x0=1x3x8x8,k0=4x3x3x3" (commas or spaces between entries); an entry may
// name an element type first, "ids=int64:1x64", which goes to `dtypes`.
// Throws ShapeSyntaxError (ir/shape.h) naming the bad entry.
ShapeMap parse_shape_map(std::string_view text, DTypeMap* dtypes = nullptr);

std::vector<Expr> parse_tuple(std::string_view text);

// Appends the variables of `e` not yet in `names`, in order of first appearance.
void collect_variables(const Expr& e, std::vector<std::string>& names);
RuleExpr parse_rule_expr(std::string_view text);

// For languages that embed the text form (the axioms of specs/): one
// expression or parenthesised tuple of `text` from `pos`, which is moved past
// it. `param_value` sees each parameter value's text before the table parses
// it and may return a value to keep instead (a symbolic one, "S1xS2");
// `check` sees each expression once it is read. Either may throw.
struct ParseHooks {
  std::function<std::optional<ParamValue>(const OpDef& op, const ParamSpec& spec, std::string_view raw, size_t pos)>
      param_value;
  std::function<void(const Expr& e)> check;
};
std::vector<Expr> parse_tuple_at(std::string_view text, size_t& pos, const ParseHooks& hooks);

// Builds a graph from expressions: variables become inputs in order of first
// appearance and must have a shape in `shapes`; equal subexpressions are
// shared. Parameter and shape errors are reported as ParseErrors at the
// operator's position.
// `limits` bound each value's elements and all values' bytes (a ParseError
// at the operator that passes them).
Graph build_graph(std::string_view text, const ShapeMap& shapes, const DTypeMap& dtypes = {},
                  const util::Limits& limits = kTextLimits);
Rule build_rule(std::string_view text, const ShapeMap& shapes, const DTypeMap& dtypes = {},
                const util::Limits& limits = kTextLimits);

// Canonical printing.
std::string to_text(const Expr& expr);
std::string to_text(const std::vector<Expr>& tuple);  // one: expr; several: (e1, e2)
// Appends the text of `expr` (or a tuple); `rename`, when given, gives the
// name printed for each variable (canonical forms rename while printing).
using VariableRenamer = std::function<const std::string&(const std::string&)>;
void append_text(const Expr& expr, std::string& out, const VariableRenamer& rename = {});
void append_text(const std::vector<Expr>& tuple, std::string& out, const VariableRenamer& rename = {});
std::string to_text(const Graph& graph);  // one output: expr; several: (e1, e2)
std::string to_text(const Rule& rule);
Expr to_expr(const Graph& graph, ValueRef value);
// The same, printing the values `leaf` names as variables of that name
// (used to cut a subgraph out of a rule).
Expr to_expr(const Graph& graph, ValueRef value, const std::function<std::optional<std::string>(ValueRef)>& leaf);

// A graph file (.tg, see examples/): '#' comments and lines
//   input NAME SHAPE        declare an input variable
//   let NAME = expr         name an intermediate value (so DAGs stay small)
//   output expr             a graph output (one or more lines)
// `limits` as build_graph's, the inputs' shapes included.
Graph parse_graph_file(std::string_view text, const util::Limits& limits = kTextLimits);

}  // namespace tgr
