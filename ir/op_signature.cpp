#include "ir/op_signature.h"

#include "ir/geometry.h"
#include "ir/text.h"

namespace tgr {

namespace {

// A 1 x 1 convolution that reads no padding: 'valid' and 'same' are one
// computation and one signature.
bool padding_is_moot(const Graph& graph, const Node& node, const std::string& key, const ParamValue& value) {
  return op_is(node.op, OpKind::kConv2d) && key == "pad" && node.inputs.size() >= 2 &&
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

Graph graph_of_signature(std::string_view signature) {
  // "op[params](dtype:shape,...)": the parameters hold no parentheses, so the
  // operand list opens at the first one.
  const size_t open = signature.find('(');
  if (open == std::string_view::npos || signature.back() != ')')
    throw ParseError(signature, 0, "an operator signature is op[params](dtype:shape,...)");
  const std::string_view operands = signature.substr(open + 1, signature.size() - open - 2);
  std::string text(signature.substr(0, open));
  text += "(";
  ShapeMap shapes;
  DTypeMap dtypes;
  size_t start = 0;
  for (int k = 0; start <= operands.size() && !operands.empty(); ++k) {
    size_t end = operands.find(',', start);
    if (end == std::string_view::npos) end = operands.size();
    const std::string_view operand = operands.substr(start, end - start);
    const size_t colon = operand.find(':');
    if (colon == std::string_view::npos) throw ParseError(signature, open + 1 + start, "an operand is dtype:shape");
    const std::string name = "in" + std::to_string(k);
    shapes[name] = parse_shape(operand.substr(colon + 1));
    const DType dtype = parse_dtype(operand.substr(0, colon));
    if (dtype != DType::kFloat) dtypes[name] = dtype;
    text += (k ? ", " : "") + name;
    start = end + 1;
  }
  text += ")";
  try {
    return build_graph(text, shapes, dtypes);
  } catch (const ParseError&) {  // a multi-output operator (split) is read through a projection
    return build_graph(text + ".0", shapes, dtypes);
  }
}

}  // namespace tgr
