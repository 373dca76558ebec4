// What an ONNX operator's import function sees of its node: inputs as graph
// values, attributes, constant operands, and `emit`, which adds an operator
// of the table or, when every input is constant, computes it right away
// (constant folding happens here and nowhere else). Private to optimizer/.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnx/onnx_import.h"

namespace tgr::onnx_io {

class ImportContext {
 public:
  // `opset` is the default domain's; `domain_opset` the node's own domain's.
  ImportContext(Graph& graph, const onnx::NodeProto& node, int64_t opset, std::vector<std::optional<ValueRef>> inputs,
                int64_t domain_opset = -1);

  int64_t opset() const { return opset_; }
  const onnx::NodeProto& node() const { return node_; }

  // Inputs. Optional inputs may be absent (an empty name in ONNX).
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].has_value(); }
  ValueRef input(size_t i) const;
  const Shape& shape(ValueRef v) const { return graph_.shape(v); }
  DType dtype(ValueRef v) const { return graph_.dtype(v); }
  int64_t rank(ValueRef v) const { return static_cast<int64_t>(graph_.shape(v).size()); }

  // The value of input i if it is a constant (an initializer or folded).
  const ConstantValue* constant_input(size_t i) const;
  // The value of v if it is a constant.
  const ConstantValue* constant_value(ValueRef v) const;
  // As above, but the input must be constant: its integers (shape-like
  // operands), or its single float. `what` names the operand in errors.
  std::vector<int64_t> constant_ints(size_t i, const char* what) const;
  double constant_scalar(size_t i, const char* what) const;

  // Attributes.
  bool has_attr(const std::string& name) const { return find_attr(name) != nullptr; }
  int64_t attr_int(const std::string& name, int64_t def) const;
  double attr_float(const std::string& name, double def) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> def = {}) const;
  std::string attr_string(const std::string& name, const std::string& def) const;
  const onnx::TensorProto* attr_tensor(const std::string& name) const;

  // Normalises a possibly negative axis against a rank.
  int64_t axis(int64_t a, int64_t rank) const;

  // Adds operator `op` (folded when all inputs are constant). Float32
  // constants among inputs of a half type (the scalars of a decomposition:
  // GELU's 0.5, Reciprocal's 1) take that type, rounded to it: ONNX gives an
  // operator's float operands one type, so only the importer's own are float32.
  std::vector<ValueRef> emit_multi(const std::string& op, std::vector<ValueRef> inputs,
                                   std::vector<std::pair<std::string, ParamValue>> params = {});
  ValueRef emit(const std::string& op, std::vector<ValueRef> inputs,
                std::vector<std::pair<std::string, ParamValue>> params = {});
  ValueRef constant(ConstantValue value);
  ValueRef reshape(ValueRef v, const Shape& shape);  // no node when the shape is unchanged
  void adopt_half_type(std::vector<ValueRef>& inputs);

  // The node's outputs; an unset output that a later node reads is an error there.
  void set_output(size_t k, ValueRef v);
  const std::vector<std::optional<ValueRef>>& outputs() const { return outputs_; }

  // An OnnxError naming this node, its operator and the opset.
  [[noreturn]] void fail(const std::string& what) const;
  std::string where() const;

  int folded = 0;  // operators computed here

  // The model's limits (ImportOptions::limits) and the bytes of constants
  // import has computed so far, shared by the nodes of one import.
  struct Budget {
    ImportLimits limits;
    int64_t used_bytes = 0;
  };
  Budget* budget = nullptr;
  // Fails, naming the node, when a tensor of `count` elements (a double, so
  // that absurd sizes do not overflow) exceeds the element limit.
  void check_element_count(double count) const;
  void check_elements(const Shape& shape) const;
  // Counts `bytes` of computed constants against the byte limit.
  void charge_bytes(double bytes) const;

 private:
  const onnx::AttributeProto* find_attr(const std::string& name) const;

  Graph& graph_;
  const onnx::NodeProto& node_;
  int64_t opset_;
  int64_t domain_opset_;
  std::vector<std::optional<ValueRef>> inputs_;
  std::vector<std::optional<ValueRef>> outputs_;
};

using OperatorImporter = std::function<void(ImportContext&)>;
// Resize (onnx_import_resize.cpp: a lowering onto gather, mul and add).
void import_resize(ImportContext& c);
// The table of ONNX operator importers (onnx_import_ops.cpp), by op_type.
const std::map<std::string, OperatorImporter>& operator_importers();

}  // namespace tgr::onnx_io
