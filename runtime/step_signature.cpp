#include "runtime/step_signature.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "ir/op_signature.h"
#include "ir/text.h"
#include "runtime/interpreter.h"
#include "runtime/views.h"

namespace tgr {

namespace {

constexpr std::string_view kNodeSeparator = " ; ";

// Whether the plan computes `node` at load (its `folded`; a plan made
// without values may have none).
bool computed_at_load(const ExecutionPlan& plan, int32_t node) {
  return node < static_cast<int32_t>(plan.folded.size()) && plan.folded[node];
}

// The index in `task.nodes` of the node computing `v`, or -1.
int member_index(const Task& task, ValueRef v) {
  auto it = std::find(task.nodes.begin(), task.nodes.end(), v.node);
  return it == task.nodes.end() ? -1 : static_cast<int>(it - task.nodes.begin());
}

// A task whose step is not its nodes read from row-major inputs: a graph of
// its own and its task, whose signature and timing stand for the task's.
struct StandIn {
  Graph graph;
  Task task;
};

// What a concatenation with inputs written in place copies (Task::in_place_inputs):
// the concatenation of the other inputs alone, as a graph of its own whose
// inputs are those values, and its one task.
std::optional<StandIn> copied_part(const Graph& model, const Task& task) {
  if (task.in_place_inputs.empty()) return std::nullopt;
  const Node& concat = model.node(task.root());
  StandIn part;
  std::vector<ValueRef> copied;
  for (size_t k = 0; k < concat.inputs.size(); ++k) {
    if (std::count(task.in_place_inputs.begin(), task.in_place_inputs.end(), k)) continue;
    const ValueRef in = concat.inputs[k];
    copied.push_back(part.graph.add_input("in" + std::to_string(k), model.shape(in), model.dtype(in)));
  }
  const ValueRef out = part.graph.add_op(*concat.op, concat.params, copied).at(0);
  part.graph.add_output(out);
  part.task.kind = Task::Kind::kNode;
  part.task.nodes = {out.node};
  return part;
}

// A reshape that is a step (a copy, not a view) reads a strided view: the
// output of a transpose (ShuffleNet's channel shuffle: reshape, transpose,
// reshape). From a row-major input of its own it would be a view and
// launch nothing (an H200 timed it at 0.2 us, where it runs 5 to 9 us in
// the model), so it stands as the transpose and the reshape from the
// transpose's input: the transpose is a view there too, and the reshape
// the copy the model runs.
std::optional<StandIn> reshape_of_transpose(const Graph& model, const Task& task) {
  if (task.kind != Task::Kind::kNode || task.nodes.size() != 1) return std::nullopt;
  const Node& reshape = model.node(task.root());
  if (!op_is(reshape.op, OpKind::kReshape)) return std::nullopt;
  const Node& transpose = model.node(reshape.inputs[0].node);
  if (!op_is(transpose.op, OpKind::kTranspose)) return std::nullopt;
  StandIn s;
  const ValueRef source = transpose.inputs[0];
  const ValueRef in = s.graph.add_input("in", model.shape(source), model.dtype(source));
  const ValueRef view = s.graph.add_op(*transpose.op, transpose.params, {in}).at(0);
  const ValueRef out = s.graph.add_op(*reshape.op, reshape.params, {view}).at(0);
  s.graph.add_output(out);
  s.task.kind = Task::Kind::kNode;
  s.task.nodes = {view.node, out.node};
  return s;
}

std::optional<StandIn> stand_in(const Graph& model, const Task& task) {
  if (auto part = copied_part(model, task)) return part;
  return reshape_of_transpose(model, task);
}

}  // namespace

std::string task_kind_name(Task::Kind kind) {
  switch (kind) {
    case Task::Kind::kNode:
      return "node";
    case Task::Kind::kElementwise:
      return "elementwise";
    case Task::Kind::kConv:
      return "conv";
    case Task::Kind::kProduct:
      return "product";
    case Task::Kind::kAlias:
      return "alias";
    case Task::Kind::kAttention:
      return "attention";
  }
  // No default above: a kind added to the planner and not named here is a
  // build error (-Wswitch), not a name made up at run time.
  return "unknown";
}

bool step_is_free(const Task& task) { return task.kind == Task::Kind::kAlias; }

namespace {

// `op_signature` with each float32 operand written as the type it is stored
// in at `precision` ("float:" -> "bfloat16:"): the operands follow the first
// '(' (the parameters hold none), each "dtype:shape".
std::string with_storage_types(const std::string& op_signature, Precision precision) {
  const DType stored = storage_dtype(DType::kFloat, precision);
  if (stored == DType::kFloat) return op_signature;
  const std::string from = std::string(dtype_name(DType::kFloat)) + ":";
  const std::string to = std::string(dtype_name(stored)) + ":";
  const size_t open = op_signature.find('(');
  if (open == std::string::npos) return op_signature;
  std::string out = op_signature.substr(0, open);
  size_t at = open;
  while (at < op_signature.size()) {
    const char separator = op_signature[at];  // '(' or ','
    out += separator;
    ++at;
    if ((separator == '(' || separator == ',') && op_signature.compare(at, from.size(), from) == 0) {
      out += to;
      at += from.size();
    }
    const size_t next = op_signature.find(',', at);
    const size_t end = next == std::string::npos ? op_signature.size() : next;
    out.append(op_signature, at, end - at);
    at = end;
  }
  return out;
}

}  // namespace

Precision signature_precision(std::string_view signature) {
  if (!signature.starts_with(kStepSignaturePrefix)) return Precision::kFp32;
  signature.remove_prefix(kStepSignaturePrefix.size());
  if (signature.starts_with(kTf32Word) && signature.substr(kTf32Word.size()).starts_with(' ')) return Precision::kTf32;
  const auto has_operand_of = [&](DType t) {
    const std::string type = std::string(dtype_name(t)) + ":";
    for (size_t at = signature.find(type); at != std::string_view::npos; at = signature.find(type, at + 1))
      if (at > 0 && (signature[at - 1] == '(' || signature[at - 1] == ',')) return true;
    return false;
  };
  if (has_operand_of(DType::kBFloat16)) return Precision::kBf16;
  if (has_operand_of(DType::kFloat16)) return Precision::kFp16;
  return Precision::kFp32;
}

std::string step_signature(const Graph& graph, const Task& task, Precision precision) {
  if (auto s = stand_in(graph, task)) return step_signature(s->graph, s->task, precision);
  std::string s(kStepSignaturePrefix);
  if (allows_tf32(precision)) {
    s += kTf32Word;
    s += ' ';
  }
  s += task_kind_name(task.kind);
  s += ": ";
  for (size_t k = 0; k < task.nodes.size(); ++k) {
    const Node& n = graph.node(task.nodes[k]);
    if (k) s += kNodeSeparator;
    s += with_storage_types(op_signature(graph, n), precision);
    std::string sources;
    bool internal = false;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const int m = member_index(task, n.inputs[i]);
      if (i) sources += ",";
      if (m < 0) {
        sources += "-";
        continue;
      }
      internal = true;
      sources += std::to_string(m);
      if (n.inputs[i].output != 0) {
        sources += '.';  // (not "." + to_string: GCC 12's -Wrestrict false positive)
        sources += std::to_string(n.inputs[i].output);
      }
    }
    if (internal) {
      s += '<';
      s += sources;
    }
  }
  return s;
}

