// `calibrate`: measures, on the GPU runtime, the cost of every distinct
// operator signature of the given models and stores it in the op_costs table
// of a database, keyed by device name and signature; signatures already
// there are reused unless --force. What the measured cost model reads.
//
// Each signature is timed as a graph of --repeat copies of the operator on
// inputs of its shapes, replayed as one CUDA graph (median of --iters after
// warm-up, CUDA events), divided by the copies: launch overhead is shared.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>

#include "ir/op_signature.h"
#include "rules_db/rules_db.h"
#include "runtime/cuda/gpu_model.h"
#include "runtime/interpreter.h"
#include "tools/cli_app.h"
#include "tools/cli_common.h"
#include "tools/input_shapes.h"
#include "tools/model_case.h"

namespace tgr {
namespace {

struct Options {
  std::string db;
  std::vector<std::string> models;
  std::string test_data;
  int iters = 50, repeat = 8;
  bool force = false;
  std::vector<std::string> input_shapes;  // --input-shape NAME=DIMS
};

// `repeat` copies of `node` over fresh inputs of its input shapes.
Graph single_op_graph(const Graph& model, const Node& node, int repeat) {
  Graph g;
  std::vector<ValueRef> args;
  for (size_t i = 0; i < node.inputs.size(); ++i)
    args.push_back(g.add_input("in" + std::to_string(i), model.shape(node.inputs[i]), model.dtype(node.inputs[i])));
  for (int r = 0; r < repeat; ++r)
    for (ValueRef v : g.add_op(*node.op, node.params, args)) g.add_output(v);
  return g;
}

std::vector<ConstantValue> inputs_for(const Graph& g) {
  std::vector<ConstantValue> values;
  uint64_t seed = 7;
  for (int32_t i : g.inputs()) {
    const Node& n = g.node(i);
    if (n.output_dtypes[0] == DType::kFloat) values.emplace_back(random_tensor<float>(n.output_shapes[0], seed++));
    else values.emplace_back(n.output_dtypes[0], Tensor<int64_t>(n.output_shapes[0]));  // index 0: always valid
  }
  return values;
}

int calibrate(const Options& o) {
  if (!gpu::gpu_available()) throw std::runtime_error("no CUDA device is visible");
  rules_db::RulesDb table = rules_db::RulesDb::open(o.db, true);  // the op_costs table
  std::string device;
  std::map<std::string, double> known;  // this device's stored costs, by signature
  int measured = 0, cached = 0;
  for (const std::string& path : o.models) {
    cli::ModelCase mc = cli::load_model_case(path, o.test_data, 1, cli::parse_input_shapes(o.input_shapes));
    const Graph& g = mc.graph;
    // Nodes computed at load (constants only) cost nothing at run time.
    std::vector<char> constant(g.nodes().size(), 0);
    std::map<std::string, int32_t> signatures;
    for (int32_t i : g.topological_order()) {
      const Node& n = g.node(i);
      if (n.is_constant()) constant[i] = 1;
      if (!n.is_op()) continue;
      constant[i] = std::all_of(n.inputs.begin(), n.inputs.end(), [&](ValueRef v) { return constant[v.node] != 0; });
      if (!constant[i]) signatures.emplace(op_signature(g, n), i);
    }
    std::printf("%s: %d operators, %zu distinct signatures\n", mc.name.c_str(), g.num_ops(), signatures.size());
    for (const auto& [sig, index] : signatures) {
      const Node& n = g.node(index);
      const Graph single = single_op_graph(g, n, n.op->name == "reshape" ? 1 : o.repeat);
      gpu::GpuOptions options;
      options.fuse = false;
      if (device.empty()) {
        device = gpu::GpuModel::load(single, options).device_name();
        for (const auto& [stored, ms] : table.op_costs(device)) known[stored] = ms;
      }
      if (!o.force) {
        if (auto it = known.find(sig); it != known.end()) {
          ++cached;
          std::printf("  %10.4f ms  cached    %s\n", it->second, sig.c_str());
          continue;
        }
      }
      double ms = 0;
      if (n.op->name != "reshape") {  // an alias: no work on the GPU
        gpu::GpuModel model = gpu::GpuModel::load(single, options);
        model.set_inputs(inputs_for(single));
        ms = model.replay_ms(o.iters, 5) / o.repeat;
      }
      table.put_op_cost(device, sig, ms);
      known[sig] = ms;
      ++measured;
      std::printf("  %10.4f ms  measured  %s\n", ms, sig.c_str());
      std::fflush(stdout);
    }
  }
  std::printf("device '%s': %d signatures measured, %d reused; the table holds %d for this device (%s)\n",
              device.c_str(), measured, cached, static_cast<int>(table.op_costs(device).size()), o.db.c_str());
  return 0;
}

}  // namespace
}  // namespace tgr

int main(int argc, char** argv) {
  CLI::App app{"calibrate: measure the GPU cost of each operator signature of models into the op_costs table",
               "calibrate"};
  tgr::cli::setup(app);
  tgr::Options o;
  app.add_option("--db", o.db, "the database (rules database) holding op_costs; created if absent")->required();
  app.add_option("models", o.models, "ONNX models")->required()->check(CLI::ExistingFile);
  app.add_option("--test-data", o.test_data, "input shapes from this folder's input_K.pb (one model)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--iters", o.iters, "timed replays per signature (median)")->check(CLI::Range(1, 10000));
  app.add_option("--repeat", o.repeat, "copies of the operator per replay")->check(CLI::Range(1, 64));
  app.add_flag("--force", o.force, "measure again signatures the table already holds");
  tgr::cli::add_input_shape_option(app, o.input_shapes);
  if (auto rc = tgr::cli::parse(app, argc, argv)) return *rc;
  return tgr::cli::guarded("calibrate", [&] { return tgr::calibrate(o); });
}
