// Converting float32 models to float16 and bfloat16
// (optimizer/convert_precision.h): the bundled models converted stay within
// the accuracy bounds against the float32 model (relative L2 <= 5e-3
// in float16, <= 2e-2 in bfloat16, never NaN), keep float32 at the boundary
// unless asked, and leave the operators that need float32 in it.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "onnx/onnx_import.h"
#include "onnx/onnx_proto.h"
#include "optimizer/convert_precision.h"

namespace tgr::optimizer {
namespace {

const std::string kModels = std::string(TGR_TEST_DATA) + "/models/";

// The bundled model at its test data's input shapes.
Graph bundled(const std::string& name) {
  onnx_io::ImportOptions options;
  const onnx::ModelProto proto = onnx_io::load_model(kModels + name + ".onnx");
  const std::vector<std::string> names = onnx_io::graph_input_names(proto);
  for (size_t k = 0; k < names.size(); ++k) {
    const std::string file = kModels + name + "-testdata/input_" + std::to_string(k) + ".pb";
    options.input_shapes[names[k]] = onnx_io::read_tensor_file(file).value.shape();
  }
  return onnx_io::import_model(proto, options).graph;
}

int count_dtype(const Graph& g, DType t) {
  int n = 0;
  for (int32_t i : g.topological_order())
    for (DType d : g.node(i).output_dtypes) n += d == t;
  return n;
}

struct Case {
  const char* model;
  DType to;
  double bound;
};

class OptimizeConvertTo : public testing::TestWithParam<Case> {};

TEST_P(OptimizeConvertTo, BundledModelStaysWithinTheBound) {
  const Case c = GetParam();
  const Graph original = bundled(c.model);
  ConversionStats stats;
  const Graph converted = convert_precision(original, PrecisionConversion{.to = c.to, .convert_io = false}, &stats);
  EXPECT_GT(stats.weights, 0);
  EXPECT_GT(count_dtype(converted, c.to), 0);
  EXPECT_EQ(count_dtype(original, c.to), 0);
  for (size_t i = 0; i < original.inputs().size(); ++i)  // the boundary keeps its types
    EXPECT_EQ(converted.node(converted.inputs()[i]).output_dtypes[0],
              original.node(original.inputs()[i]).output_dtypes[0]);
  for (size_t k = 0; k < original.outputs().size(); ++k)
    EXPECT_EQ(converted.dtype(converted.outputs()[k]), original.dtype(original.outputs()[k]));
  EXPECT_EQ(converted.output_names(), original.output_names());
  for (double e : conversion_error(original, converted)) {
    EXPECT_FALSE(std::isnan(e)) << c.model;
    EXPECT_LE(e, c.bound) << c.model << " to " << dtype_name(c.to);
    RecordProperty(std::string(c.model) + "_" + std::string(dtype_name(c.to)), std::to_string(e));
    std::printf("%s to %s: relative L2 %.3e (%d weights, %d casts, %d operators in float32)\n", c.model,
                std::string(dtype_name(c.to)).c_str(), e, stats.weights, stats.casts, stats.kept_float32);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, OptimizeConvertTo,
    testing::Values(Case{"squeezenet1_1", DType::kFloat16, 5e-3}, Case{"squeezenet1_1", DType::kBFloat16, 2e-2},
                    Case{"bert_tiny", DType::kFloat16, 5e-3}, Case{"bert_tiny", DType::kBFloat16, 2e-2},
                    Case{"vit_tiny", DType::kFloat16, 5e-3}, Case{"vit_tiny", DType::kBFloat16, 2e-2},
                    Case{"gpt2_tiny", DType::kFloat16, 5e-3}, Case{"gpt2_tiny", DType::kBFloat16, 2e-2},
                    Case{"t5_encoder_tiny", DType::kFloat16, 5e-3}, Case{"t5_encoder_tiny", DType::kBFloat16, 2e-2}),
    [](const testing::TestParamInfo<Case>& c) {
      return std::string(c.param.model) + "_" + std::string(dtype_name(c.param.to));
    });

// Softmax reads float32 (a cast of the half product before it) and its
// result is cast back; the relu between computes in the type. With
// convert_io the boundary takes the type too.
TEST(OptimizeConvertTo, SensitiveOperatorsComputeInFloat32AndTheBoundaryIsAChoice) {
  Graph g;
  const ValueRef x = g.add_input("x", {2, 4});
  const ValueRef w = g.add_constant(ConstantValue(Tensor<float>({4, 4}, std::vector<float>(16, 0.1f))), "w");
  const ValueRef s = g.apply("softmax", {g.apply("relu", {g.apply("matmul", {x, w})})}, {{"axis", int64_t{1}}});
  g.add_output(g.apply("relu", {s}), "y");
  ConversionStats stats;
  const Graph c = convert_precision(g, PrecisionConversion{.to = DType::kBFloat16, .convert_io = false}, &stats);
  EXPECT_EQ(stats.kept_float32, 1);
  EXPECT_EQ(stats.weights, 1);
  EXPECT_EQ(stats.casts, 4);  // x in, into and out of the softmax, the output back to float32
  for (int32_t i : c.topological_order()) {
    const Node& n = c.node(i);
    if (n.is_op() && n.op->traits.needs_float32) {
      EXPECT_EQ(c.dtype(n.inputs[0]), DType::kFloat);
    }
  }
  EXPECT_EQ(c.dtype(c.outputs()[0]), DType::kFloat);
  const Graph io = convert_precision(g, PrecisionConversion{.to = DType::kBFloat16, .convert_io = true});
  EXPECT_EQ(io.node(io.inputs()[0]).output_dtypes[0], DType::kBFloat16);
  EXPECT_EQ(io.dtype(io.outputs()[0]), DType::kBFloat16);
  // A model already in a half type is refused, naming the type.
  try {
    convert_precision(c, PrecisionConversion{.to = DType::kFloat16, .convert_io = false});
    FAIL() << "a bfloat16 graph was converted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("already holds bfloat16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tgr::optimizer
