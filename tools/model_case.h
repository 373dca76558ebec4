// A model with the inputs to run it on, for the GPU tools (bench, calibrate):
// the imported graph, the inputs (from a test data folder of input_K.pb, or
// random), and the reference outputs when the folder has output_K.pb.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tgr::cli {

struct ModelCase {
  std::string name;  // the file's stem
  Graph graph;
  std::vector<ConstantValue> inputs;    // in Graph::inputs() order
  std::vector<ConstantValue> expected;  // empty without output_K.pb
};

// Random inputs: floats uniform in [-1, 1), int64 in [0, 100), bool 0/1.
// PREFIX_K.pb files of a folder (input_0.pb, input_1.pb, ...), ordered by K.
std::vector<std::string> numbered_files(const std::string& dir, const std::string& prefix);

// `input_shapes` (--input-shape) fixes symbolic dimensions for random inputs;
// with test data it must agree with the input tensors.
ModelCase load_model_case(const std::string& model_path, const std::string& test_data_dir, uint64_t seed = 1,
                          const std::map<std::string, Shape>& input_shapes = {});

// Relative L2 error (floats) or the fraction of unequal elements (integers).
double relative_error(const ConstantValue& actual, const ConstantValue& expected);
// The largest relative_error over the outputs; infinity when the counts differ.
double worst_error(const std::vector<ConstantValue>& actual, const std::vector<ConstantValue>& expected);

}  // namespace tgr::cli
