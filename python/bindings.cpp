// The module tgr._tgr: what the Python package (python/tgr/__init__.py)
// calls. Models and tensors cross as serialized ONNX protobufs (bytes): the
// Python side has the onnx package's ModelProto and numpy arrays, this side
// the ONNX C++ library's, and their conversions (onnx/onnx_proto.h) stay the
// ones the tools use. Every C++ exception becomes tgr.Error with the message
// the tools print after "PROGRAM: error: ".
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "ir/canonical.h"
#include "onnx/onnx_import.h"
#include "onnx/onnx_proto.h"
#include "optimizer/optimize_model.h"
#include "python/session_bindings.h"
#include "rules_db/rule_json.h"
#include "rules_db/rules_db.h"
#include "runtime/interpreter.h"
#include "saturation/saturation.h"
#include "tools/input_shapes.h"

namespace py = pybind11;

namespace tgr::python {
namespace {

// The settings of `optimize` the Python function takes as keyword
// arguments, named as its options (--node-limit: node_limit). Defaults are
// those of the option structs, as in the tool.
struct OptimizeSettings {
  std::string search;  // backtrack | saturate | both; empty: the target's default
  bool sequential = false;
  tgr::saturation::SaturationOptions saturation = tgr::saturation::optimize_defaults();
};

void apply_setting(optimizer::OptimizeOptions& o, OptimizeSettings& s, const std::string& key, const py::handle& v) {
  if (key == "budget") o.backtracking.budget = v.cast<int>();
  else if (key == "alpha") o.backtracking.alpha = v.cast<double>();
  else if (key == "timeout") o.backtracking.timeout_s = v.cast<double>();
  else if (key == "search") s.search = v.cast<std::string>();
  else if (key == "node_limit") {
    s.saturation.runner.node_limit = v.cast<size_t>();
    s.saturation.runner.growth_limit = 0;  // the limit given, alone (as --node-limit)
    s.saturation.target_growth_limit = false;
  } else if (key == "node_growth") {
    s.saturation.runner.growth_limit = v.cast<double>();
    s.saturation.target_growth_limit = false;
  } else if (key == "iterations") {
    s.saturation.runner.iteration_limit = v.cast<int>();
    s.saturation.target_iteration_limit = false;
  } else if (key == "ilp_timeout") s.saturation.ilp.time_limit_s = v.cast<double>();
  else if (key == "refine_window") s.saturation.refine_window = v.cast<size_t>();
  else if (key == "device") o.target.gpu_device = v.cast<std::string>();
  else if (key == "unmeasured_margin") o.target.unmeasured_margin = v.cast<double>();
  else if (key == "proof_timeout_ms") o.proof_timeout_ms = v.cast<unsigned>();
  else if (key == "sequential") s.sequential = v.cast<bool>();
  else if (key == "max_elements") o.import_limits.max_elements = v.cast<int64_t>();
  else if (key == "max_bytes") o.import_limits.max_bytes = v.cast<int64_t>();
  else throw py::type_error("optimize() got an unexpected keyword argument '" + key + "'");
}

// optimize_model on files; returns the report as JSON text. `settings`:
// the keyword arguments above, checked by the caller (tgr/__init__.py).
std::string optimize_file(const std::string& model, const std::string& output, const std::string& rules_db,
                          const std::string& default_rules_db, const std::string& specs_dir,
                          const std::map<std::string, Shape>& input_shapes, const std::string& target,
                          const py::dict& settings) {
  optimizer::OptimizeOptions o;
  o.model = model;
  o.output = output;
  o.rules_db = rules_db;
  o.default_rules_db = default_rules_db;
  o.specs_dir = specs_dir;
  o.input_shapes = input_shapes;
  OptimizeSettings s;
  for (const auto& [key, value] : settings) apply_setting(o, s, key.cast<std::string>(), value);
  o.backtracking.parallel = !s.sequential;
  // As `optimize --target` (tools/optimize.cpp): the measured targets read
  // the shipped table (onnxruntime-cpu) or the rules database (tgr-gpu).
  o.target.target = optimizer::parse_target(target);
  o.target.costs_db = o.target.target == optimizer::Target::kTgrGpu ? rules_db : default_rules_db;
  // As `optimize --search` (the target's search when not given).
  saturation::use_search(o, s.search, s.saturation);
  optimizer::OptimizeReport report;
  {
    py::gil_scoped_release unlocked;  // the search runs on TBB threads; other Python threads may go on
    report = optimizer::optimize_model(o);
  }
  return report.to_json().dump(2);
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// `run --model` on tensors given by name: imports the model at the inputs'
// shapes and evaluates it in float32 with the reference interpreter.
// Returns (name, TensorProto bytes) per model output, in order.
std::vector<std::pair<std::string, py::bytes>> run_model(const std::optional<std::string>& path,
                                                         const std::optional<py::bytes>& model_bytes,
                                                         const std::map<std::string, py::bytes>& input_tensors,
                                                         const std::map<std::string, Shape>& given_shapes) {
  onnx::ModelProto proto;
  std::string where = "the model";
  if (path) {
    proto = onnx_io::load_model(*path);
    where = "'" + *path + "'";
  } else if (!proto.ParseFromString(std::string(*model_bytes))) {
    throw onnx_io::OnnxError("the model is not a valid ONNX protobuf");
  }
  const std::vector<std::string> names = onnx_io::graph_input_names(proto);
  for (const auto& [name, bytes] : input_tensors)
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw std::invalid_argument("the model has no input '" + name + "' (its inputs: " + join(names) + ")");
  std::vector<ConstantValue> values;
  onnx_io::ImportOptions import_options;
  for (const auto& name : names) {
    auto it = input_tensors.find(name);
    if (it == input_tensors.end())
      throw std::invalid_argument("no tensor given for the model's input '" + name + "' (its inputs: " + join(names) +
                                  ")");
    onnx::TensorProto tensor;
    if (!tensor.ParseFromString(std::string(it->second)))
      throw onnx_io::OnnxError("the tensor for input '" + name + "' is not a valid TensorProto");
    values.push_back(onnx_io::tensor_to_constant(tensor));
    import_options.input_shapes[name] = values.back().shape();
  }
  cli::add_given_input_shapes(import_options.input_shapes, given_shapes);
  std::vector<ConstantValue> outputs;
  {
    py::gil_scoped_release unlocked;
    onnx_io::ImportedModel imported;
    try {
      imported = onnx_io::import_model(proto, import_options);
    } catch (const onnx_io::OnnxError& e) {
      throw std::runtime_error(where + ": " + e.what());
    }
    outputs = evaluate_values<float>(imported.graph, values);
  }
  std::vector<std::pair<std::string, py::bytes>> result;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const std::string name = proto.graph().output(static_cast<int>(k)).name();
    result.emplace_back(name, py::bytes(onnx_io::constant_to_tensor(outputs[k], name).SerializeAsString()));
  }
  return result;
}

// Read-only queries of a rules database, as the `rules` program's.
class RulesDbView {
 public:
  explicit RulesDbView(const std::string& path) : db_(rules_db::RulesDb::open_read_only(path)) {}

