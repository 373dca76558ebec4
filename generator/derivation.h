// Derivation rules over tensor-algebra expressions (after EinNet, OSDI'23):
// a program of stages, each a TensorExpr (ir/expression.h) reading the
// program's inputs or other stages, rewritten by rules that keep its value:
//   split-summation   Σ_{c<C} e  =  Σ_{c<C/k} e[c] + Σ_{c<C/k} e[c + C/k] + ...  (halves, quarters)
//   merge-stages      stages equal up to offsets linear in their position
//                     become one stage with a new traversal iterator g
//   merge-iterators   two adjacent traversal iterators a, b become p = a·B + b
//                     (a = p / B, b = p mod B; readers re-indexed)
//   drop-units        iterators of range 1 are substituted by 0
// (merge-iterators and drop-units apply to stages with a summation only:
// they reshape toward a product's form; elementwise stages reshaped save nothing)
//   permute-iterators a stage's traversal iterators reordered so that one of
//                     its accesses reads in order (a layout change; readers
//                     re-indexed)
//   inline            a stage read by one other stage is substituted into
//                     it, when one of the two only moves elements (a
//                     producer and its consumer become one stage)
// Readers of a stage whose axes change are re-indexed; when the output
// stage changes, a layout stage restores the output's axes. The rules and
// the search are derivation.cpp; programs (keys, evaluation) and the index
// algebra they share derivation_program.{h,cpp}; kernel matching of the
// derived stages generator/derivation_match.h.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ir/expression.h"

namespace tgr::gen {

struct Stage {
  expr::TensorExpr expr;
  // reads[k]: what expression input k is: a stage (>= 0) or program input -1 - reads[k].
  std::vector<int> reads;
};

struct Program {
  std::vector<Shape> inputs;
  std::vector<Stage> stages;
  int output = 0;                  // the stage that is the program's value
  std::vector<std::string> steps;  // the rules applied, in order ("split-summation(c,2)")
};

// One stage computing `e` over the program inputs e.inputs.
Program initial_program(const expr::TensorExpr& e);
Shape tensor_shape(const Program& p, int tensor);
// Text of the stages reachable from the output, numbered in the order they
// are reached: equal programs have equal keys.
std::string program_key(const Program& p);

// The rules: each returns every program it derives at `stage` (none when it
// does not apply there).
std::vector<Program> split_summation(const Program& p, int stage);
std::vector<Program> merge_stages(const Program& p, int stage);
std::vector<Program> merge_iterators(const Program& p, int stage);
std::vector<Program> drop_unit_iterators(const Program& p, int stage);
std::vector<Program> inline_stage(const Program& p, int stage);
std::vector<Program> permute_iterators(const Program& p, int stage);

struct DerivationOptions {
  int max_depth = 3;            // rules applied in a row
  size_t max_programs = 20000;  // a bound on the search; reaching it is reported
};
struct DerivationStats {
  size_t programs = 0;    // distinct programs reached (the start included)
  size_t duplicates = 0;  // derived again, pruned by key
  bool bounded = false;   // max_programs stopped the search
};
// Breadth-first: every distinct program reachable in at most max_depth rule
// applications, the start first.
std::vector<Program> derive(const Program& start, const DerivationOptions& options, DerivationStats& stats);

// The program's value on `inputs` (one per program input), each stage
// evaluated directly (expr::evaluate): the numeric check of a derivation.
Tensor<double> evaluate(const Program& p, const std::vector<Tensor<double>>& inputs);

// The kind of a derivation: its rules' names joined by '+' ("split-summation+merge-stages"),
// "none" for the start.
std::string derivation_kind(const Program& p);

}  // namespace tgr::gen
