// export_samples: writes sample graphs covering every operator of the table
// as ONNX models with test data computed by the reference interpreter, for
// tests/onnx_export_check.py to compare against onnxruntime.
//
//   build/bin/export_samples DIR            # all samples
//   build/bin/export_samples DIR --only NAME  # the samples whose name contains NAME
//   build/bin/export_samples DIR --opset 19 --ir-version 9  # every sample at that opset instead
//
// For each sample and opset: DIR/<sample>_op<opset>/model.onnx and
// DIR/<sample>_op<opset>/test_data_set_0/{input_K.pb, output_K.pb} (the ONNX
// test-case layout), the outputs from evaluate_values<float>. The program
// fails when some operator of the table has no sample.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ir/text.h"
#include "ir/hash.h"
#include "onnx/onnx_export.h"
#include "runtime/interpreter.h"
#include "tools/cli_common.h"

namespace tgr {
namespace {
namespace fs = std::filesystem;

// Values of one input: uniform in [lo, hi) (floats), integers in [lo, hi]
// (int64, and floats with `integral`). Bools are 0 or 1.
struct Range {
  double lo = -1, hi = 1;
  bool integral = false;
};

struct Sample {
  std::string name;
  std::string text;    // a tuple in the text form (README.md)
  std::string shapes;  // "x=2x3,ids=int64:4"
  std::map<std::string, Range> ranges{};
  std::vector<int64_t> opsets{11, 13, 17, 18};
  std::function<Graph()> build{};  // a hand-built graph instead of `text`
};

const Range kPositive{0.5, 2.0};
Range ints(int64_t lo, int64_t hi) { return {static_cast<double>(lo), static_cast<double>(hi), true}; }
Range int_valued(int64_t lo, int64_t hi) { return ints(lo, hi); }

// Graphs built by hand: constants (which the text form has no syntax for)
// and outputs that are inputs, constants or repeated values.
Graph constants_graph() {
  Graph g;
  const ValueRef x = g.add_input("x", {2, 3});
  const ValueRef ids = g.add_input("ids", {4}, DType::kInt64);
  const ValueRef w = g.add_constant(ConstantValue(Tensor<float>({2, 3}, {1, -2, 3, 0.5f, 0.25f, -4})), "w");
  const ValueRef offs = g.add_constant(ConstantValue(DType::kInt64, Tensor<int64_t>({4}, {1, -1, 2, 0})), "");
  const ValueRef mask = g.add_constant(ConstantValue(DType::kBool, Tensor<int64_t>({2, 3}, {1, 0, 1, 1, 0, 0})), "mask");
  const ValueRef y = g.apply("mul", {x, w});
  g.add_output(g.apply("where", {mask, y, x}), "y");
  g.add_output(g.apply("add", {ids, offs}), "ids_plus");
  g.add_output(w, "w");      // a constant output under its own name
  g.add_output(offs, "offs");  // an unnamed constant
  return g;
}

Graph outputs_graph() {
  Graph g;
  const ValueRef x = g.add_input("x", {2, 3});
  const ValueRef b = g.add_input("b", {3});
  g.add_input("unused", {5});  // declared, never read: still a model input
  const ValueRef r = g.apply("relu", {g.apply("add", {x, b})});
  g.add_output(x, "x");          // an input under its own name
  g.add_output(b, "b_again");    // an input under another name
  g.add_output(r, "r");
  g.add_output(r, "r_again");    // one value twice
  g.add_output(g.apply("tanh", {r}), "v3_0");  // a name the exporter might generate
  return g;
}

// A convolution and a product with their biases, the forms the exporter
// writes as Conv with B and Gemm (onnx/export_fusions.h): biases of a
// channel each (rank 4 and rank 3, one shared by two convolutions), and a
// convolution read twice, whose add stays an Add.
Graph biases_graph() {
  Graph g;
  const ValueRef x = g.add_input("x", {1, 3, 6, 6});
  const ValueRef a = g.add_input("a", {2, 4});
  const ValueRef w = g.add_constant(ConstantValue(random_tensor<float>({4, 3, 3, 3}, 11)), "w");
  const ValueRef b4 = g.add_constant(ConstantValue(random_tensor<float>({1, 4, 1, 1}, 12)), "b4");
  const ValueRef b3 = g.add_constant(ConstantValue(random_tensor<float>({4, 1, 1}, 13)), "b3");
  const ValueRef m = g.add_constant(ConstantValue(random_tensor<float>({4, 5}, 14)), "m");
  const ValueRef c = g.add_constant(ConstantValue(random_tensor<float>({5}, 15)), "c");
  g.add_output(g.apply("relu", {g.apply("add", {g.apply("conv2d", {x, w}), b4})}), "conv_b4");
  g.add_output(g.apply("add", {b3, g.apply("conv2d", {x, w}, {{"stride", std::vector<int64_t>{2, 2}}})}), "conv_b3");
  g.add_output(g.apply("add", {g.apply("conv2d", {x, w}, {{"pad", std::string("valid")}}), b4}), "conv_b4_again");
  const ValueRef twice = g.apply("conv2d", {x, w}, {{"dilation", std::vector<int64_t>{2, 2}}});
  g.add_output(g.apply("add", {twice, b4}), "conv_read_twice");
  g.add_output(twice, "conv_itself");
  g.add_output(g.apply("add", {g.apply("matmul", {a, m}), c}), "gemm");
  return g;
}

// Elementwise.
std::vector<Sample> elementwise_samples() {
  return {
      {"binary_broadcast", "(add(x, y), sub(x, y), mul(x, y), div(x, p))", "x=2x3x4,y=3x1,p=4", {{"p", kPositive}}},
      {"binary_int",
       "(add(a, b), sub(a, b), mul(a, b), div(a, c), div(a, neg(c)), neg(a), abs(b))",
       "a=int64:3x4,b=int64:4,c=int64:3x1",
       {{"a", ints(-9, 9)}, {"b", ints(-5, 5)}, {"c", ints(1, 4)}}},
      {"pow",
       "(pow(p, y), pow(x, k))",
       "p=2x3,y=2x3,x=3x4,k=4",
       {{"p", kPositive}, {"y", Range{-2, 2}}, {"k", int_valued(-2, 3)}}},
      {"scalar_mul", "scalar_mul(x, s)", "x=2x3,s=scalar"},
      {"unary", "(neg(x), relu(x), sigmoid(x), tanh(x), abs(x), exp(x), erf(x))", "x=3x4", {{"x", Range{-3, 3}}}},
      {"softplus_rounding", "(softplus(x), floor(x), ceil(x))", "x=3x4", {{"x", Range{-30, 30}}}},
      {"trigonometric", "(cos(x), sin(x))", "x=3x4", {{"x", Range{-10, 10}}}},
      {"unary_positive", "(sqrt(p), log(p))", "p=3x4", {{"p", kPositive}}},
      {"unary_nan", "(sqrt(x), log(x), div(x, y))", "x=3x4,y=3x4", {{"y", int_valued(-1, 1)}}},  // NaN and inf
      {"activations",
       "(leaky_relu(x), leaky_relu[alpha=0.3](x), hard_sigmoid(x), hard_sigmoid[alpha=0.25, beta=0.4](x), "
       "hard_swish(x))",
       "x=4x5",
       {{"x", Range{-5, 5}}},
       {11, 13, 14, 17}},
      {"clip", "(clip[min=-0.5, max=0.25](x), clip[min=-0.2](x), clip[max=0.3](x), clip(x))", "x=3x4"},
  };
}

// Matmul.
std::vector<Sample> matmul_samples() {
  return {
      {"matmul", "(matmul(a, b), batch_matmul(c, d))", "a=3x4,b=4x5,c=2x3x4,d=2x4x2"},
  };
}

// Conv.
std::vector<Sample> conv_samples() {
  return {
      {"conv_same", "conv2d(x, w)", "x=1x3x8x8,w=4x3x3x3"},
      {"conv_stride_same", "conv2d[stride=2x2](x, w)", "x=2x3x8x7,w=4x3x4x3"},
      {"conv_explicit_relu", "conv2d[pad=1x2x0x1, dilation=2x1, act=relu](x, w)", "x=1x2x7x6,w=3x2x3x3"},
      {"conv_valid_groups", "(conv2d[pad=valid, stride=2x1](x, w), conv2d(x, d))", "x=1x4x6x6,w=6x2x3x3,d=4x1x3x3"},
      {"enlarge", "(enlarge[size=5x3](w), conv2d(x, enlarge[size=5x5](w)))", "x=1x3x6x6,w=4x3x3x1"},
  };
}

// Pool.
std::vector<Sample> pool_samples() {
  return {
      {"avgpool",
       "(avgpool[kernel=3x3](x), avgpool[kernel=3x3, stride=2x2, include_pad=1](x), avgpool[kernel=2x3, stride=2x1, "
       "pad=1x1x0x1](x))",
       "x=1x2x7x6"},
      {"maxpool",
       "(maxpool[kernel=3x3, stride=2x2](x), maxpool[kernel=2x2, stride=2x2, pad=valid](x), "
       "maxpool[kernel=3x2, pad=2x0x1x1](x))",
       "x=2x2x7x6"},
  };
}

// Layout.
std::vector<Sample> layout_samples() {
  return {
      {"transpose", "(transpose(x), transpose[perm=0x2x1](x), transpose(m))", "x=2x3x4,m=int64:2x3"},
      {"concat_split",
       "(concat[axis=1](x, y, x), split[axis=1, sizes=2x3x1](x).0, split[axis=1, sizes=2x3x1](x).2)",
       "x=2x6,y=2x1",
       {},
       {11, 12, 13, 17, 18}},
      {"slice",
       "(slice[starts=0x1x0, ends=2x3x5, steps=1x1x2](x), slice[starts=1x3x4, ends=-1x0x-1, steps=-1x-2x-3](x))",
       "x=2x4x5"},
      {"slice_flip", "slice[starts=0x4, ends=-1x-1, steps=-1x-1](x)", "x=1x5"},
      {"expand_reshape", "(expand[shape=2x3x4](x), reshape[shape=4x6](expand[shape=2x3x4](x)), reshape[shape=6](a))",
       "x=3x1,a=int64:2x3"},
      {"pad", "(pad[pads=1x0x2x1, value=0.5](x), pad[pads=0x2x0x0](x), pad[pads=1x1x0x2, value=-3](a))",
       "x=3x4,a=int64:2x2"},
      {"pad_conv", "(conv2d(pad[pads=0x0x1x1x0x0x0x1](x), w), conv2d(x, pad[pads=0x0x1x0x0x0x1x2](w)))",
       "x=1x2x6x6,w=3x2x3x1"},
      // Pads a Pool's pads hold (a zero pad counted by the average, -inf for
      // the maximum) and ones they cannot (beyond the kernel; a zero pad
      // before a maximum; an average leaving its own padding out).
      {"pad_pool",
       "(avgpool[kernel=3x3](pad[pads=0x0x1x1x0x0x1x0](x)), maxpool[kernel=3x3, stride=2x2](pad[pads=0x0x1x1x0x0x1x1, "
       "value=-inf](x)), maxpool[kernel=2x2](pad[pads=0x0x0x2x0x0x0x0, value=-inf](x)), "
       "maxpool[kernel=2x2](pad[pads=0x0x1x0x0x0x0x0](x)), avgpool[kernel=3x3, pad=1x1x1x1](pad[pads=0x0x1x0x0x0x0x0]("
       "x)))",
       "x=1x2x7x6"},
      {"matmul_bias", "(add(matmul(a, b), c), add(d, matmul(a, h)), add(batch_matmul(e, f), g))",
       "a=3x4,b=4x5,c=5,d=3x5,h=4x5,e=2x3x4,f=2x4x2,g=2"},
      {"biases", "", "", {}, {11, 13, 17, 18}, biases_graph},
      // Products flattened between reshapes (how MatMul of rank > 2 is
      // imported), written as one MatMul; a reshape to other axes stays.
      {"matmul_nd",
       "(reshape[shape=2x3x5](matmul(reshape[shape=6x4](x), w)), reshape[shape=3x10](matmul(reshape[shape=6x4](x), "
       "w)), "
       "reshape[shape=2x3x4x6](batch_matmul(reshape[shape=6x4x5](a), reshape[shape=6x5x6](b))))",
       "x=2x3x4,w=4x5,a=2x3x4x5,b=2x3x5x6"},
      {"bool_layout",
       "(pad[pads=1x0x0x1, value=1](m), transpose(m), reshape[shape=6](m), concat[axis=0](m, m), "
       "slice[starts=1x2, ends=-1x-1, steps=-1x-2](m), expand[shape=2x2x3](m))",
       "m=bool:2x3",
       {},
       {11, 12, 13, 17}},
  };
}

// Constants.
std::vector<Sample> constant_samples() {
  return {
      {"constants",
       "(matmul(a, eye[n=4]()), add(a, ones[shape=3x4]()), conv2d(x, conv_identity[channels=2, kernel=3x3]()), "
       "conv2d(x, pool_kernel[channels=2, kernel=3x3]()))",
       "a=3x4,x=1x2x5x5"},
      {"constant_output", "(eye[n=3](), add(a, ones[shape=3]()))", "a=3"},
  };
}

// Comparisons, masks, casts.
std::vector<Sample> comparison_samples() {
  return {
      {"compare_float",
       "(equal(x, y), less(x, y), greater(x, y), less_equal(x, y), greater_equal(x, y))",
       "x=3x4,y=4",
       {{"x", int_valued(-2, 2)}, {"y", int_valued(-2, 2)}},
       {11, 12, 13, 17}},
      {"compare_int",
       "(equal(a, b), less(a, b), greater(a, b), less_equal(a, b), greater_equal(a, b))",
       "a=int64:3x4,b=int64:3x1",
       {{"a", ints(-2, 2)}, {"b", ints(-2, 2)}},
       {11, 12, 13, 17}},
      {"compare_nan",
       "(less_equal(log(x), y), greater_equal(log(x), y), equal(log(x), log(x)))",
       "x=3x4,y=3x4",
       {},
       {11, 12, 13}},
      {"masks", "(equal(m, n), logical_not(m), is_nan(log(x)), where(m, x, y), where(greater(x, y), a, b))",
       "m=bool:3x4,n=bool:4,x=3x4,y=3x4,a=int64:3x4,b=int64:4"},
      {"bool_select", "(where(m, n, logical_not(m)), where(m, logical_not(n), n))", "m=bool:3x4,n=bool:4"},
      {"cast",
       "(cast[to=int64](x), cast[to=bool](z), cast[to=float](a), cast[to=bool](a), cast[to=float](m), "
       "cast[to=int64](m), cast[to=float](x))",
       "x=3x4,z=3x4,a=int64:3x4,m=bool:3x4",
       {{"x", Range{-3, 3}}, {"z", int_valued(-1, 1)}, {"a", ints(-2, 2)}}},
  };
}

// Normalization.
std::vector<Sample> normalization_samples() {
  return {
      {"softmax",
       "(softmax[axis=0](x), softmax[axis=1](x), softmax[axis=2](x), softmax[axis=0](v))",
       "x=2x3x4,v=5",
       {{"x", Range{-3, 3}}}},
      {"layer_norm",
       "(layer_norm[axis=2](x, s, b), layer_norm[axis=1, epsilon=0.001](x, s2, b2))",
       "x=2x3x4,s=4,b=4,s2=3x4,b2=3x4",
       {},
       {11, 13, 17, 18}},
      {"batch_norm",
       "(batch_norm(x, s, b, m, v), batch_norm[epsilon=0.01](y, s, b, m, v))",
       "x=2x3x4x5,y=2x3,s=3,b=3,m=3,v=3",
       {{"v", kPositive}},
       {11, 13, 14, 15, 17}},
  };
}

// Reductions.
std::vector<Sample> reduction_samples() {
  return {
      {"reduce",
       "(reduce_sum[axes=1](x), reduce_sum[axes=0x2, keepdims=0](x), reduce_mean[axes=2](x), "
       "reduce_mean[axes=0x1, keepdims=0](x), reduce_sum[axes=0](a), reduce_max[axes=1](x), "
       "reduce_min[axes=0x2, keepdims=0](x), reduce_max[axes=0](a))",
       "x=2x3x4,a=int64:3x2",
       {},
       {11, 13, 17, 18}},
  };
}

// Indexing.
std::vector<Sample> indexing_samples() {
  return {
      {"gather",
       "(gather[axis=1](x, i), gather(x, j), gather[axis=2](x, k))",
       "x=2x3x4,i=int64:2x2,j=int64:3,k=int64:scalar",
       {{"i", ints(-3, 2)}, {"j", ints(-2, 1)}, {"k", ints(-4, 3)}}},
      {"gather_elements",
       "(gather_elements[axis=1](x, i), gather_elements(a, j))",
       "x=2x3x4,i=int64:2x2x4,a=int64:3x2,j=int64:2x2",
       {{"i", ints(-3, 2)}, {"j", ints(-3, 2)}}},
  };
}

// Graphs: a residual block, attention, and naming corner cases.
std::vector<Sample> graph_samples() {
  return {
      {"residual_block", "relu(add(conv2d(conv2d[act=relu](x, k0), k1), x))", "x=1x8x12x12,k0=8x8x3x3,k1=8x8x3x3"},
      {"attention",
       "matmul(softmax[axis=1](scalar_mul(matmul(matmul(x, wq), transpose(matmul(x, wk))), s)), matmul(x, wv))",
       "x=6x8,wq=8x4,wk=8x4,wv=8x4,s=scalar"},
      {"constants_initializers", "", "", {{"ids", ints(-5, 5)}}, {11, 13, 17}, constants_graph},
      {"output_names", "", "", {}, {11, 17}, outputs_graph},
  };
}

std::vector<Sample> samples() {
  std::vector<Sample> all;
  for (auto group :
       {&elementwise_samples, &matmul_samples, &conv_samples, &pool_samples, &layout_samples, &constant_samples,
        &comparison_samples, &normalization_samples, &reduction_samples, &indexing_samples, &graph_samples}) {
    std::vector<Sample> some = group();
    all.insert(all.end(), std::make_move_iterator(some.begin()), std::make_move_iterator(some.end()));
  }
  return all;
}

ConstantValue random_value(DType dtype, const Shape& shape, const Range& range, std::mt19937_64& rng) {
  if (dtype == DType::kBool) {
    Tensor<int64_t> t(shape);
    for (int64_t& v : t.data) v = static_cast<int64_t>(rng() & 1);
    return ConstantValue(DType::kBool, std::move(t));
  }
  if (dtype == DType::kInt64 || range.integral) {
    std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(range.lo), static_cast<int64_t>(range.hi));
    Tensor<int64_t> t(shape);
    for (int64_t& v : t.data) v = dist(rng);
    if (dtype == DType::kInt64) return ConstantValue(DType::kInt64, std::move(t));
    Tensor<float> f(shape);
    for (size_t i = 0; i < t.data.size(); ++i) f.data[i] = static_cast<float>(t.data[i]);
    return ConstantValue(std::move(f));
  }
  std::uniform_real_distribution<float> dist(static_cast<float>(range.lo), static_cast<float>(range.hi));
  Tensor<float> t(shape);
  for (float& v : t.data) v = dist(rng);
  return ConstantValue(std::move(t));
}

Graph build(const Sample& s) {
  if (s.build) return s.build();
  DTypeMap dtypes;
  const ShapeMap shapes = parse_shape_map(s.shapes, &dtypes);
  return build_graph(s.text, shapes, dtypes);
}

// Writes one sample at every opset; returns the number of cases written.
int write_sample(const Sample& s, const Graph& g, const fs::path& dir, const std::vector<int64_t>& opsets,
                 int64_t ir_version) {
  std::mt19937_64 rng(fnv1a(s.name));
  std::vector<ConstantValue> inputs;
  for (int32_t i : g.inputs()) {
    const Node& n = g.node(i);
    auto r = s.ranges.find(n.name);
    const Range range = r != s.ranges.end() ? r->second : n.output_dtypes[0] == DType::kInt64 ? ints(-3, 3) : Range{};
    inputs.push_back(random_value(n.output_dtypes[0], n.output_shapes[0], range, rng));
  }
  const std::vector<ConstantValue> outputs = evaluate_values<float>(g, inputs);
  int written = 0;
  for (int64_t opset : opsets) {
    const fs::path case_dir = dir / (s.name + "_op" + std::to_string(opset));
    const fs::path data_dir = case_dir / "test_data_set_0";
    fs::create_directories(data_dir);
    onnx_io::ExportOptions options;
    options.opset = opset;
    options.graph_name = s.name;
    options.ir_version = ir_version;
    onnx_io::save_model(onnx_io::export_graph(g, options), (case_dir / "model.onnx").string());
    for (size_t k = 0; k < inputs.size(); ++k)
      onnx_io::write_tensor_file(inputs[k], g.node(g.inputs()[k]).name,
                                 (data_dir / ("input_" + std::to_string(k) + ".pb")).string());
    for (size_t k = 0; k < outputs.size(); ++k)
      onnx_io::write_tensor_file(outputs[k], g.output_names()[k],
                                 (data_dir / ("output_" + std::to_string(k) + ".pb")).string());
    ++written;
  }
  return written;
}

int run(const std::string& dir, const std::string& only, const std::vector<int64_t>& opsets, int64_t ir_version) {
  std::set<std::string> covered;
  int cases = 0, count = 0;
  for (const Sample& s : samples()) {
    const Graph g = build(s);
    for (int32_t i : g.topological_order())
      if (g.node(i).is_op()) covered.insert(g.node(i).op->name);
    if (!only.empty() && s.name.find(only) == std::string::npos) continue;
    cases += write_sample(s, g, dir, opsets.empty() ? s.opsets : opsets, ir_version);
    ++count;
  }
  std::vector<std::string> missing;
  for (const OpDef* op : OpTable::instance().all())
    if (!covered.contains(op->name)) missing.push_back(op->name);
  std::printf("export_samples: %d samples, %d cases (sample x opset) in %s; %zu of %zu operators covered\n", count,
              cases, dir.c_str(), covered.size(), OpTable::instance().all().size());
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += " " + m;
    std::fprintf(stderr, "export_samples: no sample for:%s\n", list.c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tgr

int main(int argc, char** argv) {
  CLI::App app{"export_samples: sample graphs as ONNX models with reference outputs (for onnxruntime checks)"};
  std::string dir, only;
  std::vector<int64_t> opsets;
  int64_t ir_version = tgr::onnx_io::ExportOptions{}.ir_version;
  app.add_option("dir", dir, "output folder (created)")->required();
  app.add_option("--only", only, "only the samples whose name contains this");
  app.add_option("--opset", opsets, "write every sample at these opsets (default: each sample's own list)");
  app.add_option("--ir-version", ir_version, "the models' IR version")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return tgr::cli::guarded("export_samples", [&] { return tgr::run(dir, only, opsets, ir_version); });
}
