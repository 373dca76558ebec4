// Every operator of the table is handled by every per-operator registry, or
// listed there as deliberately unsupported with a reason: adding an operator
// without its ONNX export, GPU lowering, region rule or cost fails here,
// naming the operator and the registry. The GPU part only reads the
// lowering table: it runs (and must pass) on machines without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "ir/op_def.h"
#include "onnx/onnx_export.h"
#include "optimizer/matcher.h"
#include "pet/regions.h"
#include "runtime/views.h"
#ifdef TGR_HAVE_CUDA
#include "runtime/cuda/lower.h"
#endif

namespace tgr {
namespace {

using Unsupported = std::vector<std::pair<std::string, std::string>>;

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

const std::string* reason_for(const Unsupported& list, const std::string& name) {
  for (const auto& [op, why] : list)
    if (op == name) return &why;
  return nullptr;
}

// Each operator is handled or listed (with a reason), never both; each listed
// name is an operator of the table.
void expect_covered(const std::string& registry, const std::vector<std::string>& handled,
                    const Unsupported& unsupported) {
  for (const OpDef* op : OpTable::instance().all()) {
    const bool is_handled = contains(handled, op->name);
    const std::string* why = reason_for(unsupported, op->name);
    EXPECT_TRUE(is_handled || why) << "operator '" << op->name << "' has no entry in the " << registry
                                   << " registry and is not listed as unsupported there";
    EXPECT_FALSE(is_handled && why) << "operator '" << op->name
                                    << "' is both handled by and listed as unsupported in the " << registry
                                    << " registry";
    if (why) {
      EXPECT_FALSE(why->empty()) << registry << ": '" << op->name << "' is unsupported without a reason";
    }
  }
  for (const auto& [name, why] : unsupported)
    EXPECT_NE(OpTable::instance().find(name), nullptr) << registry << " lists an unknown operator '" << name << "'";
  for (const std::string& name : handled)
    EXPECT_NE(OpTable::instance().find(name), nullptr) << registry << " handles an unknown operator '" << name << "'";
}

TEST(OpRegistry, OnnxExport) {
  expect_covered("ONNX export", onnx_io::exportable_ops(), onnx_io::non_exportable_ops());
}

TEST(OpRegistry, PetRegionRules) {
  expect_covered("PET region rule", pet::region_rule_ops(), pet::region_rule_unsupported_ops());
}

// A region rule only makes sense for an operator multi-linear in every input.
TEST(OpRegistry, RegionRulesAreForMultilinearOperators) {
  for (const std::string& name : pet::region_rule_ops()) {
    const OpDef& op = OpTable::instance().get(name);
    for (size_t i = 0; i < op.inputs.size(); ++i)
      EXPECT_TRUE(op.multilinear[i]) << name << " has a region rule but is not multi-linear in input " << i;
  }
}

TEST(OpRegistry, Cost) {
  std::vector<std::string> costed;
  for (const OpDef* op : OpTable::instance().all())
    if (op->cost.flops && op->cost.bytes) costed.push_back(op->name);
  expect_covered("cost (OpCost flops and bytes)", costed, {});
}

// The costs the analytic model used to compute from operator names.
TEST(OpRegistry, CostCounts) {
  const OpTable& t = OpTable::instance();
  const std::vector<Shape> mm_in{{4, 6}, {6, 5}}, mm_out{{4, 5}};
  const std::vector<DType> floats2(2, DType::kFloat), floats1(1, DType::kFloat);
  const Params none = t.get("matmul").make_params();
  EXPECT_EQ(t.get("matmul").cost.flops(OpCall{t.get("matmul"), none, mm_in, floats2, mm_out}), 2.0 * 20 * 6);
  EXPECT_EQ(t.get("matmul").cost.bytes(OpCall{t.get("matmul"), none, mm_in, floats2, mm_out}), 4.0 * (24 + 30 + 20));
  const Params conv = t.get("conv2d").make_params();
  const std::vector<Shape> conv_in{{1, 4, 8, 8}, {3, 4, 3, 3}}, conv_out{{1, 3, 8, 8}};
  EXPECT_EQ(t.get("conv2d").cost.flops(OpCall{t.get("conv2d"), conv, conv_in, floats2, conv_out}), 2.0 * 192 * 36);
  const Params softmax = t.get("softmax").make_params({{"axis", int64_t{1}}});
  const std::vector<Shape> sm{{2, 3}};
  EXPECT_EQ(t.get("softmax").cost.flops(OpCall{t.get("softmax"), softmax, sm, floats1, sm}), 5.0 * 6);
  const Params relu = t.get("relu").make_params();
  EXPECT_EQ(t.get("relu").cost.flops(OpCall{t.get("relu"), relu, sm, floats1, sm}), 6.0);
}

// The traits that replaced the name lists of the runtime, the prover and the matcher.
TEST(OpRegistry, Traits) {
  const OpTable& t = OpTable::instance();
  auto names_where = [&](auto pred) {
    std::vector<std::string> out;
    for (const OpDef* op : t.all())
      if (pred(*op)) out.push_back(op->name);
    std::sort(out.begin(), out.end());
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names_where([](const OpDef& op) { return op.traits.view != ViewKind::kNone; }),
            (V{"reshape", "split", "transpose"}));
  EXPECT_EQ(names_where([](const OpDef& op) { return op.traits.strided_copy; }),
            (V{"concat", "enlarge", "expand", "pad", "reshape", "slice", "split", "transpose"}));
  EXPECT_EQ(names_where([](const OpDef& op) { return op.traits.moves_elements; }),
            (V{"concat", "conv_identity", "enlarge", "eye", "ones", "pad", "pool_kernel", "reshape", "slice", "split",
               "transpose"}));
  EXPECT_EQ(names_where([](const OpDef& op) { return op.traits.elementwise && !op.has_mixed_kernels(); }),
            (V{"abs",        "add",          "batch_norm", "ceil",       "clip", "cos", "div", "erf", "exp",
               "floor",      "hard_sigmoid", "hard_swish", "leaky_relu", "log",  "mul", "neg", "pow", "relu",
               "scalar_mul", "sigmoid",      "sin",        "softplus",   "sqrt", "sub", "tanh"}));
  EXPECT_EQ(names_where([](const OpDef& op) { return op.traits.channel_operands; }), (V{"batch_norm"}));
  EXPECT_EQ(names_where([](const OpDef& op) { return op.traits.needs_float32; }),
            (V{"exp", "layer_norm", "log", "pow", "reduce_mean", "reduce_sum", "softmax", "softplus"}));
  // channel_operands qualifies elementwise operators only.
  for (const OpDef* op : t.all()) {
    if (op->traits.channel_operands) {
      EXPECT_TRUE(op->traits.elementwise) << op->name;
    }
  }
  V shape_params;
  for (const OpDef* op : t.all())
    for (const ParamSpec& p : op->params)
      if (p.shape_dependent) shape_params.push_back(op->name + "." + p.name);
  std::sort(shape_params.begin(), shape_params.end());
  EXPECT_EQ(shape_params,
            (V{"conv_identity.channels", "conv_identity.kernel", "enlarge.size", "expand.shape", "eye.n", "ones.shape",
               "pool_kernel.channels", "pool_kernel.kernel", "reshape.shape", "split.sizes"}));
  EXPECT_TRUE(optimizer::is_shape_param("split", "sizes"));
  EXPECT_FALSE(optimizer::is_shape_param("split", "axis"));
  EXPECT_FALSE(optimizer::is_shape_param("no_such_op", "sizes"));
}

#ifdef TGR_HAVE_CUDA
TEST(OpRegistry, GpuLowering) {
  expect_covered("GPU lowering", gpu::lowered_ops(), gpu::unlowered_ops());
  // The plan routes by traits; the lowering must agree with where it routes.
  for (const OpDef* op : OpTable::instance().all()) {
    Node n;
    n.op = op;
    const std::string family = gpu::lowering_family(op->kind);
    EXPECT_EQ(is_elementwise_kernel(n), family == "elementwise")
        << op->name << ": the plan fuses it (elementwise trait) exactly when the elementwise program lowers it";
    EXPECT_EQ(gpu::lowers_in_elementwise_program(op->kind), family == "elementwise")
        << op->name << ": the registry routes it to elementwise programs exactly when they have its instructions";
    if (is_strided_copy(n)) {
      EXPECT_EQ(family, "layout") << op->name;
    }
  }
}
#endif

// Every kind of ir/op_list.def has exactly one table entry, named as the
// list names it; names outside the list have kOpaque and no entry.
TEST(OpRegistry, KindsMatchTheTable) {
  const OpTable& table = OpTable::instance();
  EXPECT_EQ(table.all().size(), kTableOpKinds);
  for (size_t i = 0; i < kTableOpKinds; ++i) {
    const auto kind = static_cast<OpKind>(i);
    const OpDef& op = table.get(kind);
    EXPECT_EQ(op.kind, kind) << op.name;
    EXPECT_EQ(op.name, op_kind_name(kind));
    EXPECT_EQ(op_kind_of(op.name), kind) << op.name;
    EXPECT_EQ(&op_def(kind), &op);
  }
  EXPECT_EQ(op_kind_of("no_such_op"), OpKind::kOpaque);
  EXPECT_EQ(op_kind_name(OpKind::kOpaque), "opaque");
  EXPECT_THROW(table.get(OpKind::kOpaque), std::out_of_range);
  EXPECT_FALSE(op_is(nullptr, OpKind::kAdd));
  EXPECT_TRUE(op_is(&table.get("add"), OpKind::kAdd));
}

// A table entry whose name ir/op_list.def lacks, or one added twice, is
// rejected when it is added.
TEST(OpRegistry, AddRejectsNamesOutsideTheList) {
  OpTable table;
  OpDef def = OpTable::instance().get("relu");
  def.name = "not_in_the_list";
  EXPECT_THROW(table.add(def), std::logic_error);
  def.name = "relu";
  EXPECT_EQ(table.add(def).kind, OpKind::kRelu);
  EXPECT_THROW(table.add(def), std::logic_error);
}

}  // namespace
}  // namespace tgr
