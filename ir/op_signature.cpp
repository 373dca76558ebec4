#include "ir/op_signature.h"

#include "ir/geometry.h"

namespace tgr {

namespace {

// A 1 x 1 convolution that reads no padding: 'valid' and 'same' are one
// computation and one signature.
bool padding_is_moot(const Graph& graph, const Node& node, const std::string& key, const ParamValue& value) {
  return node.op == &known_ops::conv2d() && key == "pad" && node.inputs.size() >= 2 &&
         pointwise_without_padding(graph.shape(node.inputs[1]), value);
}

}  // namespace

std::string op_signature(const Graph& graph, const Node& node) {
  if (!node.is_op()) return node.is_constant() ? "constant" : "input";
  std::string s = node.op->name;
  bool first = true;
  for (const auto& [key, value] : node.params.entries()) {
    const ParamSpec* spec = node.op->find_param(key);
    if (spec && spec->default_value && *spec->default_value == value) continue;
    if (padding_is_moot(graph, node, key, value)) continue;
    s += first ? "[" : ",";
    first = false;
    s += key;
    s += "=";
    s += param_value_to_string(value);
  }
  if (!first) s += "]";
  s += "(";
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (i) s += ",";
    s += dtype_name(graph.dtype(node.inputs[i]));
    s += ":";
    s += shape_to_string(graph.shape(node.inputs[i]));
  }
  s += ")";
  return s;
}

}  // namespace tgr
