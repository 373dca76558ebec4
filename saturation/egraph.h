// An e-graph of tensor programs: many equivalent graphs in one structure
// (egg, Willsey et al. POPL'21; Tensat, Yang et al. MLSys'21).
//
// Semantics. An e-class is a set of e-nodes that compute the same value
// (proved so: every union comes from a rule instance proved at the class's
// shapes, saturation/rewrite.h). An e-node is an operator applied to e-classes
// (any member of a child class may stand for it), a graph input, or a
// constant (a weight). Hash-consing keeps each e-node once: adding an e-node
// that exists returns its class.
//
// Multi-output operators (split): the operator's e-node lives in a *tuple
// class*, whose value is the tuple of all its outputs; output k is read
// through a projection e-node `project[k](tuple class)`, which lives in an
// ordinary *value class*. Operators read value classes only, so a tuple
// class is only ever a child of projections. Single-output operators are
// e-nodes of value classes directly.
//
// Analysis. Each class carries its outputs' shapes and element types (one
// of each for a value class, one per output for a tuple class) and whether
// it is *constant*: some member is computed from weights only (a constant,
// or a non-opaque operator whose children are all constant classes); such
// values are folded at export and cost nothing (optimizer/cost_model.h).
// Every member of a class must agree on shapes and types; a disagreement
// means a bug (an unsound union or a wrong shape inference) and throws
// std::logic_error naming both sides.
//
// Invariants. Unions are deferred egg-style: merge() joins two classes at
// once (find() sees it at once), and rebuild() restores congruence closure
// (two e-nodes equal after canonicalising their children are in one class)
// and the indexes the matcher reads (classes by operator, nodes sorted and
// deduplicated, parent lists). Between merge() and rebuild(), class node
// lists may hold non-canonical children and duplicates, and until
// restore_congruence() (the first half of rebuild()) hash-consing may miss
// an e-node whose children were merged, adding a duplicate. Read-only use
// (matching, extraction) needs a rebuilt e-graph; the const methods are then
// safe to call from several threads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace tgr::saturation {

using ClassId = uint32_t;
inline constexpr ClassId kNoClass = UINT32_MAX;

enum class NodeKind : uint8_t { kInput, kConstant, kOp, kProject };

struct ENode {
  NodeKind kind = NodeKind::kOp;
  // kInput, kConstant: the leaf's index (EGraph::leaf); kOp: the operator
  // instance (EGraph::op_instance: operator and parameters); kProject: the
  // output index.
  uint32_t head = 0;
  std::vector<ClassId> children;  // kOp: operand classes; kProject: {tuple class}
  // The rule application that first added this e-node (0: the input graph);
  // bookkeeping for reports, not part of the e-node's identity.
  uint32_t origin = 0;
  // kOp: the names it carries (EGraph::label; 0: none), a model node's or
  // those a rewrite gave (optimizer/node_names.h); not part of its identity.
  uint32_t label = 0;
  // The class id this e-node was first added under (EGraph::add_node: every
  // new e-node starts a class of its own); not part of its identity. The
  // union log (EGraph::log_unions) explains congruences through it.
  ClassId self = UINT32_MAX;

  bool same_as(const ENode& other) const {
    return kind == other.kind && head == other.head && children == other.children;
  }
};

struct ENodeHash {
  size_t operator()(const ENode& n) const;
};
struct ENodeEqual {
  bool operator()(const ENode& a, const ENode& b) const { return a.same_as(b); }
};

// An operator with its parameters, interned: e-nodes refer to it by index.
struct OpInstance {
  const OpDef* op = nullptr;
  Params params;
  uint64_t hash = 0;
};

// The names of an operator node (Node::name, Node::value_names).
struct NodeLabel {
  std::string name;
  std::vector<std::string> value_names;
};

// One union of the log (EGraph::log_unions): `a` and `b`, ids of the two
// classes as they were joined (not necessarily canonical then). A rule
// application (`origin` > 0, ENode::origin's numbering) joined a class its
// pattern matched and its target's; a congruence (`origin` 0) joined two
// e-nodes that became equal, `a` and `b` being their ENode::self ids.
// Only unions that joined two classes are logged: the log is a spanning
// forest of every class (egg's proof forest), so any two ids of one class
// are connected by exactly one path of logged unions.
struct UnionRecord {
  ClassId a = 0, b = 0;
  uint32_t origin = 0;
};