  const std::string& path() const { return db_.path(); }

  // `rules stats`: counts by status, kind and size, and the runs.
  py::dict stats() const {
    py::dict out, by_status, by_kind, by_size;
    for (const auto& [status, n] : db_.counts_by_status()) by_status[py::str(status)] = n;
    for (const auto& [kind, n] : db_.counts_by_kind()) by_kind[py::str(kind)] = n;
    for (const auto& [src, dst, n] : db_.counts_by_size()) by_size[py::make_tuple(src, dst)] = n;
    py::list runs;
    for (const auto& r : db_.list_runs()) {
      py::dict run;
      run["id"] = r.run.id;
      run["kind"] = r.run.kind;
      run["status"] = r.run.status;
      run["rules_inserted"] = r.rules_inserted;
      run["started_at"] = r.run.started_at;
      runs.append(run);
    }
    out["path"] = db_.path();
    out["schema_version"] = db_.schema_version();
    out["rules"] = db_.count_rules();
    out["by_status"] = by_status;
    out["by_kind"] = by_kind;
    out["by_size"] = by_size;
    out["runs"] = runs;
    return out;
  }

  // `rules list --format json`: every column of each rule, as JSON text.
  std::string rules_json(const std::optional<std::string>& status) const {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& r : db_.list_rules(status)) out.push_back(rules_db::rule_json(r));
    return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  }

  // `rules show ID`; "" when there is no such rule.
  std::string rule_json(int64_t id) const {
    const auto rule = db_.get_rule(id);
    return rule ? rules_db::rule_json(*rule).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                : "";
  }

  // `rules lookup TEXT`: the rule of that canonical text; "" when absent.
  // A text that does not parse raises ParseError (`rules` exits 2).
  std::string lookup_json(const std::string& text) const {
    const auto rule = db_.find_by_canonical(canonical_rule_text(text));
    return rule ? rules_db::rule_json(*rule).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                : "";
  }

 private:
  rules_db::RulesDb db_;
};

}  // namespace
}  // namespace tgr::python

PYBIND11_MODULE(_tgr, m) {
  using namespace tgr::python;
  m.doc() = "tgr's C++ core; use the package tgr (python/tgr/__init__.py)";
  static py::handle error = PyErr_NewException("tgr.Error", PyExc_RuntimeError, nullptr);
  m.attr("Error") = error;
  // Errors of pybind11 itself (a wrong argument type) keep their Python
  // types; every other C++ exception becomes tgr.Error (MemoryError for
  // std::bad_alloc), with the message the tools print.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const py::error_already_set&) {
      throw;
    } catch (const py::builtin_exception&) {
      throw;
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, "out of memory (the input asks for more than this machine has)");
    } catch (const std::exception& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
  m.def("optimize_file", &optimize_file, py::arg("model"), py::arg("output"), py::arg("rules_db"),
        py::arg("default_rules_db"), py::arg("specs_dir"), py::arg("input_shapes"), py::arg("target"),
        py::arg("settings"));
  m.def("run_model", &run_model, py::arg("path"), py::arg("model_bytes"), py::arg("inputs"), py::arg("input_shapes"));
  py::class_<RulesDbView>(m, "RulesDbView")
      .def(py::init<const std::string&>(), py::arg("path"))
      .def_property_readonly("path", &RulesDbView::path)
      .def("stats", &RulesDbView::stats)
      .def("rules_json", &RulesDbView::rules_json, py::arg("status"))
      .def("rule_json", &RulesDbView::rule_json, py::arg("id"))
      .def("lookup_json", &RulesDbView::lookup_json, py::arg("text"));
  register_session(m);  // GpuSession, DeviceArray (session_bindings.cpp)
}
