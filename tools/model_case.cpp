#include "tools/model_case.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <regex>
#include <set>

#include "onnx/onnx_import.h"
#include "onnx/onnx_proto.h"
#include "runtime/interpreter.h"
#include "tools/input_shapes.h"

namespace tgr::cli {

namespace fs = std::filesystem;

std::vector<std::string> numbered_files(const std::string& dir, const std::string& prefix) {
  std::vector<std::pair<int, std::string>> found;
  const std::regex pattern(prefix + "_([0-9]+)\\.pb");
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, pattern)) found.emplace_back(std::stoi(m[1]), entry.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto& f : found) paths.push_back(f.second);
  return paths;
}

ModelCase load_model_case(const std::string& model_path, const std::string& test_data_dir, uint64_t seed,
                          const std::map<std::string, Shape>& input_shapes) {
  ModelCase c;
  c.name = fs::path(model_path).stem().string();
  const onnx::ModelProto proto = onnx_io::load_model(model_path);
  std::set<std::string> initializers;
  for (const auto& t : proto.graph().initializer()) initializers.insert(t.name());
  std::vector<std::string> names;
  for (const auto& in : proto.graph().input())
    if (!initializers.count(in.name())) names.push_back(in.name());

  onnx_io::ImportOptions options;
  std::vector<onnx_io::NamedTensor> given;
  if (!test_data_dir.empty()) {
    for (const auto& p : numbered_files(test_data_dir, "input")) given.push_back(onnx_io::read_tensor_file(p));
    for (const auto& p : numbered_files(test_data_dir, "output")) c.expected.push_back(onnx_io::read_tensor_file(p).value);
    if (given.size() != names.size())
      throw std::runtime_error("'" + test_data_dir + "' has " + std::to_string(given.size()) + " input(s), the model " +
                               std::to_string(names.size()));
    // By name where every tensor names an input, else by position.
    const bool by_name = std::all_of(given.begin(), given.end(), [&](const auto& t) {
      return std::find(names.begin(), names.end(), t.name) != names.end();
    });
    if (by_name) {
      std::vector<onnx_io::NamedTensor> ordered;
      for (const auto& n : names)
        for (auto& t : given)
          if (t.name == n) ordered.push_back(t);
      given = std::move(ordered);
    }
    for (size_t i = 0; i < names.size(); ++i) options.input_shapes[names[i]] = given[i].value.shape();
  }
  add_given_input_shapes(options.input_shapes, input_shapes);
  c.graph = onnx_io::import_model(proto, options).graph;
  if (!given.empty()) {
    for (auto& t : given) c.inputs.push_back(std::move(t.value));
    return c;
  }
  std::mt19937_64 rng(seed);
  for (int32_t i : c.graph.inputs()) {
    const Node& n = c.graph.node(i);
    if (is_floating(n.output_dtypes[0])) {
      c.inputs.push_back(random_constant(n.output_dtypes[0], n.output_shapes[0], rng()));
    } else {
      Tensor<int64_t> t(n.output_shapes[0]);
      std::uniform_int_distribution<int64_t> dist(0, n.output_dtypes[0] == DType::kBool ? 1 : 99);
      for (int64_t& v : t.data) v = dist(rng);
      c.inputs.emplace_back(n.output_dtypes[0], std::move(t));
    }
  }
  return c;
}

double worst_error(const std::vector<ConstantValue>& actual, const std::vector<ConstantValue>& expected) {
  if (actual.size() != expected.size()) return INFINITY;
  double worst = 0;
  for (size_t k = 0; k < actual.size(); ++k) worst = std::max(worst, relative_error(actual[k], expected[k]));
  return worst;
}

double relative_error(const ConstantValue& actual, const ConstantValue& expected) {
  if (actual.dtype != expected.dtype || actual.shape() != expected.shape()) return INFINITY;
  if (!actual.is_float()) {
    int64_t differ = 0;
    for (size_t i = 0; i < actual.ints.data.size(); ++i) differ += actual.ints.data[i] != expected.ints.data[i];
    return actual.ints.data.empty() ? 0 : static_cast<double>(differ) / static_cast<double>(actual.ints.data.size());
  }
  double num = 0, den = 0;
  for (size_t i = 0; i < actual.real.data.size(); ++i) {
    const double a = actual.real.data[i], e = expected.real.data[i];
    if (std::isnan(a) && std::isnan(e)) continue;
    num += (a - e) * (a - e);
    den += e * e;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace tgr::cli