struct ClassData {
  std::vector<Shape> shapes;  // value class: one; tuple class: one per output
  std::vector<DType> dtypes;
  bool tuple = false;
  bool constant = false;
};

struct EClass {
  std::vector<ENode> nodes;
  // (e-node, its class) for every e-node that has this class as a child;
  // canonical and deduplicated after rebuild().
  std::vector<std::pair<ENode, ClassId>> parents;
  ClassData data;
};

class EGraph {
 public:
  // Leaves. Inputs are keyed by name, constants by their stored tensor.
  ClassId add_input(const Node& input);
  ClassId add_constant(const Node& constant);
  // An operator over value classes: its class (the tuple class for a
  // multi-output operator). Infers the output shapes and canonicalises the
  // parameters as Graph::add_op does (raising its ShapeError/ParamError).
  ClassId add_op(const OpDef& op, Params params, std::vector<ClassId> operands, uint32_t origin = 0,
                 uint32_t label = 0);
  // Output `k` of a tuple class.
  ClassId add_project(ClassId tuple, uint32_t k, uint32_t origin = 0);
  // The value classes of an operator's outputs (projections of its tuple class where it has several).
  std::vector<ClassId> add_op_outputs(const OpDef& op, Params params, std::vector<ClassId> operands,
                                      uint32_t origin = 0, uint32_t label = 0);
  // Names for an operator e-node (ENode::label). An e-node that exists
  // already keeps the names it was first added with.
  uint32_t add_label(NodeLabel label);
  const NodeLabel& label(uint32_t index) const { return labels_.at(index); }
  // Every node the graph's outputs need (operators with their names);
  // returns the output classes, in order.
  std::vector<ClassId> add_graph(const Graph& graph);

  // The class an e-node (with canonical children) is in, or kNoClass.
  ClassId lookup(const ENode& node) const;
  // The class of an operator over value classes as add_op would build it
  // (parameters canonicalised), or kNoClass where the e-graph lacks it.
  // Adds nothing; thread-safe on a rebuilt e-graph.
  ClassId lookup_op(const OpDef& op, Params params, const std::vector<ClassId>& operands) const;

  // Union-find representative.
  ClassId find(ClassId id) const;
  // Joins two classes; false when they were one already. Throws
  // std::logic_error when their shapes or element types differ.
  // `origin`: the rule application that proved them equal (UnionRecord).
  bool merge(ClassId a, ClassId b, uint32_t origin = 0);
  // Keeps a log of unions from now on (UnionRecord), and every e-node added
  // from now on as it was added (original_node), for explanations
  // (saturation/derive.h). Call on an empty e-graph.
  void log_unions();
  bool logs_unions() const { return log_unions_; }
  const std::vector<UnionRecord>& union_log() const { return union_log_; }
  // What rule application `origin` relied on besides its instance: pairs of
  // ids it took to be one class (an e-node it added or found, and the
  // operand it was given). Recorded by apply_proved when logging.
  void add_premises(uint32_t origin, std::vector<std::pair<ClassId, ClassId>> premises);
  const std::vector<std::pair<ClassId, ClassId>>& premises(uint32_t origin) const;
  // The ENode::self of the e-node the last add_* call added or found.
  ClassId last_added_node() const { return last_added_; }
  // The e-node that created class id `self` (children as they were then); log_unions only.
  const ENode& original_node(ClassId self) const { return originals_.at(self); }
  // Restores congruence closure (egg's worklist: the parents of merged
  // classes re-canonicalised, congruent ones merged) without rebuilding the
  // indexes; afterwards hash-consing sees every merge. Cycle filtering calls
  // it after each union, so that every union is checked on a
  // congruence-closed e-graph (saturation/rewrite.h).
  void restore_congruence();
  // restore_congruence(), then the indexes (see the header comment).
  void rebuild();
  bool clean() const { return pending_.empty() && !dirty_; }

  // Whether `to` is reachable from `from` through the children of e-nodes
  // (from == to counts). Works between merge() and rebuild(); not
  // thread-safe (it marks visited classes in the e-graph).
  bool reaches(ClassId from, ClassId to) const;

