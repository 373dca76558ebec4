#include "tools/run_model.h"
#include "tools/model_case.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "onnx/onnx_export.h"
#include "onnx/onnx_import.h"
#include "runtime/interpreter.h"
#include "tools/input_shapes.h"

namespace tgr::cli {
namespace {

namespace fs = std::filesystem;
using onnx_io::NamedTensor;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Matches tensors to graph inputs: by name where every tensor names an
// input, otherwise by position.
std::vector<NamedTensor> order_inputs(std::vector<NamedTensor> tensors, const std::vector<std::string>& names) {
  if (tensors.size() != names.size())
    throw std::runtime_error("the model has " + std::to_string(names.size()) + " input(s), given " +
                             std::to_string(tensors.size()) + " tensor(s)");
  const bool by_name = std::all_of(tensors.begin(), tensors.end(), [&](const NamedTensor& t) {
    return std::find(names.begin(), names.end(), t.name) != names.end();
  });
  if (!by_name) return tensors;
  std::vector<NamedTensor> ordered;
  for (const auto& n : names)
    for (auto& t : tensors)
      if (t.name == n) ordered.push_back(std::move(t));
  return ordered;
}

template <class T>
std::vector<Value<T>> evaluate_in(const Graph& g, const std::vector<NamedTensor>& inputs) {
  std::vector<Value<T>> values;
  for (const auto& t : inputs) {
    if constexpr (std::is_same_v<T, float>) {
      values.push_back(t.value);
    } else {
      values.push_back(constant_in_domain<T>(t.value));
    }
  }
  return evaluate_values<T>(g, values);
}

ConstantValue to_float32(const Value<double>& v) {
  if (!v.is_float()) return ConstantValue(v.dtype, v.ints);
  Tensor<float> t(v.real.shape);
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<float>(v.real.data[i]);
  ConstantValue c(std::move(t));
  c.dtype = v.dtype;  // half values are exact float32 numbers
  return c;
}

std::vector<double> as_doubles(const ConstantValue& v) {
  if (v.is_float()) return {v.real.data.begin(), v.real.data.end()};
  return {v.ints.data.begin(), v.ints.data.end()};
}

struct Loaded {
  onnx::ModelProto proto;
  std::vector<std::string> input_names;
};

// Imports with the inputs' shapes, evaluates, returns float32 outputs.
// `given` (--input-shape) must agree with the input tensors.
std::vector<ConstantValue> compute(const Loaded& model, const std::string& path, const std::vector<NamedTensor>& inputs,
                                   const std::string& precision, bool verbose, const std::string& export_path,
                                   const std::map<std::string, Shape>& given, const onnx_io::ImportLimits& limits) {
  onnx_io::ImportOptions import_options;
  import_options.limits = limits;
  for (size_t i = 0; i < inputs.size(); ++i) import_options.input_shapes[model.input_names[i]] = inputs[i].value.shape();
  add_given_input_shapes(import_options.input_shapes, given);
  auto start = std::chrono::steady_clock::now();
  onnx_io::ImportedModel imported;
  try {
    imported = onnx_io::import_model(model.proto, import_options);
  } catch (const onnx_io::OnnxError& e) {
    throw std::runtime_error("'" + path + "': " + e.what());
  }
  const double import_s = seconds_since(start);
  if (!export_path.empty()) {
    onnx_io::ExportOptions export_options;
    export_options.opset = imported.opset;
    onnx_io::save_graph(imported.graph, export_options, export_path);
    std::printf("exported the imported graph (opset %lld) to %s\n", static_cast<long long>(imported.opset), export_path.c_str());
  }
  start = std::chrono::steady_clock::now();
  std::vector<ConstantValue> outputs;
  if (precision == "f64") {
    for (auto& v : evaluate_in<double>(imported.graph, inputs)) outputs.push_back(to_float32(v));
  } else {
    outputs = evaluate_in<float>(imported.graph, inputs);
  }
  if (verbose)
    std::printf("%s: opset %lld, %d ONNX nodes -> %d operators (%d folded at import); import %.2f s, %s evaluation %.2f s\n",
                path.c_str(), static_cast<long long>(imported.opset), model.proto.graph().node_size(),
                imported.graph.num_ops(), imported.folded_nodes, import_s, precision == "f64" ? "float64" : "float32",
                seconds_since(start));
  return outputs;
}

std::string scientific(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1e", v);
  return buf;
}

// Compares one test data set; returns whether every output is within its
// tolerance (--rtol, else its type's), recorded per type in `tolerances`.
bool check_test_set(const Loaded& model, const ModelRunOptions& o, const std::string& dir, bool verbose,
                    std::map<DType, double>& tolerances) {
  std::vector<NamedTensor> inputs, expected;
  for (const auto& p : numbered_files(dir, "input")) inputs.push_back(onnx_io::read_tensor_file(p, o.limits));
  for (const auto& p : numbered_files(dir, "output")) expected.push_back(onnx_io::read_tensor_file(p, o.limits));
  if (inputs.empty()) throw std::runtime_error("no input_K.pb files in '" + dir + "'");
  inputs = order_inputs(std::move(inputs), model.input_names);
  const std::vector<ConstantValue> actual =
      compute(model, o.model, inputs, o.precision, verbose, verbose ? o.export_path : "", o.input_shapes, o.limits);
  if (expected.size() != actual.size())
    throw std::runtime_error("'" + dir + "' has " + std::to_string(expected.size()) + " reference output(s), the model " +
                             std::to_string(actual.size()));
  bool ok = true;
  for (size_t k = 0; k < actual.size(); ++k) {
    const std::string name = model.proto.graph().output(static_cast<int>(k)).name();
    if (actual[k].shape() != expected[k].value.shape()) {
      std::printf("  output %-12s shape %s, reference %s  FAIL\n", name.c_str(), shape_to_string(actual[k].shape()).c_str(),
                  shape_to_string(expected[k].value.shape()).c_str());
      ok = false;
      continue;
    }
    if (actual[k].dtype != expected[k].value.dtype) {
      std::printf("  output %-12s type %s, reference %s  FAIL\n", name.c_str(),
                  std::string(dtype_name(actual[k].dtype)).c_str(),
                  std::string(dtype_name(expected[k].value.dtype)).c_str());
      ok = false;
      continue;
    }
    const std::vector<double> a = as_doubles(actual[k]), b = as_doubles(expected[k].value);
    double max_abs = 0, num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      const double d = (std::isnan(a[i]) && std::isnan(b[i])) ? 0 : a[i] - b[i];
      max_abs = std::max(max_abs, std::fabs(d));
      num += d * d;
      den += std::isnan(b[i]) ? 0 : b[i] * b[i];
    }
    const double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    const double rtol = o.rtol ? *o.rtol : test_data_tolerance(actual[k].dtype);
    tolerances[actual[k].dtype] = rtol;
    const bool pass = rel <= rtol && !std::isnan(rel);
    ok = ok && pass;
    // Float32 outputs keep the line they always had; others name type and tolerance.
    const std::string type = actual[k].dtype == DType::kFloat ? ""
                                                              : " (" + std::string(dtype_name(actual[k].dtype)) +
                                                                    ", tolerance " + scientific(rtol) + ")";
    std::printf("  output %-12s %-14s max abs error %.3e, relative L2 error %.3e%s  %s\n", name.c_str(),
                shape_to_string(actual[k].shape()).c_str(), max_abs, rel, type.c_str(), pass ? "ok" : "FAIL");
  }
  return ok;
}

// "1.0e-04", or per type "1.0e-02 for float16, 5.0e-02 for bfloat16" when
// some output is not float32.
std::string tolerance_text(const std::map<DType, double>& tolerances) {
  if (tolerances.empty() || (tolerances.size() == 1 && tolerances.begin()->first == DType::kFloat))
    return scientific(tolerances.empty() ? 1e-4 : tolerances.begin()->second);
  std::string out;
  for (const auto& [t, rtol] : tolerances)
    out += (out.empty() ? "" : ", ") + scientific(rtol) + " for " + std::string(dtype_name(t));
  return out;
}

}  // namespace

