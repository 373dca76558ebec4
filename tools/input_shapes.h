// --input-shape NAME=DIMS, on every program that loads an ONNX model: the
// shape of a graph input whose dimensions the model leaves symbolic (batch,
// sequence length), e.g. --input-shape input_ids=1x128. Repeat it per input.
// The importer checks each against the model (onnx/onnx_import.h).
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/shape.h"
#include "tools/cli_common.h"

namespace tgr::cli {

inline void add_input_shape_option(CLI::App& app, std::vector<std::string>& specs) {
  app.add_option("--input-shape", specs,
                 "NAME=DIMS: the shape of graph input NAME (e.g. input_ids=1x128), for symbolic dimensions; repeatable")
      ->allow_extra_args(false)
      ->take_all();
}

// NAME=DIMS texts to shapes by name; the last '=' separates them (ONNX names
// may hold '=', dimensions never do). Errors name the bad text.
inline std::map<std::string, Shape> parse_input_shapes(const std::vector<std::string>& specs) {
  std::map<std::string, Shape> shapes;
  for (const std::string& spec : specs) {
    const size_t eq = spec.rfind('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("--input-shape '" + spec + "': expected NAME=DIMS, e.g. input_ids=1x128");
    const std::string name = spec.substr(0, eq);
    Shape shape;
    try {
      shape = parse_shape(spec.substr(eq + 1));
    } catch (const ShapeSyntaxError& e) {
      throw UsageError("--input-shape '" + spec + "': " + e.what());
    }
    if (!shapes.emplace(name, shape).second) throw UsageError("--input-shape gives input '" + name + "' twice");
  }
  return shapes;
}

// Adds the --input-shape shapes to `shapes` (the input tensors' shapes, by
// input name): one given for an input that has a tensor must agree with it.
// A name the model lacks is added too: the importer says so.
inline void add_given_input_shapes(std::map<std::string, Shape>& shapes, const std::map<std::string, Shape>& given) {
  for (const auto& [name, shape] : given) {
    auto it = shapes.find(name);
    if (it != shapes.end() && it->second != shape)
      throw std::runtime_error("--input-shape " + name + "=" + shape_to_string(shape) + ": the input tensor for '" +
                               name + "' has shape " + shape_to_string(it->second));
    shapes[name] = shape;
  }
}

}  // namespace tgr::cli
