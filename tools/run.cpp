// `run`: evaluates an ONNX model or a graph with the CPU reference
// interpreter, checks a model against reference outputs, and prints the
// operator table.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "ir/hash.h"
#include "ir/text.h"
#include "runtime/interpreter.h"
#include "tools/cli_app.h"
#include "tools/cli_common.h"
#include "tools/input_shapes.h"
#include "tools/run_model.h"
#include "tools/stdout_data.h"
#ifdef TGR_HAVE_CUDA
#include "runtime/cuda/device_info.h"
#endif

namespace tgr {
namespace {

std::string param_range(const ParamSpec& p) {
  switch (p.kind) {
    case ParamKind::kInt:
      return p.max == INT64_MAX ? "int >= " + std::to_string(p.min)
                                : "int in [" + std::to_string(p.min) + ", " + std::to_string(p.max) + "]";
    case ParamKind::kInts:
      return (p.length >= 0 ? std::to_string(p.length) + " ints" : "ints") + " >= " + std::to_string(p.min);
    case ParamKind::kEnum: {
      std::string s;
      for (const auto& c : p.choices) s += (s.empty() ? "" : "|") + c;
      return s;
    }
    case ParamKind::kPadding:
      return "same|valid|TxLxBxR";
    case ParamKind::kFloat:
      return "number";
  }
  return "";
}

void print_op_table() {
  const auto ops = OpTable::instance().all();
  std::printf("%zu operators (the operator table, ir/ops/):\n\n", ops.size());
  for (const OpDef* op : ops) {
    std::string sig = op->name + "(";
    for (size_t i = 0; i < op->inputs.size(); ++i) sig += (i ? ", " : "") + op->inputs[i];
    sig += op->variadic ? ", ...)" : ")";
    std::printf("%-28s %s\n", sig.c_str(), op->summary.c_str());
    for (const ParamSpec& p : op->params) {
      std::string def = p.default_value ? param_value_to_string(*p.default_value) : "(required)";
      if (p.default_value && def.empty()) def = "(derived)";
      std::printf("    %-10s = %-10s %s; %s\n", p.name.c_str(), def.c_str(), param_range(p).c_str(), p.doc.c_str());
    }
    std::string linear;
    for (size_t i = 0; i < op->inputs.size(); ++i)
      if (op->multilinear[i]) linear += (linear.empty() ? "" : ", ") + op->inputs[i];
    if (op->nonlinear_when) linear += " (not with a fused activation)";
    const char* field = op->field == FieldSemantics::kExact          ? "exact"
                        : op->field == FieldSemantics::kInverse      ? "exact, division by the field inverse"
                        : op->field == FieldSemantics::kPseudoRandom ? "fixed pseudo-random function"
                                                                     : "none (needs an order)";
    std::printf("    multi-linear in: %s; field semantics: %s%s\n\n", linear.empty() ? "-" : linear.c_str(), field,
                op->commutative ? "; commutative" : "");
  }
}

template <class T>
std::string summary(const Tensor<T>& t) {
  char buf[256];
  if constexpr (kIsField<T>) {
    uint64_t h = kFnvOffsetShort;
    for (const Fp& v : t.data) h = fnv1a_step(h, v.residue());
    std::snprintf(buf, sizeof buf, "fingerprint %016llx", static_cast<unsigned long long>(h));
  } else {
    double sum = 0, abs_sum = 0;
    for (T v : t.data) sum += v, abs_sum += std::fabs(static_cast<double>(v));
    std::string first;
    for (int64_t i = 0; i < std::min<int64_t>(4, t.size()); ++i) {
      char v[32];
      std::snprintf(v, sizeof v, "%s%.6g", i ? ", " : "", static_cast<double>(t.data[i]));
      first += v;
    }
    std::snprintf(buf, sizeof buf, "sum %.6g, mean |x| %.6g, first [%s]", sum,
                  t.size() ? abs_sum / static_cast<double>(t.size()) : 0.0, first.c_str());
  }
  return buf;
}

template <class T>
std::vector<Tensor<T>> timed_eval(const Graph& g, uint64_t seed, const char* label) {
  const auto inputs = random_inputs<T>(g, seed);
  const auto start = std::chrono::steady_clock::now();
  auto outs = evaluate<T>(g, std::span<const Tensor<T>>(inputs));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("  %-8s %9.1f ms\n", label, ms);
  return outs;
}

void evaluate_and_print(const Graph& g, const std::string& domain, uint64_t seed) {
  std::printf("graph: %zu input(s), %d operator(s), %zu output(s)\n", g.inputs().size(), g.num_ops(), g.outputs().size());
  for (int32_t i : g.inputs())
    std::printf("  input  %-10s %s\n", g.node(i).name.c_str(), shape_to_string(g.node(i).output_shapes[0]).c_str());
  for (size_t k = 0; k < g.outputs().size(); ++k)
    std::printf("  output %-10s %s\n", g.output_names()[k].c_str(), shape_to_string(g.shape(g.outputs()[k])).c_str());
  if (g.num_ops() <= 12) std::printf("  text   %s\n", to_text(g).c_str());
  std::printf("evaluating on random inputs (seed %llu):\n", static_cast<unsigned long long>(seed));
  std::vector<Tensor<float>> f32;
  std::vector<Tensor<double>> f64;
  std::vector<Tensor<Fp>> field;
  if (domain == "f32" || domain == "all") f32 = timed_eval<float>(g, seed, "float32");
  if (domain == "f64" || domain == "all") f64 = timed_eval<double>(g, seed, "float64");
  if (domain == "field" || domain == "all") field = timed_eval<Fp>(g, seed, "field");
  for (size_t k = 0; k < g.outputs().size(); ++k) {
    std::printf("%s:\n", g.output_names()[k].c_str());
    if (!f32.empty()) std::printf("  float32  %s\n", summary(f32[k]).c_str());
    if (!f64.empty()) std::printf("  float64  %s\n", summary(f64[k]).c_str());
    if (!field.empty()) std::printf("  field    %s\n", summary(field[k]).c_str());
    if (!f32.empty() && !f64.empty()) {
      // The same random inputs in both precisions: their gap is rounding only.
      double num = 0, den = 0;
      for (int64_t i = 0; i < f64[k].size(); ++i) {
        const double d = static_cast<double>(f32[k].data[i]) - f64[k].data[i];
        num += d * d;
        den += f64[k].data[i] * f64[k].data[i];
      }
      std::printf("  float32 vs float64: relative L2 error %.2e\n", den > 0 ? std::sqrt(num / den) : std::sqrt(num));
    }
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// For --version, after the version line: the operator count and the GPU runtime.
std::string build_configuration() {
  std::string text = std::to_string(OpTable::instance().all().size()) + " operators\nGPU runtime: ";
#ifdef TGR_HAVE_CUDA
  text += cuda_device_report();
#else
  text += "not built (CUDA, cuBLAS or cuDNN not found at build time)";
#endif
  return text;
}

}  // namespace
}  // namespace tgr

int main(int argc, char** argv) {
  CLI::App app{"run: evaluate an ONNX model or a graph with the CPU reference interpreter", "run"};
  tgr::cli::setup(app, [] { return tgr::build_configuration(); });
  bool list_ops = false;
  tgr::cli::ModelRunOptions model;
  auto* m_opt = app.add_option("--model", model.model, "an ONNX model")->check(CLI::ExistingFile);
  app.add_option("--inputs", model.inputs, "input tensor files (ONNX TensorProto), in the model's input order or named")
      ->needs(m_opt)->check(CLI::ExistingFile);
  app.add_option("--output-dir", model.output_dir, "where to write output_K.pb")->needs(m_opt);
  auto* t_opt = app.add_option("--test-data", model.test_data,
                               "a folder of input_K.pb/output_K.pb, or of test_data_set_N/ folders: compute and compare")
                    ->needs(m_opt)->check(CLI::ExistingDirectory);
  app.add_option("--rtol", model.rtol,
                 "largest relative L2 error per output for --test-data to pass (default per output type: float 1e-4, "
                 "float16 1e-2, bfloat16 5e-2)")
      ->needs(t_opt)
      ->check(tgr::cli::at_least(0.0));
  app.add_option("--export", model.export_path,
                 "also write the imported graph as an ONNX model (same opset; -: stdout, and the rest to stderr)")
      ->needs(m_opt);
  app.add_option("--max-elements", model.limits.max_elements,
                 "largest tensor, in elements, the model or graph may ask for (default 2^28)")
      ->check(tgr::cli::at_least(int64_t{1}));
  app.add_option("--max-bytes", model.limits.max_bytes,
                 "total bytes of the model's constants (initializers, external data, what import computes) "
                 "or of the graph's values (default 4 GiB)")
      ->check(tgr::cli::at_least(int64_t{1}));
  app.add_option("--precision", model.precision, "evaluate models in float32 or float64")
      ->check(CLI::IsMember({"f32", "f64"}))->needs(m_opt);
  std::vector<std::string> input_shapes;
  tgr::cli::add_input_shape_option(app, input_shapes);
  std::string graph_file, expr, shapes, domain = "all";
  uint64_t seed = 1;
  app.add_flag("--ops", list_ops, "print the operator table");
  auto* g_opt = app.add_option("--graph", graph_file, "a graph file (.tg, see examples/)")->check(CLI::ExistingFile);
  auto* e_opt = app.add_option("--expr", expr, "a graph in text form, e.g. \"relu(conv2d(i0, k0))\"");
  app.add_option("--shapes", shapes, "shapes of the variables of --expr, e.g. i0=1x3x8x8,k0=4x3x3x3")->needs(e_opt);
  app.add_option("--domain", domain, "float32, float64, the prime field, or all")
      ->check(CLI::IsMember({"f32", "f64", "field", "all"}));
  app.add_option("--seed", seed, "seed of the random inputs");
  g_opt->excludes(e_opt);
  m_opt->excludes(g_opt)->excludes(e_opt);
  if (auto rc = tgr::cli::parse(app, argc, argv)) return *rc;

  return tgr::cli::guarded("run", [&] {
    if (list_ops) tgr::print_op_table();
    if (!model.model.empty()) {
      if (model.test_data.empty() && model.inputs.empty())
        throw std::runtime_error("--model needs --inputs FILES or --test-data DIR");
      model.input_shapes = tgr::cli::parse_input_shapes(input_shapes);
      std::vector<tgr::cli::FileRole> files{{"--model", model.model}, {"--export", model.export_path, true}};
      for (const auto& in : model.inputs) files.push_back({"--inputs", in});
      for (const auto& in : model.inputs) {
        // run writes output_K.pb into --output-dir (or here): none may be an input.
        const auto dir = std::filesystem::path(model.output_dir.empty() ? "." : model.output_dir);
        const auto name = std::filesystem::path(in).filename().string();
        if (name.rfind("output_", 0) == 0) files.push_back({"an output (--output-dir)", (dir / name).string(), true});
      }
      if (!model.test_data.empty()) {  // its input_K.pb and output_K.pb (the expected outputs)
        std::error_code ec;
        for (auto it = std::filesystem::recursive_directory_iterator(model.test_data, ec);
             !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
          if (it.depth() >= 1) it.disable_recursion_pending();  // test_data_set_N/ holds the files
          if (it->is_regular_file(ec)) files.push_back({"a file of --test-data", it->path().string()});
        }
      }
      tgr::cli::refuse_same_files(files);
      std::optional<tgr::cli::DataToStdout> to_stdout;  // --export -
      if (tgr::cli::is_stdout(model.export_path)) model.export_path = to_stdout.emplace(".onnx").path();
      const int status = tgr::cli::run_model(model);
      if (to_stdout && status == 0) to_stdout->send();
      return status;
    }
    if (!graph_file.empty())
      tgr::evaluate_and_print(tgr::parse_graph_file(tgr::read_file(graph_file), model.limits), domain, seed);
    if (!expr.empty())
      tgr::evaluate_and_print(tgr::build_graph(expr, tgr::parse_shape_map(shapes), {}, model.limits), domain, seed);
    if (!list_ops && graph_file.empty() && expr.empty()) {
      throw tgr::cli::UsageError("nothing to do: give --model, --ops, --graph FILE or --expr TEXT (see --help)");
    }
    return 0;
  });
}