double test_data_tolerance(DType t) {
  switch (t) {
    case DType::kFloat:
      return 1e-4;
    case DType::kFloat16:
      return 1e-2;
    case DType::kBFloat16:
      return 5e-2;
    case DType::kInt64:
    case DType::kBool:
      return 1e-4;
  }
  return 1e-4;
}

int run_model(const ModelRunOptions& o) {
  Loaded model{onnx_io::load_model(o.model, nullptr, o.limits), {}};
  model.input_names = onnx_io::graph_input_names(model.proto);

  if (!o.test_data.empty()) {
    std::vector<std::string> sets;
    if (!numbered_files(o.test_data, "input").empty()) {
      sets.push_back(o.test_data);
    } else {  // a model folder of ONNX's own layout: test_data_set_N/
      for (const auto& entry : fs::directory_iterator(o.test_data))
        if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
          sets.push_back(entry.path().string());
      std::sort(sets.begin(), sets.end());
    }
    if (sets.empty()) throw std::runtime_error("'" + o.test_data + "' holds no input_K.pb files and no test_data_set_N folders");
    bool ok = true;
    std::map<DType, double> tolerances;
    for (size_t i = 0; i < sets.size(); ++i) {
      std::printf("test data %s\n", sets[i].c_str());
      ok = check_test_set(model, o, sets[i], i == 0, tolerances) && ok;
    }
    std::printf("%s (relative L2 tolerance %s)\n", ok ? "PASS" : "FAIL", tolerance_text(tolerances).c_str());
    return ok ? 0 : 1;
  }

  std::vector<NamedTensor> inputs;
  for (const auto& p : o.inputs) inputs.push_back(onnx_io::read_tensor_file(p, o.limits));
  inputs = order_inputs(std::move(inputs), model.input_names);
  const std::vector<ConstantValue> outputs =
      compute(model, o.model, inputs, o.precision, true, o.export_path, o.input_shapes, o.limits);
  if (!o.output_dir.empty()) fs::create_directories(o.output_dir);
  for (size_t k = 0; k < outputs.size(); ++k) {
    const std::string name = model.proto.graph().output(static_cast<int>(k)).name();
    const std::string path = (fs::path(o.output_dir.empty() ? "." : o.output_dir) / ("output_" + std::to_string(k) + ".pb")).string();
    onnx_io::write_tensor_file(outputs[k], name, path);
    std::printf("  output %-12s %-14s -> %s\n", name.c_str(), shape_to_string(outputs[k].shape()).c_str(), path.c_str());
  }
  return 0;
}

}  // namespace tgr::cli