ParsedStepSignature parse_step_signature(std::string_view signature) {
  if (!signature.starts_with(kStepSignaturePrefix))
    throw ParseError(signature, 0, "a step signature starts with 'step '");
  const size_t colon = signature.find(": ");
  if (colon == std::string_view::npos) throw ParseError(signature, 0, "a step signature is 'step KIND: NODES'");
  ParsedStepSignature out;
  std::string_view kind = signature.substr(kStepSignaturePrefix.size(), colon - kStepSignaturePrefix.size());
  if (kind.starts_with(kTf32Word) && kind.size() > kTf32Word.size() && kind[kTf32Word.size()] == ' ') {
    out.tf32 = true;
    kind.remove_prefix(kTf32Word.size() + 1);
  }
  out.kind = std::string(kind);
  size_t start = colon + 2;
  while (start <= signature.size()) {
    size_t end = signature.find(kNodeSeparator, start);
    if (end == std::string_view::npos) end = signature.size();
    const std::string_view part = signature.substr(start, end - start);
    // The operator signature ends at its operand list's ')'; sources follow a '<'.
    const size_t close = part.rfind(')');
    if (close == std::string_view::npos)
      throw ParseError(signature, start, "a node of a step is op(operands)[<sources]");
    StepNodeSignature node;
    node.op_signature = std::string(part.substr(0, close + 1));
    // Operands: between the first '(' (parameters hold none) and the last ')', comma-separated.
    const size_t open = node.op_signature.find('(');
    const size_t operands = open + 2 == node.op_signature.size()
                                ? 0
                                : 1 + std::count(node.op_signature.begin() + open, node.op_signature.end(), ',');
    std::string_view rest = part.substr(close + 1);
    if (rest.empty()) {
      node.source.assign(operands, -1);
      node.source_output.assign(operands, 0);
    } else {
      if (rest[0] != '<') throw ParseError(signature, start + close + 1, "expected '<' and the operands' sources");
      rest.remove_prefix(1);
      size_t p = 0;
      while (p <= rest.size()) {
        size_t q = rest.find(',', p);
        if (q == std::string_view::npos) q = rest.size();
        const std::string item(rest.substr(p, q - p));
        if (item == "-") {
          node.source.push_back(-1);
          node.source_output.push_back(0);
        } else {
          try {
            size_t used = 0;
            const int m = std::stoi(item, &used);
            int output = 0;
            if (used < item.size() && item[used] == '.') output = std::stoi(item.substr(used + 1));
            if (m < 0 || m >= static_cast<int>(out.nodes.size())) throw std::out_of_range("source");
            node.source.push_back(m);
            node.source_output.push_back(output);
          } catch (const std::logic_error&) {
            throw ParseError(signature, start + close + 2 + p, "an operand's source is '-' or an earlier node's index");
          }
        }
        p = q + 1;
      }
    }
    out.nodes.push_back(std::move(node));
    start = end + kNodeSeparator.size();
  }
  return out;
}

