// A graph in Graphviz's dot language: what `optimize --report-html` draws
// (rendered with `dot -Tsvg`) and `rules show ID --dot` prints.
//
// Operators are boxes (operator, parameters, node name, output shape and,
// when given, cost), graph inputs and outputs ellipses, weights small grey
// boxes (or left out: a model's hundreds of weights hide its structure).
// Highlighted nodes are filled with their colour and carry the SVG class
// "highlighted"; every node has the SVG id PREFIX + "n" + index, so that a
// page can find the node it draws.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "ir/text.h"

namespace tgr {

struct DotStyle {
  std::string name = "graph";                          // the digraph's name (also the SVG's title)
  std::string id_prefix;                               // prefix of the SVG ids of nodes and of the cluster
  bool weights = true;                                 // draw constants (else only highlighted ones)
  std::vector<double> node_costs_us;                   // per node (may be empty): shown on operators
  std::unordered_map<int32_t, std::string> highlight;  // node -> fill colour
};

// `graph` as a whole digraph.
std::string graph_to_dot(const Graph& graph, const DotStyle& style = {});

// The statements of `graph` (nodes and edges, without "digraph {...}"),
// every dot id prefixed with style.id_prefix: for a cluster of a larger graph.
std::string graph_dot_statements(const Graph& graph, const DotStyle& style);

// A rule's two sides, side by side: clusters "source" and "target".
std::string rule_to_dot(const Rule& rule, const std::string& title);

// A dot string literal: "text" with quotes, backslashes and line breaks escaped.
std::string dot_quote(const std::string& text);

}  // namespace tgr
