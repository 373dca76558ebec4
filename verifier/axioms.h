// The operator axioms of specs/: their file syntax, parser and the C++ form
// the prover and the validator read (see README.md, "Operator axioms").
//
//   axiom NAME ['[' PARAM {',' PARAM} ']']      # one-line meaning (required)
//     vars VAR ':' KIND {',' VAR ':' KIND}       (any number of vars lines)
//     where COND {',' COND}                      (any number of where lines)
//     TUPLE '=' TUPLE                            (the text form of ir/text.h)
//
//   PARAM  := NAME ['in' (INT '..' INT | '{' VALUE {',' VALUE} '}')]
//   COND   := TERM CMP TERM {CMP TERM} | 'positive' '(' VAR ')' | 'nonnegative' '(' VAR ')'
//   CMP    := '=' | '!=' | '<' | '<=' | '>' | '>='
//   TERM   := INT | WORD | PARAM | 'dim' '(' VAR ',' TERM ')' | 'rank' '(' VAR ')' | 'shape' '(' VAR ')'
//             | 'pick' '(' TERM ',' TERM {',' TERM} ')'
//             | TERM ('+' | '-' | '*' | '/' | '%') TERM | '-' TERM | '(' TERM ')'
//
// Parameters are upper-case names (A, S1, KH); an operator parameter's value
// may use them (`axis=A`, `sizes=S1xS2`, `kernel=KHxKW`, `shape=S`). A
// parameter without a domain is defined by a condition `P = TERM` (the first
// one with P alone on the left), or, when it is only ever an `axis=` value,
// ranges over 0..3. `pick(I, T0, T1, ...)` is T_I, undefined when I is out
// of range (composed permutations: R0 = pick(Q0, P0, P1, P2)). An axiom claims its two sides are equal for every
// assignment of variable shapes, parameter values and input values for
// which the conditions hold and both sides type-check. Kinds and domains are
// the small samples validation tries; they do not restrict the claim (a
// restriction is a condition: `where A <= 1`), except that a kind fixes the
// rank (scalar 0, matrix 2, batch 3, image and kernel 4, any: 1 and up).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ir/text.h"

namespace tgr::axioms {

// What a variable stands for: which small shapes instantiation tries.
enum class Kind {
  kScalar,  // rank 0
  kMatrix,  // M x N, M, N in 1..3
  kBatch,   // B x M x N, B in 1..2, M, N in 1..3
  kImage,   // N x C x H x W, N in 1..2, C in 1..3, H, W in 1..4
  kKernel,  // O x I x KH x KW, O, I, KH, KW in 1..3
  kAny,     // ranks 1 to 4, every dimension in 1..3
};
std::string_view kind_name(Kind kind);
// The shapes instantiation tries for a kind, smallest first.
const std::vector<Shape>& kind_shapes(Kind kind);

struct Variable {
  std::string name;
  Kind kind = Kind::kAny;
  int line = 0, column = 0;
};

// A parameter of an axiom (upper-case name). Its values are integers, lists
// of integers (from shape(v)) or words (same, valid), held as ParamValue.
struct ParamVar {
  std::string name;
  std::vector<ParamValue> domain;  // the values validation tries; empty when defined by a condition
  bool default_domain = false;     // an axis without a given domain: 0..3
  int definition = -1;             // index of the defining condition `P = TERM`, or -1
  int line = 0, column = 0;
};

// An integer-, list- or word-valued term of a condition.
struct Term {
  enum class Op { kInt, kWord, kParam, kDim, kRank, kShape, kPick, kAdd, kSub, kMul, kDiv, kMod, kNeg };
  Op op = Op::kInt;
  int64_t value = 0;      // kInt
  std::string name;       // kWord: the word; kParam: the parameter; kDim, kRank, kShape: the variable
  std::vector<Term> args;  // kDim: the axis; kPick: the index, then the choices; binary operators: two; kNeg: one
};

struct Condition {
  enum class Kind {
    kCompare,      // lhs CMP rhs
    kPositive,     // every element of `var` is > 0 (a condition on values)
    kNonnegative,  // every element of `var` is >= 0
  };
  enum class Cmp { kEq, kNe, kLt, kLe, kGt, kGe };
  Kind kind = Kind::kCompare;
  Cmp cmp = Cmp::kEq;
  Term lhs, rhs;
  std::string var;
  int line = 0, column = 0;
};

struct Axiom {
  std::string name, comment;
  std::vector<Variable> variables;  // in declaration order: the inputs of both sides
  std::vector<ParamVar> params;
  std::vector<Condition> conditions;
  // The two sides, as expressions of the text form; a parameter value that
  // names axiom parameters is kept as its text (a string, e.g. "S1xS2"),
  // every other value is parsed and checked against the operator table.
  // Expr::pos is the byte offset in the file.
  std::vector<Expr> lhs, rhs;
  std::string file;
  int line = 0;