  // Tensat's cycle removal, for a rebuilt e-graph: filters e-nodes out of
  // their classes until no class reaches itself, never one of `keep` (per
  // class, the index of an e-node to keep, or -1; an acyclic choice such as
  // greedy extraction's, so that every class it covers keeps an acyclic
  // derivation). Each cycle loses one of its other e-nodes, the one nearest
  // to where a depth-first search closes it. A filtered e-node is out of
  // matching, extraction and reaches(), but stays known to hash-consing:
  // adding it again returns its class and does not bring it back. Returns
  // how many e-nodes were filtered.
  size_t break_cycles(std::vector<int32_t> keep);

  // Whether no class reaches itself through the children of its e-nodes;
  // when not and `cycle` is given, the classes of one cycle.
  bool acyclic(std::vector<ClassId>* cycle = nullptr) const;

  // Access (canonical ids).
  const EClass& eclass(ClassId id) const { return classes_.at(find(id)); }
  const ClassData& data(ClassId id) const { return eclass(id).data; }
  std::vector<ClassId> class_ids() const;  // canonical classes, ascending
  size_t num_classes() const { return num_classes_; }
  // E-nodes: exact after rebuild(), an upper bound between merge() and rebuild().
  size_t num_nodes() const { return num_nodes_; }
  const OpInstance& op_instance(uint32_t head) const { return op_instances_.at(head); }
  const OpDef* op_of(const ENode& n) const { return n.kind == NodeKind::kOp ? op_instances_[n.head].op : nullptr; }
  const Node& leaf(uint32_t index) const { return leaves_.at(index); }
  // After rebuild(): the classes holding an e-node of `op`, and that class's
  // e-nodes of `op` (contiguous: nodes are sorted by kind and operator).
  std::span<const ClassId> classes_with_op(const OpDef* op) const;
  std::span<const ENode> nodes_with_op(ClassId id, const OpDef* op) const;
  std::span<const ENode> projections(ClassId id) const;  // the class's kProject e-nodes
  // The graph inputs' leaves in declared order (as given to add_graph).
  const std::vector<uint32_t>& input_leaves() const { return input_leaves_; }
  // Whether an e-node is computed from constants only (given its children's
  // classes): a constant, or a non-opaque operator of constant classes.
  bool is_constant_node(const ENode& n) const;
  // A short description of a class for error messages: "class 12 (relu, 1x64x55x55 float)".
  std::string describe(ClassId id) const;

 private:
  ClassId add_node(ENode node, ClassData data);
  ENode canonical(const ENode& node) const;
  uint32_t intern(const OpDef& op, Params params);
  std::optional<uint32_t> find_instance(const OpDef& op, const Params& params, uint64_t hash) const;  // no interning
  void merge_data(ClassId into, ClassId from);
  // A merge of two congruent e-nodes' classes, logged as such.
  void merge_congruent(const ENode& x, ClassId x_class, const ENode& y, ClassId y_class);
  void update_constants();

  std::vector<ClassId> parent_;  // union-find
  std::vector<EClass> classes_;  // indexed by id; only canonical ones hold nodes
  std::unordered_map<ENode, ClassId, ENodeHash, ENodeEqual> memo_;
  size_t num_classes_ = 0;
  size_t num_nodes_ = 0;
  std::vector<ClassId> pending_;                     // classes whose parents need re-canonicalising
  std::vector<std::pair<ENode, ClassId>> filtered_;  // break_cycles(): out of their classes, still in the memo
  bool dirty_ = false;                               // merged or added since the last rebuild()
  bool log_unions_ = false;
  std::vector<UnionRecord> union_log_;
  std::vector<ENode> originals_;                                                     // by class id, when logging
  std::unordered_map<uint32_t, std::vector<std::pair<ClassId, ClassId>>> premises_;  // by origin, when logging
  ClassId last_added_ = kNoClass;

  std::vector<OpInstance> op_instances_;
  std::unordered_multimap<uint64_t, uint32_t> op_instance_index_;
  std::vector<Node> leaves_;
  std::vector<NodeLabel> labels_{NodeLabel{}};  // 0: no names
  std::unordered_map<std::string, uint32_t> input_by_name_;
  std::unordered_map<const void*, uint32_t> constant_by_tensor_;
  std::vector<uint32_t> input_leaves_;
  std::unordered_map<const OpDef*, std::vector<ClassId>> by_op_;
  mutable std::vector<uint32_t> visit_mark_;  // reaches(): epoch per class
  mutable uint32_t visit_epoch_ = 0;
};

}  // namespace tgr::saturation
