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
#include <tuple>
#include <vector>

#include "ir/canonical.h"
#include "onnx/onnx_import.h"
#include "onnx/onnx_proto.h"
#include "optimizer/target.h"
#include "pipeline/option_table.h"
#include "pipeline/pipeline.h"
#include "python/session_bindings.h"
#include "rules_db/rule_json.h"
#include "rules_db/rules_db.h"
#include "runtime/interpreter.h"
#include "tools/input_shapes.h"

namespace py = pybind11;

namespace tgr::python {
namespace {

// A keyword argument of tgr.optimize() as its row of the option table
// (pipeline/option_table.h) takes it; ValueError naming it when the row's
// check refuses it.
pipeline::OptionValue keyword_value(const pipeline::OptionRow& row, const std::string& key, const py::handle& v) {
  const auto refused = [&](const std::string& words) {
    return py::value_error(key + "=" + std::string(py::repr(v)) + ": " + words);
  };
  pipeline::OptionValue value;
  switch (row.type) {
    case pipeline::OptionType::kFlag:
      value = v.cast<bool>();
      break;
    case pipeline::OptionType::kInt:
      value = v.cast<int64_t>();
      break;
    case pipeline::OptionType::kUnsigned:
      if (!py::isinstance<py::int_>(v) || v.cast<int64_t>() < 0) throw refused("must be a whole number, 0 or more");
      value = v.cast<uint64_t>();
      break;
    case pipeline::OptionType::kReal:
      value = v.cast<double>();
      break;
    case pipeline::OptionType::kText:
      value = v.cast<std::string>();
      break;
  }
  if (const std::string words = pipeline::check_words(row, value); !words.empty()) throw refused(words);
  return value;
}

// The keyword arguments (checked for unknown names by tgr/__init__.py) set
// on `o`, each through its row, after every one was checked.
void set_keywords(pipeline::OptimizeOptions& o, const py::dict& settings) {
  std::vector<std::pair<const pipeline::OptionRow*, pipeline::OptionValue>> given;
  for (const auto& [key, value] : settings) {
    const std::string name = key.cast<std::string>();
    const pipeline::OptionRow* row = nullptr;
    for (const pipeline::OptionRow& r : pipeline::option_table())
      if (r.keyword && pipeline::keyword_name(r) == name) row = &r;
    if (!row) throw py::type_error("optimize() got an unexpected keyword argument '" + name + "'");
    given.emplace_back(row, keyword_value(*row, name, value));
  }
  auto given_row = [&](const std::string& name) {
    return std::any_of(given.begin(), given.end(), [&](const auto& g) { return g.first->name == name; });
  };
  for (const auto& [row, value] : given) {
    if (!row->excludes.empty() && given_row(row->excludes))
      throw py::value_error(pipeline::keyword_name(*row) + " excludes " +
                            pipeline::keyword_name(*pipeline::find_option(row->excludes)));
    if (!row->needs.empty() && !given_row(row->needs))
      throw py::value_error(pipeline::keyword_name(*row) + " needs " +
                            pipeline::keyword_name(*pipeline::find_option(row->needs)));
  }
  // In the table's order, as the program sets them (a row may read what one before it set).
  std::sort(given.begin(), given.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [row, value] : given) row->set(o, value);
}

// The keyword arguments tgr.optimize() takes: (keyword, help, the program's option).
std::vector<std::tuple<std::string, std::string, std::string>> optimize_options() {
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  for (const pipeline::OptionRow& row : pipeline::option_table())
    if (row.keyword) out.emplace_back(pipeline::keyword_name(row), row.help, "--" + row.name);
  return out;
}

// optimize_model on files; returns the report as JSON text. `shipped_rules_db`
// and `specs_dir`: the package's data (pipeline::DataPaths); `settings`: the
// keyword arguments, rows of the option table.
std::string optimize_file(const std::string& model, const std::string& output, const std::string& rules_db,
                          const std::string& shipped_rules_db, const std::string& specs_dir,
                          const std::map<std::string, Shape>& input_shapes, const std::string& target,
                          const py::dict& settings) {
  pipeline::OptimizeOptions o;
  o.model = model;
  o.output = output;
  o.rules_db = rules_db;
  o.data = {shipped_rules_db, specs_dir};
  o.input_shapes = input_shapes;
  o.target.target = optimizer::parse_target(target);
  set_keywords(o, settings);
  pipeline::OptimizeReport report;
  {
    py::gil_scoped_release unlocked;  // the search runs on TBB threads; other Python threads may go on
    report = pipeline::optimize_model(o);
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
        py::arg("shipped_rules_db"), py::arg("specs_dir"), py::arg("input_shapes"), py::arg("target"),
        py::arg("settings"));
  m.def("optimize_options", &optimize_options);
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