  const Variable* find_variable(std::string_view var_name) const;
  const ParamVar* find_param(std::string_view param_name) const;
  std::string location() const { return file + ":" + std::to_string(line); }
};

// A syntax or consistency error: "FILE:LINE:COL: error: MESSAGE", then the
// line and a caret.
class AxiomError : public std::runtime_error {
 public:
  AxiomError(std::string file, int line, int column, const std::string& message, std::string_view source_line = {});
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  int line_, column_;
  std::string message_;
};

// Parses a file's text; `file` names it in errors and in Axiom::file.
std::vector<Axiom> parse_axioms(std::string_view text, const std::string& file = "<text>");
// One file, or every *.axioms file of a directory (sorted by name). Axiom
// names are unique across what is loaded.
std::vector<Axiom> load_axioms(const std::filesystem::path& file_or_dir);

// Canonical text: the entry as parse_axioms reads it back, and its parts.
std::string to_text(const Axiom& axiom);
std::string to_text(const Term& term);
std::string to_text(const Condition& condition);
std::string equation_text(const Axiom& axiom);  // "lhs = rhs"
std::string header_text(const Axiom& axiom);    // "name[A, S1 in 1..3]"

// Whether an operator parameter value of a side names axiom parameters, and
// which ones.
bool is_symbolic(const ParamValue& value);
// The pieces of a parameter value's text between 'x's: "S1xS2" -> {S1, S2},
// "3xKW" -> {3, KW}; and whether a piece names a parameter (upper case).
std::vector<std::string_view> value_tokens(std::string_view raw);
bool is_param_name(std::string_view piece);
std::vector<std::string> symbols_of(const ParamValue& value);

// ---- instances --------------------------------------------------------------

using Bindings = std::map<std::string, ParamValue, std::less<>>;

// One admitted assignment: a shape for every variable and a value for every
// parameter.
struct Instance {
  ShapeMap shapes;
  Bindings params;
  uint64_t ordinal = 0;  // position in the enumeration order
};
// "a=2x3, b=2x1; A=1, S1=2": variables and parameters in the axiom's order
// when it is given, else by name.
std::string to_text(const Instance& instance, const Axiom* axiom = nullptr);

struct Instantiation {
  std::vector<Instance> instances;  // in enumeration order
  uint64_t admitted = 0;            // admitted assignments in all
  bool sampled = false;             // instances is a deterministic sample of them
  uint64_t visited = 0;             // partial assignments tried
};

struct InstantiateOptions {
  size_t limit = 20000;                   // at most this many instances (a sample beyond)
  uint64_t seed = 1;                      // for the sample
  uint64_t max_visited = 50'000'000;      // guard: more partial assignments is an error
};

// Every assignment of shapes (from the kinds) and parameter values (from
// their domains and definitions) for which the conditions hold and both
// sides type-check, enumerated with pruning (each subexpression and
// condition is checked as soon as what it reads is assigned). Beyond
// `limit`, a uniform sample (reservoir, seeded by `seed` and the axiom name).
// Raises AxiomError for a mistake in the axiom found while enumerating (a
// missing `.k`, a condition comparing a list with an integer, too many
// combinations).
Instantiation instantiate(const Axiom& axiom, const InstantiateOptions& options);
Instantiation instantiate(const Axiom& axiom, size_t limit, uint64_t seed = 1);

// A side's expression with the parameters replaced by their values; raises
// ParamError when a value is not legal for the operator.
Expr substitute(const Expr& expr, const Bindings& params);
// Both sides of an instance as graphs over all variables (declaration
// order). Raises ParseError/ShapeError/ParamError like build_rule.
Rule build_instance(const Axiom& axiom, const Instance& instance);

// ---- validation -------------------------------------------------------------

struct CheckOptions {
  size_t max_instances = 20000;
  uint64_t seed = 1;
  double rtol = 1e-9;  // |lhs - rhs| <= rtol * max(1, |lhs|, |rhs|)
};

struct Failure {
  Instance instance;
  std::string what;             // why: a value mismatch, shapes that differ, an error
  int output = -1;              // the worst element: which output,
  std::vector<int64_t> index;   // its index,
  double lhs = 0, rhs = 0;      // and both values
  std::string inputs;           // the input values (small tensors in full)
};

struct AxiomReport {
  const Axiom* axiom = nullptr;
  uint64_t admitted = 0, checked = 0, failed = 0;
  bool sampled = false;
  double max_error = 0;  // largest relative error over the checked instances
  std::vector<Failure> failures;  // the first failing instance (enumeration order)
  std::string error;              // set when the axiom could not be checked
  double seconds = 0;
  bool holds() const { return error.empty() && failed == 0 && admitted > 0; }
};

// Checks one instance with the float64 interpreter on random inputs (seeded);
// returns nothing when both sides agree.
std::optional<Failure> check_instance(const Axiom& axiom, const Instance& instance, uint64_t seed, double rtol,
                                      double* max_error = nullptr);
AxiomReport check_axiom(const Axiom& axiom, const CheckOptions& options);
// All axioms, in parallel (TBB); reports in the order of `axioms`.
std::vector<AxiomReport> check_axioms(const std::vector<Axiom>& axioms, const CheckOptions& options);
// One line per axiom, and the failure's details below it.
std::string format_report(const AxiomReport& report);

}  // namespace tgr::axioms
