#include "ir/op_signature.h"

#include <algorithm>

namespace tgr {

namespace {

// A 1 x 1 convolution reads no padding: zero pads, 'valid' and 'same' are
// one computation (axiom conv2d_pointwise_padding) and one signature.
bool padding_is_moot(const Graph& graph, const Node& node, const std::string& key, const ParamValue& value) {
  if (node.op->name != "conv2d" || key != "pad" || node.inputs.size() < 2) return false;
  const Shape& k = graph.shape(node.inputs[1]);
  if (k.size() != 4 || k[2] != 1 || k[3] != 1) return false;
  if (const auto* word = std::get_if<std::string>(&value)) return *word == "valid" || *word == "same";
  const auto* pads = std::get_if<std::vector<int64_t>>(&value);
  return pads && std::all_of(pads->begin(), pads->end(), [](int64_t p) { return p == 0; });
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
