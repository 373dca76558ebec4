// The graph IR: a DAG of operator applications over named input variables.
//
// Nodes are stored in an order where every node comes after the nodes it
// reads (add_op enforces it), so index order is a topological order. Each
// node carries a structural hash (operator, parameters, and the hashes of
// its inputs), which find_or_add_op uses to share equal subgraphs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/op_def.h"

namespace tgr {

// One output of one node.
struct ValueRef {
  int32_t node = -1;
  int32_t output = 0;
  friend bool operator==(const ValueRef&, const ValueRef&) = default;
};

struct Node {
  const OpDef* op = nullptr;  // null for graph inputs and constants
  std::string name;           // inputs: the variable name; constants, ops: optional label
  // Operators: optional names of the outputs, per output ("" or absent: none).
  // An imported model's node and value names travel through rewrites in
  // `name` and here, so that the exported model keeps them.
  std::vector<std::string> value_names;
  Params params;
  std::vector<ValueRef> inputs;
  std::vector<Shape> output_shapes;
  std::vector<DType> output_dtypes;
  std::shared_ptr<const ConstantValue> constant;  // set for constants (weights)
  uint64_t hash = 0;                              // structural hash

  bool is_input() const { return op == nullptr && constant == nullptr; }
  bool is_constant() const { return constant != nullptr; }
  bool is_op() const { return op != nullptr; }
};

class Graph {
 public:
  // Declares an input variable; names are unique.
  ValueRef add_input(std::string name, Shape shape, DType dtype = DType::kFloat);
  // A constant tensor (a weight, or a value folded at import). Equal
  // constants hash equally.
  ValueRef add_constant(ConstantValue value, std::string name = "");
  // A constant node of another graph, sharing its stored tensor and hash
  // (graph rewriting copies graphs many times; weights are not copied).
  ValueRef add_shared_constant(const Node& constant);

  // Appends an application of `op`: checks arity, infers output shapes
  // (raising ShapeError), canonicalises parameters. Returns its outputs.
  std::vector<ValueRef> add_op(const OpDef& op, Params params, std::vector<ValueRef> inputs,
                               std::string label = "");
  // As add_op, but returns an existing node with the same structure instead
  // of adding a duplicate (hash-consing). Names are not structure: an
  // existing node keeps its own, and takes `label` and `value_names` only
  // where it has none.
  std::vector<ValueRef> find_or_add_op(const OpDef& op, Params params, std::vector<ValueRef> inputs,
                                       std::string label = "", std::vector<std::string> value_names = {});
  // Convenience for single-output operators, by name with given parameters.
  ValueRef apply(std::string_view op_name, std::vector<ValueRef> inputs,
                 std::vector<std::pair<std::string, ParamValue>> params = {});

  void add_output(ValueRef value, std::string name = "");

  const Node& node(int32_t index) const { return nodes_.at(index); }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Shape& shape(ValueRef v) const { return nodes_.at(v.node).output_shapes.at(v.output); }
  DType dtype(ValueRef v) const { return nodes_.at(v.node).output_dtypes.at(v.output); }
  uint64_t hash(ValueRef v) const;

  const std::vector<int32_t>& inputs() const { return inputs_; }  // input node indices, declared order
  const std::vector<ValueRef>& outputs() const { return outputs_; }
  const std::vector<std::string>& output_names() const { return output_names_; }
  std::optional<ValueRef> find_input(std::string_view name) const;

  // The nodes the outputs depend on (inputs included), in dependency order.
  std::vector<int32_t> topological_order() const;
  // How many times each value is read by live nodes and outputs, indexed
  // [node][output]; what the interpreter uses to free intermediates.
  std::vector<std::vector<int32_t>> use_counts() const;

  // Structural hash of the whole graph: its output hashes, in order.
  uint64_t structural_hash() const;
  int num_ops() const;  // live operator nodes
  // Marks outputs and renames: what an importer needs after building.
  void set_output_name(size_t index, std::string name) { output_names_.at(index) = std::move(name); }
  // Names value `v` unless it has a name: an operator's output
  // (Node::value_names), a constant (its Node::name, the initializer name).
  // Inputs keep theirs.
  void name_value(ValueRef v, const std::string& name);

 private:
  int32_t append(Node node);
  void index_node(int32_t index);  // into by_hash_, once the graph is large enough to have one
  // Checks the inputs, infers output shapes, canonicalises `params`.
  OpDef::Inferred prepare(const OpDef& op, Params& params, const std::vector<ValueRef>& inputs) const;
  std::vector<ValueRef> outputs_of(int32_t index) const;
  // Fills in the names node `index` lacks.
  void give_names(int32_t index, std::string label, std::vector<std::string> value_names);
  void check_ref(ValueRef v) const;

  std::vector<Node> nodes_;
  std::vector<int32_t> inputs_;
  std::vector<ValueRef> outputs_;
  std::vector<std::string> output_names_;
  // Node hashes for find_or_add_op, kept only from kHashIndexFrom nodes on:
  // below, a scan is as fast, and a rule database's hundreds of thousands
  // of small graphs (optimize --rules with generate --max-ops 4) would
  // spend about a kilobyte each on the table.
  static constexpr size_t kHashIndexFrom = 32;
  std::unordered_multimap<uint64_t, int32_t> by_hash_;
  // The run-time operators (OpDef::run_time_owner) its nodes apply, held so
  // that they outlive every graph that uses them and no more.
  std::vector<std::shared_ptr<const OpDef>> run_time_ops_;
};

}  // namespace tgr
