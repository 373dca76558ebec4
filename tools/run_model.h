// `run --model`: import an ONNX model, evaluate it with the reference
// interpreter, and write or check its outputs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/shape.h"
#include "onnx/onnx_import.h"

namespace tgr::cli {

struct ModelRunOptions {
  std::string model;
  std::vector<std::string> inputs;  // input tensor files (--inputs)
  std::string output_dir;           // where output_K.pb go (--output-dir)
  std::string test_data;            // a test data set, or a folder of test_data_set_N (--test-data)
  std::optional<double> rtol;       // relative L2 error allowed per output; unset: test_data_tolerance
  std::string precision = "f32";    // f32 | f64
  std::string export_path;          // write the imported graph as ONNX (--export)
  std::map<std::string, Shape> input_shapes;  // --input-shape: must agree with the input tensors
  onnx_io::ImportLimits limits;               // --max-elements, --max-bytes
};

// The relative L2 error `run --test-data` allows an output of type `t` when
// no --rtol is given (docs/onnx.md, "Precision"): float32 1e-4; float16
// 1e-2 and bfloat16 5e-2, since the reference interpreter rounds at each
// operator's output while ONNX Runtime's half kernels round elsewhere
// (inside a convolution, say); int64 and bool as float32.
double test_data_tolerance(DType t);

// Returns the exit status: 0 on success (and every output within rtol).
int run_model(const ModelRunOptions& options);

}  // namespace tgr::cli
