// Field semantics: agreement with float semantics on small integers,
// multi-linearity flags checked against the kernels, the field inverse in
// average pooling, and the identities pseudo-random activations keep.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "test_util.h"

namespace tgr {
namespace {

struct Sample {
  std::string text;
  ShapeMap shapes;
};

// One application of every operator in the table, with non-trivial parameters.
const std::vector<Sample>& samples() {
  static const std::vector<Sample> s = {
      {"add(a, b)", {{"a", {2, 3}}, {"b", {3}}}},
      {"mul(a, b)", {{"a", {2, 3}}, {"b", {2, 1}}}},
      {"scalar_mul(a, s)", {{"a", {2, 3}}, {"s", {}}}},
      {"relu(x)", {{"x", {2, 3}}}},
      {"sigmoid(x)", {{"x", {2, 3}}}},
      {"tanh(x)", {{"x", {2, 3}}}},
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
      {"reshape[shape=4x3](x)", {{"x", {2, 6}}}},
      {"eye[n=3]()", {}},
      {"conv_identity[channels=2, kernel=3x1]()", {}},
      {"pool_kernel[channels=2, kernel=3x3]()", {}},
      {"ones[shape=2x2]()", {}},
  };
  return s;
}

const Node& root(const Graph& g) { return g.node(g.outputs()[0].node); }

TEST(FieldSemantics, EveryOperatorHasASample) {
  std::set<std::string> covered;
  for (const Sample& s : samples()) covered.insert(root(build_graph(s.text, s.shapes)).op->name);
  for (const OpDef* op : OpTable::instance().all()) EXPECT_TRUE(covered.count(op->name)) << op->name << " has no sample";
}

// On small integers, an exact field semantics computes the float result mod p.
TEST(FieldSemantics, AgreesWithFloatOnSmallIntegers) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> small(-3, 3);
  int checked = 0;
  for (const Sample& s : samples()) {
    const Graph g = build_graph(s.text, s.shapes);
    const Node& n = root(g);
    bool linear = n.op->field == FieldSemantics::kExact;
    for (size_t i = 0; i < n.inputs.size(); ++i) linear = linear && n.op->is_multilinear_in(n.params, i);
    if (!linear) continue;
    std::vector<Tensor<double>> in64;
    std::vector<Tensor<Fp>> in_field;
    for (int32_t i : g.inputs()) {
      Tensor<double> t(g.node(i).output_shapes[0]);
      for (double& v : t.data) v = small(rng);
      in_field.push_back(convert<Fp>(t));
      in64.push_back(std::move(t));
    }
    const auto f64 = evaluate<double>(g, std::span<const Tensor<double>>(in64)).at(0);
    const auto field = evaluate<Fp>(g, std::span<const Tensor<Fp>>(in_field)).at(0);
    EXPECT_EQ(convert<Fp>(f64).data, field.data) << s.text;
    ++checked;
  }
  EXPECT_GE(checked, 14);
}

// The multilinear flag of each input is the truth: f is affine in input i,
// f(.., t a + (1 - t) b, ..) = t f(.., a, ..) + (1 - t) f(.., b, ..), in the
// field with random values, for flagged inputs and only for those.
TEST(FieldSemantics, MultilinearFlagsMatchTheKernels) {
  int linear_checked = 0, nonlinear_checked = 0;
  for (const Sample& s : samples()) {
    const Graph g = build_graph(s.text, s.shapes);
    const Node& n = root(g);
    for (size_t pos = 0; pos < g.inputs().size(); ++pos) {
      auto inputs = random_inputs<Fp>(g, 100 + pos);
      const Tensor<Fp> a = inputs[pos], b = random_tensor<Fp>(a.shape, 999 + pos);
      const Fp t = random_tensor<Fp>({}, 77).data[0];
      auto eval_with = [&](const Tensor<Fp>& v) {
        inputs[pos] = v;
        return evaluate<Fp>(g, std::span<const Tensor<Fp>>(inputs)).at(0);
      };
      Tensor<Fp> mix(a.shape);
      for (int64_t i = 0; i < a.size(); ++i) mix.data[i] = t * a.data[i] + (Fp(1) - t) * b.data[i];
      const auto fa = eval_with(a), fb = eval_with(b), fmix = eval_with(mix);
      bool affine = true;
      for (int64_t i = 0; i < fa.size(); ++i) affine = affine && fmix.data[i] == t * fa.data[i] + (Fp(1) - t) * fb.data[i];
      // Map the graph input back to the operator's argument position.
      size_t arg = 0;
      while (arg < n.inputs.size() && n.inputs[arg].node != g.inputs()[pos]) ++arg;
      ASSERT_LT(arg, n.inputs.size()) << s.text;
      const bool flagged = n.op->is_multilinear_in(n.params, arg);
      EXPECT_EQ(affine, flagged) << s.text << ", input " << arg;
      (flagged ? linear_checked : nonlinear_checked)++;
    }
  }
  EXPECT_GE(linear_checked, 18);
  EXPECT_GE(nonlinear_checked, 5);
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
