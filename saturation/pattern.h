// E-matching a rule's source side (optimizer::DirectedRule::graphs.source)
// in an e-graph.
//
// The source side is a small graph over variables. A match maps every
// variable to a value class and every operator node of the source to an
// e-node of the same operator (with its class), such that the e-node's
// children are the classes its operands matched. Parameters follow the
// optimizer's matcher (optimizer/matcher.h): equal, except shape-dependent
// ones (optimizer::is_shape_param), which take the matched e-node's values,
// and a convolution's 'valid' and 'same' padding, which match each other for
// a 1 x 1 kernel. Commutative operators match their operands in either
// order. Variables must match classes of their element type; several
// variables may match one class.
//
// Rules with several outputs are multi-patterns (Tensat): each output's
// pattern is matched in turn, and the variables and operator nodes they
// share join the matches (the same class throughout). A later output whose
// pattern reads an already bound variable looks only among that class's
// parents. Outputs must match distinct classes. An output of a multi-output
// operator (split) matches the projection class of the matched tuple class.
//
// Unlike the matcher on a graph, no match is rejected for intermediate
// values read elsewhere or for cycles: the e-graph keeps the source, and
// cycles are the runner's business (saturation/runner.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "optimizer/rule_set.h"
#include "saturation/egraph.h"

namespace tgr::saturation {

struct PatternMatch {
  std::vector<ClassId> variables;  // per input of the source graph, declared order
  // Per node of the source graph (kNoClass / 0 for variables): the class the
  // node matched (a tuple class for a multi-output operator), the matched
  // e-node's operator instance, and whether a commutative operator's
  // operands matched in swapped order.
  std::vector<ClassId> classes;
  std::vector<uint32_t> heads;
  std::vector<uint8_t> swapped;
  std::vector<ClassId> outputs;  // per source output: the value class it matched
};

class Pattern {
 public:
  explicit Pattern(const optimizer::DirectedRule& rule);

  using Clock = std::chrono::steady_clock;

  // The matches in a rebuilt e-graph that `keep` accepts (null: all), at
  // most `limit`; with a `deadline`, those found by then (one pattern's
  // search over a large e-graph can take a second). Thread-safe (reads the
  // e-graph only). A pattern of several outputs binds its operator nodes to
  // distinct classes (as optimizer/matcher.h maps them to distinct nodes of
  // a graph): where two of them would share one, its branches are
  // one computation, which a merge would compute twice (ResNet's
  // convolution with relu, its relu and its own add as the two branches of
  // `(relu(add(conv2d(i0, k0), b0)), add(conv2d(i0, k1), b1))`).
  std::vector<PatternMatch> search(const EGraph& egraph, size_t limit,
                                   const std::function<bool(const PatternMatch&)>& keep = {},
                                   std::optional<Clock::time_point> deadline = std::nullopt) const;

  const Graph& source() const { return *source_; }

 private:
  const Graph* source_;
};

}  // namespace tgr::saturation
