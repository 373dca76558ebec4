// Field semantics: agreement with float semantics on small integers,
// multi-linearity flags checked against the kernels, the field inverse in
// average pooling, and the identities pseudo-random activations keep.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "test_util.h"

namespace tgr {
namespace {

using test::T64;
using Ints64 = std::map<std::string, Tensor<int64_t>>;

struct Sample {
  std::string text;
  ShapeMap shapes;
  DTypeMap dtypes = {};  // the int64 / bool inputs
  Ints64 ints = {};      // their fixed values (random values only for float inputs)
};

// One application of every operator in the table, with non-trivial parameters.
const std::vector<Sample>& samples() {
  static const std::vector<Sample> s = {
      {"add(a, b)", {{"a", {2, 3}}, {"b", {3}}}},
      {"sub(a, b)", {{"a", {2, 3}}, {"b", {2, 1}}}},
      {"mul(a, b)", {{"a", {2, 3}}, {"b", {2, 1}}}},
      {"div(a, b)", {{"a", {2, 3}}, {"b", {3}}}},
      {"pow(a, b)", {{"a", {2, 3}}, {"b", {3}}}},
      {"scalar_mul(a, s)", {{"a", {2, 3}}, {"s", {}}}},
      {"neg(x)", {{"x", {2, 3}}}},
      {"relu(x)", {{"x", {2, 3}}}},
      {"sigmoid(x)", {{"x", {2, 3}}}},
      {"tanh(x)", {{"x", {2, 3}}}},
      {"abs(x)", {{"x", {2, 3}}}},
      {"sqrt(x)", {{"x", {2, 3}}}},
      {"exp(x)", {{"x", {2, 3}}}},
      {"log(x)", {{"x", {2, 3}}}},
      {"erf(x)", {{"x", {2, 3}}}},
      {"softplus(x)", {{"x", {2, 3}}}},
      {"cos(x)", {{"x", {2, 3}}}},
      {"sin(x)", {{"x", {2, 3}}}},
      {"floor(x)", {{"x", {2, 3}}}},
      {"ceil(x)", {{"x", {2, 3}}}},
      {"leaky_relu[alpha=0.1](x)", {{"x", {2, 3}}}},
      {"hard_sigmoid[alpha=0.25, beta=0.4](x)", {{"x", {2, 3}}}},
      {"hard_swish(x)", {{"x", {2, 3}}}},
      {"clip[min=-1, max=2](x)", {{"x", {2, 3}}}},
      {"matmul(a, b)", {{"a", {2, 3}}, {"b", {3, 4}}}},
      {"batch_matmul(a, b)", {{"a", {2, 2, 3}}, {"b", {2, 3, 2}}}},
      {"conv2d[stride=2x1, pad=1x0x2x1, dilation=1x2](x, k)", {{"x", {1, 4, 7, 7}}, {"k", {6, 2, 3, 2}}}},
      {"conv2d[act=relu](x, k)", {{"x", {1, 2, 4, 4}}, {"k", {3, 2, 3, 3}}}},
      {"enlarge[size=3x5](k)", {{"k", {2, 2, 1, 3}}}},
      {"avgpool[kernel=3x3, stride=2x2](x)", {{"x", {1, 2, 5, 5}}}},
      {"maxpool[kernel=3x3](x)", {{"x", {1, 2, 4, 4}}}},
      {"transpose[perm=1x2x0](x)", {{"x", {2, 3, 4}}}},
      {"concat[axis=1](a, b, c)", {{"a", {2, 1}}, {"b", {2, 3}}, {"c", {2, 2}}}},
      {"split[axis=0, sizes=1x3](x).1", {{"x", {4, 2}}}},
      {"slice[starts=1x3, ends=4x-1, steps=2x-2](x)", {{"x", {5, 4}}}},
      {"expand[shape=2x3x4](x)", {{"x", {3, 1}}}},
      {"pad[pads=1x0x0x2, value=2](x)", {{"x", {2, 3}}}},
      {"reshape[shape=4x3](x)", {{"x", {2, 6}}}},
      {"eye[n=3]()", {}},
      {"conv_identity[channels=2, kernel=3x1]()", {}},
      {"pool_kernel[channels=2, kernel=3x3]()", {}},
      {"ones[shape=2x2]()", {}},
      {"equal(a, b)", {{"a", {2, 3}}, {"b", {3}}}},
      {"less(a, b)", {{"a", {2, 1}}, {"b", {3}}}},
      {"greater(a, b)", {{"a", {2, 3}}, {"b", {2, 3}}}},
      {"less_equal(a, b)", {{"a", {2, 3}}, {"b", {}}}},
      {"greater_equal(a, b)", {{"a", {3}}, {"b", {2, 1}}}},
      {"is_nan(x)", {{"x", {2, 3}}}},
      {"logical_not(m)", {{"m", {2, 3}}}, {{"m", DType::kBool}}, {{"m", Tensor<int64_t>({2, 3}, {1, 0, 0, 1, 1, 0})}}},
      {"cast(i)", {{"i", {2, 3}}}, {{"i", DType::kInt64}}, {{"i", Tensor<int64_t>({2, 3}, {-3, -1, 0, 2, 5, 7})}}},
      {"where(c, x, y)",
       {{"c", {1, 3}}, {"x", {2, 3}}, {"y", {2, 1}}},
       {{"c", DType::kBool}},
       {{"c", Tensor<int64_t>({1, 3}, {1, 0, 1})}}},
      {"softmax[axis=1](x)", {{"x", {2, 3}}}},
      {"layer_norm[axis=1, epsilon=0.001](x, s, b)", {{"x", {2, 4}}, {"s", {4}}, {"b", {4}}}},
      {"batch_norm[epsilon=0.001](x, s, b, m, v)",
       {{"x", {2, 3, 2, 2}}, {"s", {3}}, {"b", {3}}, {"m", {3}}, {"v", {3}}}},
      {"reduce_sum[axes=0x2, keepdims=0](x)", {{"x", {2, 3, 4}}}},
      {"reduce_mean[axes=1](x)", {{"x", {2, 3, 4}}}},
      {"reduce_max[axes=0x2, keepdims=0](x)", {{"x", {2, 3, 4}}}},
      {"reduce_min[axes=1](x)", {{"x", {2, 3, 4}}}},
      {"gather[axis=1](d, i)",
       {{"d", {3, 4}}, {"i", {2, 2}}},
       {{"i", DType::kInt64}},
       {{"i", Tensor<int64_t>({2, 2}, {3, 0, -1, 1})}}},
      {"gather_elements[axis=1](d, i)",
       {{"d", {2, 4}}, {"i", {2, 3}}},
       {{"i", DType::kInt64}},
       {{"i", Tensor<int64_t>({2, 3}, {3, 0, 1, -1, 2, 2})}}},
  };
  return s;
}

Graph build(const Sample& s) { return build_graph(s.text, s.shapes, s.dtypes); }

const Node& root(const Graph& g) { return g.node(g.outputs()[0].node); }

// Operators with no field semantics (comparisons of floats) throw when
// evaluated in the field; the tests below that evaluate in the field skip them.
bool undefined_in_field(const Graph& g) { return root(g).op->field == FieldSemantics::kUndefined; }

bool is_float_input(const Graph& g, size_t pos) { return g.node(g.inputs()[pos]).output_dtypes[0] == DType::kFloat; }

// The graph's inputs in domain T: make_float(shape, position) for float
// inputs, the sample's fixed tensors for int64 and bool ones.
template <class T, class MakeFloat>
std::vector<Value<T>> sample_inputs(const Sample& s, const Graph& g, MakeFloat make_float) {
  std::vector<Value<T>> out;
  for (size_t pos = 0; pos < g.inputs().size(); ++pos) {
    const Node& in = g.node(g.inputs()[pos]);
    if (in.output_dtypes[0] == DType::kFloat) out.emplace_back(make_float(in.output_shapes[0], pos));
    else out.emplace_back(in.output_dtypes[0], s.ints.at(in.name));
  }
  return out;
}

template <class T>
Value<T> eval_first(const Graph& g, const std::vector<Value<T>>& inputs) {
  return evaluate_values<T>(g, std::span<const Value<T>>(inputs)).at(0);
}

TEST(FieldSemantics, EveryOperatorHasASample) {
  std::set<std::string> covered;
  for (const Sample& s : samples()) covered.insert(root(build(s)).op->name);
  for (const OpDef* op : OpTable::instance().all()) EXPECT_TRUE(covered.count(op->name)) << op->name << " has no sample";
}

TEST(FieldSemantics, SamplesGiveEveryIntegerInput) {
  for (const Sample& s : samples()) {
    const Graph g = build(s);
    for (size_t pos = 0; pos < g.inputs().size(); ++pos) {
      const Node& in = g.node(g.inputs()[pos]);
      if (is_float_input(g, pos)) continue;
      ASSERT_TRUE(s.ints.count(in.name)) << s.text << ": no value for " << in.name;
      EXPECT_EQ(s.ints.at(in.name).shape, in.output_shapes[0]) << s.text << ": " << in.name;
      if (in.output_dtypes[0] == DType::kBool) {
        for (int64_t v : s.ints.at(in.name).data) EXPECT_TRUE(v == 0 || v == 1) << s.text << ": " << in.name;
      }
    }
  }
}

// On small integers, an exact field semantics computes the float result mod p
// (integer and bool inputs are fixed; their outputs must agree exactly).
TEST(FieldSemantics, AgreesWithFloatOnSmallIntegers) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> small(-3, 3);
  int checked = 0;
  for (const Sample& s : samples()) {
    const Graph g = build(s);
    const Node& n = root(g);
    bool linear = n.op->field == FieldSemantics::kExact;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (g.node(n.inputs[i].node).output_dtypes[n.inputs[i].output] == DType::kFloat)
        linear = linear && n.op->is_multilinear_in(n.params, i);
    if (!linear) continue;
    const auto in64 = sample_inputs<double>(s, g, [&](const Shape& shape, size_t) {
      Tensor<double> t(shape);
      for (double& v : t.data) v = small(rng);
      return t;
    });
    std::vector<Value<Fp>> in_field;
    for (const Value<double>& v : in64)
      in_field.push_back(v.is_float() ? Value<Fp>(convert<Fp>(v.real)) : Value<Fp>(v.dtype, v.ints));
    const Value<double> f64 = eval_first<double>(g, in64);
    const Value<Fp> field = eval_first<Fp>(g, in_field);
    ASSERT_EQ(f64.dtype, field.dtype) << s.text;
    if (f64.is_float()) EXPECT_EQ(convert<Fp>(f64.real).data, field.real.data) << s.text;
    else EXPECT_EQ(f64.ints.data, field.ints.data) << s.text;
    ++checked;
  }
  EXPECT_GE(checked, 25);
}

// The multilinear flag of each input is the truth: f is affine in input i,
// f(.., t a + (1 - t) b, ..) = t f(.., a, ..) + (1 - t) f(.., b, ..), in the
// field with random values, for flagged inputs and only for those. Integer
// inputs and integer outputs are not field values: their flags must be false.
TEST(FieldSemantics, MultilinearFlagsMatchTheKernels) {
  int linear_checked = 0, nonlinear_checked = 0, integer_checked = 0;
  for (const Sample& s : samples()) {
    const Graph g = build(s);
    const Node& n = root(g);
    const bool float_output = n.output_dtypes[0] == DType::kFloat;
    for (size_t pos = 0; pos < g.inputs().size(); ++pos) {
      // Map the graph input back to the operator's argument position.
      size_t arg = 0;
      while (arg < n.inputs.size() && n.inputs[arg].node != g.inputs()[pos]) ++arg;
      ASSERT_LT(arg, n.inputs.size()) << s.text;
      const bool flagged = n.op->is_multilinear_in(n.params, arg);
      if (!is_float_input(g, pos) || !float_output || undefined_in_field(g)) {
        EXPECT_FALSE(flagged) << s.text << ", input " << arg << " is not linear between field values";
        ++integer_checked;
        continue;
      }
      const auto random = random_inputs<Fp>(g, 100 + pos);
      auto inputs = sample_inputs<Fp>(s, g, [&](const Shape&, size_t k) { return random[k]; });
      const Tensor<Fp> a = inputs[pos].real, b = random_tensor<Fp>(a.shape, 999 + pos);
      const Fp t = random_tensor<Fp>({}, 77).data[0];
      auto eval_with = [&](const Tensor<Fp>& v) {
        inputs[pos] = Value<Fp>(v);
        return eval_first<Fp>(g, inputs).real;
      };
      Tensor<Fp> mix(a.shape);
      for (int64_t i = 0; i < a.size(); ++i) mix.data[i] = t * a.data[i] + (Fp(1) - t) * b.data[i];
      const auto fa = eval_with(a), fb = eval_with(b), fmix = eval_with(mix);
      bool affine = true;
      for (int64_t i = 0; i < fa.size(); ++i) affine = affine && fmix.data[i] == t * fa.data[i] + (Fp(1) - t) * fb.data[i];
      EXPECT_EQ(affine, flagged) << s.text << ", input " << arg;
      (flagged ? linear_checked : nonlinear_checked)++;
    }
  }
  EXPECT_GE(linear_checked, 35);
  EXPECT_GE(nonlinear_checked, 20);
  EXPECT_GE(integer_checked, 15);
}

TEST(FieldSemantics, ComparisonsOfFloatsAreUndefined) {
  int undefined = 0;
  for (const Sample& s : samples()) {
    const Graph g = build(s);
    if (!undefined_in_field(g)) continue;
    const auto random = random_inputs<Fp>(g, 3);
    const auto inputs = sample_inputs<Fp>(s, g, [&](const Shape&, size_t k) { return random[k]; });
    test::expect_error<UndefinedSemantics>([&] { eval_first<Fp>(g, inputs); }, "has no meaning (the field has no order)");
    // ... while the real semantics is defined.
    const auto real = sample_inputs<double>(s, g, [&](const Shape& shape, size_t k) { return random_tensor<double>(shape, k); });
    const bool ordering = root(g).op->name.starts_with("reduce_");
    EXPECT_EQ(eval_first<double>(g, real).dtype, ordering ? DType::kFloat : DType::kBool) << s.text;
    ++undefined;
  }
  EXPECT_EQ(undefined, 7);  // equal, less, greater, less_equal, greater_equal; reduce_max, reduce_min
  // A float-to-integer cast has no field semantics either.
  test::expect_error<UndefinedSemantics>(
      [] { test::eval_values<Fp>("cast[to=int64](x)", {{"x", test::Floats<Fp>({2}, {1, 2})}}); }, "cast:");
  test::expect_error<UndefinedSemantics>(
      [] { test::eval_values<Fp>("cast[to=bool](x)", {{"x", test::Floats<Fp>({2}, {1, 2})}}); }, "cast:");
  // Inside a larger graph, the comparison still raises.
  test::expect_error<UndefinedSemantics>(
      [] {
        test::eval_values<Fp>("where(less(a, b), a, b)", {{"a", test::Floats<Fp>({2}, {1, 2})}, {"b", test::Floats<Fp>({2}, {2, 1})}});
      },
      "less:");
}

TEST(FieldSemantics, IntegerComparisonsAreDefinedAndExact) {
  const std::map<std::string, Value<Fp>> ab{{"a", test::I64<Fp>({3}, {-1, 5, 7})}, {"b", test::I64<Fp>({}, {5})}};
  test::expect_ints(test::eval_values<Fp>("less(a, b)", ab), DType::kBool, {3}, {1, 0, 0});
  test::expect_ints(test::eval_values<Fp>("greater_equal(a, b)", ab), DType::kBool, {3}, {0, 1, 1});
  test::expect_ints(test::eval_values<Fp>("equal(a, b)", ab), DType::kBool, {3}, {0, 1, 0});
}

TEST(FieldSemantics, IsNanIsAllFalse) {
  const Value<Fp> x(random_tensor<Fp>({3, 4}, 12));
  test::expect_ints(test::eval_values<Fp>("is_nan(x)", {{"x", x}}), DType::kBool, {3, 4}, std::vector<int64_t>(12, 0));
  // Not even 0 / 0 (the inverse of 0 is 0).
  test::expect_ints(test::eval_values<Fp>("is_nan(div(x, z))", {{"x", x}, {"z", Value<Fp>(Tensor<Fp>({3, 4}))}}),
                    DType::kBool, {3, 4}, std::vector<int64_t>(12, 0));
}

TEST(FieldSemantics, WhereGatherAndCastFromIntegersAreExact) {
  const Tensor<Fp> x = random_tensor<Fp>({2, 3}, 21), y = random_tensor<Fp>({2, 3}, 22);
  const auto picked = test::eval_values<Fp>(
      "where(c, x, y)", {{"c", test::Bool<Fp>({1, 3}, {1, 0, 1})}, {"x", Value<Fp>(x)}, {"y", Value<Fp>(y)}});
  ASSERT_EQ(picked.real.shape, (Shape{2, 3}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(picked.real.data[i * 3 + j], (j == 1 ? y : x).data[i * 3 + j]);

  const Tensor<Fp> table = random_tensor<Fp>({4, 2}, 23);
  const auto rows = test::eval_values<Fp>("gather(d, i)", {{"d", Value<Fp>(table)}, {"i", test::I64<Fp>({3}, {3, -4, 1})}});
  EXPECT_EQ(rows.real.data, (std::vector<Fp>{table.data[6], table.data[7], table.data[0], table.data[1], table.data[2], table.data[3]}));
  const auto elems = test::eval_values<Fp>("gather_elements[axis=1](d, i)",
                                           {{"d", Value<Fp>(table)}, {"i", test::I64<Fp>({4, 1}, {1, 0, 0, 1})}});
  EXPECT_EQ(elems.real.data, (std::vector<Fp>{table.data[1], table.data[2], table.data[4], table.data[7]}));

  const auto cast = test::eval_values<Fp>("cast(i)", {{"i", test::I64<Fp>({4}, {-3, 0, 7, int64_t{1} << 62})}});
  EXPECT_EQ(cast.real.data, (std::vector<Fp>{Fp(-3), Fp(0), Fp(7), Fp(int64_t{1} << 62)}));
  EXPECT_EQ(cast.real.data[0] + Fp(3), Fp(0));
  const auto from_bool = test::eval_values<Fp>("cast(b)", {{"b", test::Bool<Fp>({2}, {1, 0})}});
  EXPECT_EQ(from_bool.real.data, (std::vector<Fp>{Fp(1), Fp(0)}));
  // Integer-valued operators keep their integers in the field.
  test::expect_ints(test::eval_values<Fp>("div(a, b)", {{"a", test::I64<Fp>({2}, {-7, 7})}, {"b", test::I64<Fp>({1}, {2})}}),
                    DType::kInt64, {2}, {-3, 3});
  test::expect_ints(test::eval_values<Fp>("logical_not(m)", {{"m", test::Bool<Fp>({2}, {1, 0})}}), DType::kBool, {2}, {0, 1});
}

TEST(FieldSemantics, DivMultipliesByTheInverse) {
  const Tensor<Fp> a = random_tensor<Fp>({2, 3}, 31), b = random_tensor<Fp>({2, 3}, 32);
  const std::map<std::string, Tensor<Fp>> ab{{"a", a}, {"b", b}};
  const auto q = test::eval<Fp>("div(a, b)", ab);
  for (int64_t i = 0; i < a.size(); ++i) {
    ASSERT_NE(b.data[i], Fp(0));
    EXPECT_EQ(q.data[i] * b.data[i], a.data[i]);
    EXPECT_EQ(q.data[i], a.data[i] * b.data[i].inverse());
  }
  EXPECT_EQ(test::eval<Fp>("mul(div(a, b), b)", ab).data, a.data);
  // 6 / 3 == 2 exactly; 1 / 2 is the inverse of 2; the inverse of 0 is 0.
  const auto small = test::eval<Fp>("div(a, b)", {{"a", convert<Fp>(T64({3}, {6, 1, 5}))}, {"b", convert<Fp>(T64({3}, {3, 2, 0}))}});
  EXPECT_EQ(small.data, (std::vector<Fp>{Fp(2), Fp(2).inverse(), Fp(0)}));
  // Broadcasting a divisor.
  const auto scaled = test::eval<Fp>("div(a, s)", {{"a", a}, {"s", convert<Fp>(T64({}, {4}))}});
  for (int64_t i = 0; i < a.size(); ++i) EXPECT_EQ(scaled.data[i] * Fp(4), a.data[i]);
}

TEST(FieldSemantics, ReduceMeanDividesByTheFieldInverse) {
  const std::map<std::string, Tensor<Fp>> x{{"x", random_tensor<Fp>({2, 3, 4}, 41)}};
  const auto sum = test::eval<Fp>("reduce_sum[axes=0x2](x)", x);
  const auto mean = test::eval<Fp>("reduce_mean[axes=0x2](x)", x);
  ASSERT_EQ(mean.shape, (Shape{1, 3, 1}));
  for (int64_t i = 0; i < sum.size(); ++i) EXPECT_EQ(mean.data[i] * Fp(8), sum.data[i]);
}

TEST(FieldSemantics, AveragePoolDividesByTheFieldInverse) {
  const Graph pool = build_graph("pool_kernel[channels=1, kernel=3x3]()", {});
  const auto k = evaluate<Fp>(pool, std::span<const Tensor<Fp>>{}).at(0);
  EXPECT_EQ(k.data[0], Fp(9).inverse());
  EXPECT_EQ(k.data[0] * Fp(9), Fp(1));

  // On 1..9 with same padding, excluding the padding: the corner averages
  // 1 + 2 + 4 + 5 over 4 elements, the centre 45 over 9.
  const auto x = convert<Fp>(test::iota({1, 1, 3, 3}));
  const auto avg = test::eval<Fp>("avgpool[kernel=3x3](x)", {{"x", x}});
  EXPECT_EQ(avg.data[0] * Fp(4), Fp(12));
  EXPECT_EQ(avg.data[0], Fp(12) * Fp(4).inverse());
  EXPECT_EQ(avg.data[4] * Fp(9), Fp(45));
  EXPECT_EQ(avg.data[1] * Fp(6), Fp(21));
  // avgpool with the padding counted is the convolution with pool_kernel.
  const auto r = random_tensor<Fp>({1, 3, 6, 6}, 8);
  EXPECT_EQ(test::eval<Fp>("avgpool[kernel=3x3, include_pad=1](x)", {{"x", r}}).data,
            test::eval<Fp>("conv2d(x, pool_kernel[channels=3, kernel=3x3]())", {{"x", r}}).data);
}

TEST(FieldSemantics, ActivationsKeepTheIdentitiesOfElementwiseFunctions) {
  const auto a = random_tensor<Fp>({2, 3}, 1), b = random_tensor<Fp>({2, 2}, 2);
  const std::map<std::string, Tensor<Fp>> ab{{"a", a}, {"b", b}};
  EXPECT_EQ(test::eval<Fp>("relu(concat[axis=1](a, b))", ab).data,
            test::eval<Fp>("concat[axis=1](relu(a), relu(b))", ab).data);
  EXPECT_EQ(test::eval<Fp>("transpose(tanh(a))", ab).data, test::eval<Fp>("tanh(transpose(a))", ab).data);
  EXPECT_NE(test::eval<Fp>("relu(a)", ab).data, test::eval<Fp>("sigmoid(a)", ab).data);
  EXPECT_NE(test::eval<Fp>("relu(relu(a))", ab).data, test::eval<Fp>("relu(a)", ab).data);

  const std::map<std::string, Tensor<Fp>> xk{{"x", random_tensor<Fp>({1, 2, 5, 5}, 3)},
                                             {"k", random_tensor<Fp>({4, 2, 3, 3}, 4)}};
  EXPECT_EQ(test::eval<Fp>("relu(conv2d(x, k))", xk).data, test::eval<Fp>("conv2d[act=relu](x, k)", xk).data);
}

TEST(FieldSemantics, IndependentRandomInputs) {
  // Two inputs of the same shape must not get the same values (a
  // deterministic input pattern made a peer accept false rules).
  const Graph g = build_graph("add(x0, x1)", {{"x0", {4, 4}}, {"x1", {4, 4}}});
  const auto in = random_inputs<Fp>(g, 5);
  EXPECT_NE(in[0].data, in[1].data);
  EXPECT_EQ(random_inputs<Fp>(g, 5)[1].data, in[1].data);  // deterministic for a seed
  EXPECT_NE(random_inputs<Fp>(g, 6)[1].data, in[1].data);
}

}  // namespace
}  // namespace tgr
