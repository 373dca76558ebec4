// Converting a float32 model to float16 or bfloat16 (optimize --convert-to,
// docs/optimizing.md "Converting to float16 or bfloat16"): weights are
// rounded to the type and every float operator computes in it, except those
// whose results need float32 (OpTraits::needs_float32: exp, softmax, layer
// norm, sums and means, ...) and operators outside the table (opaque ONNX
// nodes), which read and write float32 with casts between. This is not a
// rewrite in the rule sense: rounding weights and activations changes the
// values, so it is measured (conversion_error), never proved.
//
// Precondition: every floating value of the graph is float32 (kFloat); a
// graph holding half-type values raises std::invalid_argument.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace tgr::optimizer {

struct PrecisionConversion {
  DType to = DType::kBFloat16;  // kFloat16 or kBFloat16
  // false: the model's float inputs and outputs stay float32, with casts at
  // the boundary (the caller's serving code keeps its types); true: they
  // take the type `to` as well.
  bool convert_io = false;
  // Above 0: the model is written at this ONNX opset, and an operator whose
  // ONNX nodes are not defined in type `to` there (onnx_io::exports_in_type:
  // Conv and pooling have no bfloat16 form before opset 22) stays float32,
  // with casts around it, so that the written model is valid ONNX.
  int64_t onnx_opset = 0;
};

struct ConversionStats {
  int weights = 0;              // float32 constants rounded to the type
  int64_t weight_elements = 0;  // their elements
  int casts = 0;                // cast operators added
  int kept_float32 = 0;         // float operators left computing in float32
};

Graph convert_precision(const Graph& graph, const PrecisionConversion& conversion, ConversionStats* stats = nullptr);

// The accuracy of a conversion: both graphs evaluated by the reference
// interpreter (float32, the converted one rounding to its types) on the same
// random inputs (uniform in [-1, 1), rounded to the converted graph's input
// types; integer inputs as given by `seed`), and per output the relative L2
// error of the converted graph's output against the original's. NaN in an
// output the original has none in gives NaN. The graphs have the same inputs
// and outputs in order and shape.
std::vector<double> conversion_error(const Graph& original, const Graph& converted, uint64_t seed = 7);

}  // namespace tgr::optimizer