int64_t step_weight_bytes(const Graph& model, const ExecutionPlan& plan, const Task& task) {
  std::set<std::pair<int32_t, int32_t>> seen;
  int64_t bytes = 0;
  for (int32_t m : task.nodes)
    for (ValueRef in : model.node(m).inputs) {
      if (std::find(task.nodes.begin(), task.nodes.end(), in.node) != task.nodes.end()) continue;
      const bool weight = model.node(in.node).is_constant() || computed_at_load(plan, in.node);
      if (weight && seen.insert({in.node, in.output}).second)
        bytes += num_elements(model.shape(in)) * device_element_bytes(storage_dtype(model.dtype(in), plan.precision));
    }
  return bytes;
}

int copies_streaming_weights(int64_t weight_bytes, int64_t cache_bytes, int least, int most) {
  if (weight_bytes <= 0 || cache_bytes <= 0) return least;
  const int64_t needed = (2 * cache_bytes + weight_bytes - 1) / weight_bytes;
  return static_cast<int>(std::clamp<int64_t>(needed, least, std::max(least, most)));
}

double step_cost_ms(double replay_ms, double spacers_ms, int copies, bool* clamped) {
  const double ms = (replay_ms - spacers_ms) / copies;
  if (clamped) *clamped = ms < 0;
  return ms < 0 ? 0.0 : ms;
}

std::string calibration_method(int least_copies, int most_copies, int64_t spacer_elements) {
  std::string method = "copies ";
  method += std::to_string(least_copies);
  method += "..";
  method += std::to_string(std::max(least_copies, most_copies));
  method += spacer_elements > 0 ? ", spacer " + std::to_string(spacer_elements) + " floats" : ", back to back";
  return method;
}

Graph spacer_graph(int copies, int64_t elements) {
  Graph g;
  const ValueRef in = g.add_input("spacer", Shape{elements}, DType::kFloat);
  for (int c = 0; c < copies; ++c) g.add_output(g.add_op(op_def(OpKind::kRelu), {}, {in})[0]);
  return g;
}

Graph step_graph(const Graph& model, const ExecutionPlan& plan, const Task& task, int copies, int64_t spacer_elements) {
  if (auto s = stand_in(model, task)) return step_graph(s->graph, ExecutionPlan{}, s->task, copies, spacer_elements);
  Graph g;
  ValueRef spacer_in;
  if (spacer_elements > 0) spacer_in = g.add_input("spacer", Shape{spacer_elements}, DType::kFloat);
  // A value read from outside the task -> its node in g: graph inputs are
  // shared by the copies (in the model the step's input was just written,
  // so it is in L2), constants are per copy (in the model a step's weights
  // are its own; shared, eight copies read one weight from L2 and a
  // weight-heavy step timed faster than it runs in the model).
  std::map<std::pair<int32_t, int32_t>, ValueRef> inputs, constants;
  uint64_t seed = 11;
  auto outside_value = [&](ValueRef v) {
    if (auto it = inputs.find({v.node, v.output}); it != inputs.end()) return it->second;
    if (auto it = constants.find({v.node, v.output}); it != constants.end()) return it->second;
    const Node& producer = model.node(v.node);
    const Shape& shape = model.shape(v);
    const DType dtype = model.dtype(v);
    ValueRef r;
    if (producer.is_constant()) {
      r = g.add_constant(*producer.constant);
    } else if (computed_at_load(plan, v.node)) {
      r = g.add_constant(is_floating(dtype) ? random_constant(dtype, shape, seed++)
                                            : ConstantValue(dtype, Tensor<int64_t>(shape)));
    } else {
      std::string name = "in";
      name += std::to_string(inputs.size());
      r = g.add_input(std::move(name), shape, dtype);
      inputs.emplace(std::pair{v.node, v.output}, r);
      return r;
    }
    constants.emplace(std::pair{v.node, v.output}, r);
    return r;
  };
  for (int c = 0; c < copies; ++c) {
    constants.clear();
    std::map<int32_t, std::vector<ValueRef>> inside;  // model node -> its outputs in g
    for (int32_t m : task.nodes) {
      const Node& n = model.node(m);
      std::vector<ValueRef> args;
      for (ValueRef in : n.inputs) {
        auto it = inside.find(in.node);
        args.push_back(it != inside.end() ? it->second.at(in.output) : outside_value(in));
      }
      std::vector<ValueRef> outs = g.add_op(*n.op, n.params, args);
      for (size_t k = 0; k < outs.size(); ++k)
        if (g.shape(outs[k]) != n.output_shapes[k])
          throw std::logic_error("step_graph: " + n.op->name + " has another shape alone than in the model");
      inside.emplace(m, std::move(outs));
    }
    for (ValueRef v : inside.at(task.root())) g.add_output(v);
    if (spacer_elements > 0) g.add_output(g.add_op(op_def(OpKind::kRelu), {}, {spacer_in})[0]);
  }
  return g;
}

}  // namespace tgr
