#include "onnx/opaque_op.h"

#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace tgr::onnx_io {
namespace {

struct Registry {
  std::mutex mutex;
  std::deque<OpDef> ops;  // stable addresses
  std::unordered_map<const OpDef*, OpaqueNode> nodes;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

const OpDef& make_opaque_op(OpaqueNode node, std::vector<Shape> shapes, std::vector<DType> dtypes) {
  OpDef def;
  def.name = "opaque:";
  def.name += node.proto.op_type();
  def.summary = "an ONNX node kept as it is (no mapping)";
  def.inputs = {"inputs"};
  def.variadic = true;
  const int outputs = static_cast<int>(shapes.size());
  def.num_outputs = [outputs](const Params&) { return outputs; };
  def.infer_shapes = [shapes](const OpCall&) { return shapes; };
  def.infer_dtypes = [dtypes](const OpCall&) { return dtypes; };
  def.multilinear = {false};
  def.field = FieldSemantics::kUndefined;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const OpDef& op = r.ops.emplace_back(std::move(def));
  r.nodes.emplace(&op, std::move(node));
  return op;
}

const OpaqueNode* find_opaque(const OpDef& op) {
  if (op.name.rfind("opaque:", 0) != 0) return nullptr;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.nodes.find(&op);
  return it == r.nodes.end() ? nullptr : &it->second;
}

}  // namespace tgr::onnx_io
