// The operator axioms of specs/: syntax, errors, instantiation, validation.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include <unistd.h>

#include "verifier/axioms.h"

namespace tgr::axioms {
namespace {

const std::vector<Axiom>& specs() {
  static const std::vector<Axiom> all = load_axioms(TGR_SPECS_DIR);
  return all;
}

const Axiom& spec(const std::string& name) {
  for (const Axiom& a : specs())
    if (a.name == name) return a;
  throw std::runtime_error("no axiom " + name);
}

Axiom parse_one(const std::string& text) {
  std::vector<Axiom> v = parse_axioms(text, "test.axioms");
  if (v.size() != 1) throw std::runtime_error("expected one axiom");
  return v[0];
}

// The error a text raises: "file:line:col: error: message ...".
AxiomError parse_error(const std::string& text) {
  try {
    parse_axioms(text, "bad.axioms");
  } catch (const AxiomError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return AxiomError("", 0, 0, "");
}


// ---- the real specs -----------------------------------------------------------

TEST(Specs, CoverTheGeneratorSet) {
  const auto& all = specs();
  EXPECT_GE(all.size(), 45u);
  std::set<std::string> names, files, ops;
  std::function<void(const Expr&)> collect = [&](const Expr& e) {
    if (e.kind == Expr::Kind::kCall) ops.insert(e.name);
    for (const Expr& a : e.args) collect(a);
  };
  for (const Axiom& a : all) {
    EXPECT_TRUE(names.insert(a.name).second) << a.name;
    EXPECT_FALSE(a.comment.empty()) << a.name;
    files.insert(std::filesystem::path(a.file).filename().string());
    for (const Expr& e : a.lhs) collect(e);
    for (const Expr& e : a.rhs) collect(e);
  }
  for (const char* f : {"elementwise.axioms", "linear_algebra.axioms", "transpose.axioms", "layout.axioms", "conv.axioms",
                        "pooling.axioms"})
    EXPECT_TRUE(files.count(f)) << f;
  for (const char* op : {"matmul", "batch_matmul", "conv2d", "add", "mul", "scalar_mul", "relu", "transpose", "concat",
                         "split", "avgpool", "maxpool", "enlarge", "eye", "conv_identity", "pool_kernel", "ones"})
    EXPECT_TRUE(ops.count(op)) << "no axiom mentions " << op;
}

TEST(Specs, RoundTripThroughText) {
  for (const Axiom& a : specs()) {
    const std::string text = to_text(a);
    const Axiom b = parse_one(text);
    EXPECT_EQ(to_text(b), text);
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.comment, a.comment);
    EXPECT_EQ(equation_text(b), equation_text(a));
    ASSERT_EQ(b.variables.size(), a.variables.size());
    for (size_t i = 0; i < a.variables.size(); ++i) {
      EXPECT_EQ(b.variables[i].name, a.variables[i].name);
      EXPECT_EQ(b.variables[i].kind, a.variables[i].kind);
    }
    ASSERT_EQ(b.params.size(), a.params.size());
    for (size_t i = 0; i < a.params.size(); ++i) {
      EXPECT_EQ(b.params[i].name, a.params[i].name);
      EXPECT_EQ(b.params[i].domain, a.params[i].domain) << a.name << " " << a.params[i].name;
      EXPECT_EQ(b.params[i].definition, a.params[i].definition);
    }
    ASSERT_EQ(b.conditions.size(), a.conditions.size());
    for (size_t i = 0; i < a.conditions.size(); ++i) EXPECT_EQ(to_text(b.conditions[i]), to_text(a.conditions[i]));
  }
}

// The validation run: every axiom of specs/ holds on every instance it admits.
TEST(Specs, EveryAxiomHoldsOnItsInstances) {
  const auto reports = check_axioms(specs(), CheckOptions{});
  uint64_t instances = 0;
  for (const AxiomReport& r : reports) {
    EXPECT_TRUE(r.holds()) << format_report(r);
    EXPECT_GT(r.checked, 0u) << r.axiom->name;
    instances += r.checked;
  }
  EXPECT_GT(instances, 10000u);
}

// ---- syntax -------------------------------------------------------------------

TEST(Syntax, ParsesTheParts) {
  const Axiom a = parse_one(
      "# a file comment\n"
      "axiom split_concat[A, S1, S2, K in {1, 3}, P in {same, valid}]   # cutting at the seam\n"
      "  vars a: any, b: any\n"
      "  vars s: scalar   # a second vars line\n"
      "  where S1 = dim(a, A), S2 = dim(b, A)\n"
      "  where rank(a) >= 1 + A * 1, (K - 1) % 2 = 0, P != same, positive(s)\n"
      "  (split[axis=A, sizes=S1xS2](concat[axis=A](a, b)).0,\n"
      "   split[axis=A, sizes=S1 x S2](concat[axis=A](a, scalar_mul(b, s))).1) = (a, b)\n");
  EXPECT_EQ(a.name, "split_concat");
  EXPECT_EQ(a.comment, "cutting at the seam");
  EXPECT_EQ(a.line, 2);
  ASSERT_EQ(a.variables.size(), 3u);
  EXPECT_EQ(a.variables[2].kind, Kind::kScalar);
  ASSERT_EQ(a.params.size(), 5u);
  EXPECT_TRUE(a.params[0].default_domain);  // an axis: 0..3
  EXPECT_EQ(a.params[0].domain.size(), 4u);
  EXPECT_EQ(a.params[1].definition, 0);
  EXPECT_EQ(a.params[2].definition, 1);
  EXPECT_EQ(a.params[3].domain, (std::vector<ParamValue>{int64_t{1}, int64_t{3}}));
  EXPECT_EQ(a.params[4].domain, (std::vector<ParamValue>{std::string("same"), std::string("valid")}));
  ASSERT_EQ(a.conditions.size(), 6u);
  EXPECT_EQ(to_text(a.conditions[2]), "rank(a) >= 1 + A * 1");
  EXPECT_EQ(to_text(a.conditions[3]), "(K - 1) % 2 = 0");
  EXPECT_EQ(a.conditions[5].kind, Condition::Kind::kPositive);
  ASSERT_EQ(a.lhs.size(), 2u);
  EXPECT_TRUE(is_symbolic(a.lhs[0].params[1].second));
  EXPECT_EQ(std::get<std::string>(a.lhs[1].params[1].second), "S1xS2");  // spaces dropped
  EXPECT_EQ(symbols_of(a.lhs[0].params[1].second), (std::vector<std::string>{"S1", "S2"}));
  EXPECT_EQ(a.lhs[0].output, 0);
  EXPECT_EQ(header_text(a), "split_concat[A, S1, S2, K in {1, 3}, P in {same, valid}]");
  // Round trip of a hand-written entry.
  EXPECT_EQ(to_text(parse_one(to_text(a))), to_text(a));
}

TEST(Syntax, ChainedComparisonsAndTermPrinting) {
  const Axiom a = parse_one(
      "axiom t[A]  # chains\n  vars a: any, b: any, c: any\n"
      "  where shape(a) = shape(b) = shape(c), A < rank(a) - (1 - 1), -A <= 0\n"
      "  add(add(a, b), c) = add(a, concat[axis=A](b, c))\n");
  ASSERT_EQ(a.conditions.size(), 4u);
  EXPECT_EQ(to_text(a.conditions[0]), "shape(a) = shape(b)");
  EXPECT_EQ(to_text(a.conditions[1]), "shape(b) = shape(c)");
  EXPECT_EQ(to_text(a.conditions[2]), "A < rank(a) - (1 - 1)");
  EXPECT_EQ(to_text(a.conditions[3]), "-A <= 0");
}

// pick(I, T0, T1, ...) is T_I: how a composed permutation is written; an
// index out of range excludes the assignment.
TEST(Syntax, PickChoosesByIndexAndPrintsBack) {
  const Axiom a = parse_one(
      "axiom t[P0 in 0..1, P1 in 0..1, R0]  # pick\n  vars a: any\n"
      "  where R0 = pick(P1, P0, 1 - P0), pick(2, 0, 0) = 0\n"
      "  transpose[perm=P0xP1](a) = transpose[perm=R0x1](a)\n");
  ASSERT_EQ(a.conditions.size(), 2u);
  EXPECT_EQ(to_text(a.conditions[0]), "R0 = pick(P1, P0, 1 - P0)");
  EXPECT_EQ(parse_error("axiom t[A]  # pick\n  vars a: any\n  where A = pick(0)\n  relu(a) = relu(a)\n").message(),
            "expected ',' between the index and the choices of pick(i, t0, t1, ...), found ')'");
}

TEST(Syntax, ErrorsGiveFileLineAndColumn) {
  struct Case {
    std::string text;
    int line, column;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"axiom a  # m\n  vars x: matrix\n  matmul(x, , x) = x\n", 3, 13, "expected a variable or an operator"},
      {"axiom a  # m\n  vars x: matrix\n  matmol(x, x) = x\n", 3, 3, "unknown operator 'matmol'"},
      {"axiom a  # m\n  vars x: matrx\n  x = x\n", 2, 11, "unknown kind 'matrx'"},
      {"axiom a  # m\n  vars x: matrix\n  matmul(x, y) = x\n", 3, 13, "variable 'y' is not declared"},
      {"axiom a\n  vars x: matrix\n  x = x\n", 1, 8, "one-line comment"},
      {"axiom a  #   \n  vars x: matrix\n  x = x\n", 1, 10, "comment after the header is empty"},
      {"axiom a  # m\n  vars x: any\n  concat[axis=B](x, x) = x\n", 3, 15, "'B' is not a parameter of this axiom"},
      {"axiom a[S]  # m\n  vars x: any\n  split[axis=0, sizes=S](x).0 = x\n", 1, 9, "parameter 'S' has no values"},
      {"axiom a  # m\n  vars x: any, y: any\n  relu(x) = x\n", 2, 16, "variable 'y' is declared but not used"},
      {"axiom a  # m\n  vars x: any\n  (x, x) = x\n", 3, 3, "different numbers of outputs"},
      {"axiom a  # m\n  vars x: any\n  x => x\n", 3, 5, "write '=' between the two sides"},
      {"axiom a  # m\n  vars x: any\n  relu(x) = x\n\naxiom a  # again\n  vars x: any\n  x = x\n", 5, 7,
       "axiom 'a' is already defined at line 1"},
      {"axiom a  # m\n  vars x: any\n  where dim(x) = 1\n  x = x\n", 3, 14, "expected ','"},
      {"axiom a  # m\n  vars x: any\n  where rank(z) = 1\n  x = x\n", 3, 14, "'z' is not a declared variable"},
      {"axiom a  # m\n  vars x: any\n  conv2d[strde=2x2](x, x) = x\n", 3, 10, "conv2d has no parameter 'strde'"},
      {"axiom a  # m\n  vars x: any\n  conv2d[pad=sideways](x, x) = x\n", 3, 14, "pad"},
      {"axiom a  # m\n  vars relu: any\n  x = x\n", 2, 8, "'relu' is an operator"},
      {"axiom a  # m\n  vars x: any\n  relu(x) = x\n  junk\n", 4, 3, "expected the next 'axiom'"},
      {"  vars x: any\n", 1, 3, "expected 'axiom'"},
      {"axiom a[A]  # m\n  vars x: any\n  relu(split[axis=A, sizes=1x1](x)) = x\n", 3, 8, "split has 2 outputs: select one"},
      {"axiom a[S1 in 1..2]  # m\n  vars x: any\n  split[axis=0, sizes=S1xS1](x).2 = x\n", 3, 3, "split has no output 2"},
      {"axiom a  # m\n  vars x: any\n  split[axis=0](x).0 = x\n", 3, 3, "split needs the parameter 'sizes'"},
  };
  for (const Case& c : cases) {
    const AxiomError e = parse_error(c.text);
    EXPECT_EQ(e.file(), "bad.axioms");
    EXPECT_EQ(e.line(), c.line) << e.what();
    EXPECT_EQ(e.column(), c.column) << e.what();
    EXPECT_NE(e.message().find(c.message), std::string::npos) << e.what();
    const std::string prefix = "bad.axioms:" + std::to_string(c.line) + ":" + std::to_string(c.column) + ": error: ";
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
}

TEST(Syntax, AFileWithASyntaxErrorFailsWithFileLineColumn) {
  const auto dir = std::filesystem::temp_directory_path() / ("tgr_axioms_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "a.axioms") << "axiom fine  # ok\n  vars x: any\n  relu(relu(x)) = relu(x)\n";
    std::ofstream(dir / "b.axioms") << "# second file\n\naxiom broken  # oops\n  vars x: matrix\n  matmul(x x) = x\n";
    std::ofstream(dir / "ignored.txt") << "not an axiom file";
  }
  try {
    load_axioms(dir);
    ADD_FAILURE() << "no error";
  } catch (const AxiomError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind((dir / "b.axioms").string() + ":5:12: error: expected ')' to close the arguments of matmul", 0), 0u)
        << what;
    EXPECT_NE(what.find("\n    matmul(x x) = x\n             ^"), std::string::npos) << what;
  }
  // Names are unique across files.
  std::ofstream(dir / "b.axioms") << "axiom fine  # again\n  vars x: any\n  x = x\n";
  try {
    load_axioms(dir);
    ADD_FAILURE() << "no error";
  } catch (const AxiomError& e) {
    EXPECT_NE(std::string(e.what()).find("axiom 'fine' is already defined at " + (dir / "a.axioms").string() + ":1"),
              std::string::npos)
        << e.what();
  }
  std::ofstream(dir / "b.axioms") << "axiom other  # fine\n  vars x: any\n  x = x\n";
  EXPECT_EQ(load_axioms(dir).size(), 2u);
  EXPECT_EQ(load_axioms(dir / "a.axioms").size(), 1u);
  std::filesystem::remove_all(dir);
  EXPECT_THROW(load_axioms(dir), std::runtime_error);
}

// ---- instances ----------------------------------------------------------------

TEST(Instances, KindsHaveTheDocumentedSizes) {
  EXPECT_EQ(kind_shapes(Kind::kScalar).size(), 1u);
  EXPECT_EQ(kind_shapes(Kind::kMatrix).size(), 9u);
  EXPECT_EQ(kind_shapes(Kind::kBatch).size(), 18u);
  EXPECT_EQ(kind_shapes(Kind::kImage).size(), 96u);
  EXPECT_EQ(kind_shapes(Kind::kKernel).size(), 81u);
  EXPECT_EQ(kind_shapes(Kind::kAny).size(), 120u);
  EXPECT_EQ(kind_shapes(Kind::kAny).front(), Shape{1});
  EXPECT_EQ(kind_shapes(Kind::kAny).back(), (Shape{3, 3, 3, 3}));
}

TEST(Instances, EveryCombinationThatTypeChecks) {
  // (a b) c: a MxK, b KxL, c LxN over 1..3: 3^4 instances.
  const Instantiation m = instantiate(spec("matmul_associative"), 100000);
  EXPECT_EQ(m.admitted, 81u);
  EXPECT_FALSE(m.sampled);
  for (const Instance& i : m.instances) {
    EXPECT_EQ(i.shapes.at("a")[1], i.shapes.at("b")[0]);
    EXPECT_EQ(i.shapes.at("b")[1], i.shapes.at("c")[0]);
  }
  const Instantiation eye = instantiate(spec("matmul_eye_right"), 100000);
  EXPECT_EQ(eye.admitted, 9u);
  for (const Instance& i : eye.instances) EXPECT_EQ(i.params.at("N"), ParamValue(i.shapes.at("a")[1]));
}

TEST(Instances, ConcatAssociativityNeverMismatchesOtherAxes) {
  const Instantiation in = instantiate(spec("concat_associative"), 100000);
  EXPECT_GT(in.admitted, 1000u);
  std::set<int64_t> axes;
  for (const Instance& i : in.instances) {
    const int64_t axis = std::get<int64_t>(i.params.at("A"));
    axes.insert(axis);
    const Shape &a = i.shapes.at("a"), &b = i.shapes.at("b"), &c = i.shapes.at("c");
    ASSERT_LT(axis, static_cast<int64_t>(a.size()));
    ASSERT_EQ(a.size(), b.size());
    ASSERT_EQ(a.size(), c.size());
    for (size_t d = 0; d < a.size(); ++d)
      if (static_cast<int64_t>(d) != axis) {
        EXPECT_EQ(a[d], b[d]) << to_text(i);
        EXPECT_EQ(a[d], c[d]) << to_text(i);
      }
  }
  EXPECT_EQ(axes, (std::set<int64_t>{0, 1, 2, 3}));
}

TEST(Instances, ConditionsAreRespected) {
  for (const Instance& i : instantiate(spec("split_concat"), 100000).instances) {
    const int64_t axis = std::get<int64_t>(i.params.at("A"));
    EXPECT_EQ(i.params.at("S1"), ParamValue(i.shapes.at("a").at(axis)));
    EXPECT_EQ(i.params.at("S2"), ParamValue(i.shapes.at("b").at(axis)));
  }
  for (const Instance& i : instantiate(spec("conv2d_concat_channels"), 100000).instances) {
    EXPECT_EQ(i.shapes.at("k1")[1], i.shapes.at("x1")[1]) << to_text(i);
    EXPECT_EQ(i.shapes.at("k2")[1], i.shapes.at("x2")[1]) << to_text(i);
  }
  for (const Instance& i : instantiate(spec("concat_interchange"), 100000).instances)
    EXPECT_NE(i.params.at("A"), i.params.at("B")) << to_text(i);
  for (const Instance& i : instantiate(spec("conv2d_pool_kernel"), 100000).instances)
    EXPECT_EQ(i.params.at("C"), ParamValue(i.shapes.at("x")[1]));
  // The enlarged size is at least the kernel's, in odd steps.
  for (const Instance& i : instantiate(spec("conv2d_enlarge"), 100000).instances) {
    EXPECT_GE(std::get<int64_t>(i.params.at("KH")), i.shapes.at("k")[2]);
    EXPECT_GE(std::get<int64_t>(i.params.at("KW")), i.shapes.at("k")[3]);
  }
}

TEST(Instances, SamplingIsBoundedAndDeterministic) {
  const Axiom& ax = spec("concat_interchange");
  const Instantiation all = instantiate(ax, 1000000);
  const Instantiation a = instantiate(ax, 50, 7), b = instantiate(ax, 50, 7), c = instantiate(ax, 50, 8);
  EXPECT_EQ(a.admitted, all.admitted);
  EXPECT_TRUE(a.sampled);
  ASSERT_EQ(a.instances.size(), 50u);
  std::vector<uint64_t> oa, ob, oc;
  for (size_t i = 0; i < 50; ++i) {
    oa.push_back(a.instances[i].ordinal);
    ob.push_back(b.instances[i].ordinal);
    oc.push_back(c.instances[i].ordinal);
    EXPECT_EQ(to_text(a.instances[i]), to_text(all.instances[a.instances[i].ordinal]));
  }
  EXPECT_EQ(oa, ob);
  EXPECT_NE(oa, oc);
  EXPECT_TRUE(std::is_sorted(oa.begin(), oa.end()));
}

TEST(Instances, SubstituteAndBuild) {
  const Axiom& ax = spec("split_concat");
  Instance inst;
  inst.shapes = {{"a", {2, 3}}, {"b", {2, 1}}};
  inst.params = {{"A", int64_t{1}}, {"S1", int64_t{3}}, {"S2", int64_t{1}}};
  const Expr e = substitute(ax.lhs[0], inst.params);
  EXPECT_EQ(to_text(e), "split[axis=1, sizes=3x1](concat[axis=1](a, b)).0");
  const Rule r = build_instance(ax, inst);
  EXPECT_EQ(r.source.shape(r.source.outputs()[0]), (Shape{2, 3}));
  EXPECT_EQ(r.target.shape(r.target.outputs()[1]), (Shape{2, 1}));
  EXPECT_EQ(to_text(inst, &ax), "a=2x3, b=2x1; A=1, S1=3, S2=1");
  // An illegal value is a ParamError.
  EXPECT_THROW(substitute(ax.lhs[0], {{"A", int64_t{1}}, {"S1", int64_t{0}}, {"S2", int64_t{1}}}), ParamError);
}

// ---- wrong axioms are caught ----------------------------------------------------

AxiomReport check_text(const std::string& text) {
  static std::vector<Axiom> keep;  // reports point at their axiom
  keep = parse_axioms(text, "wrong.axioms");
  return check_axiom(keep.at(0), CheckOptions{});
}

TEST(WrongAxioms, MatmulCommutativityIsFalse) {
  const AxiomReport r = check_text(
      "axiom matmul_commutative  # wrong\n  vars a: matrix, b: matrix\n"
      "  where shape(a) = shape(b), dim(a, 0) = dim(a, 1)\n  matmul(a, b) = matmul(b, a)\n");
  EXPECT_FALSE(r.holds());
  EXPECT_EQ(r.admitted, 3u);  // 1x1, 2x2, 3x3
  EXPECT_EQ(r.failed, 2u);    // 1x1 matrices do commute
  ASSERT_EQ(r.failures.size(), 1u);
  const Failure& f = r.failures[0];
  EXPECT_EQ(f.instance.shapes.at("a"), (Shape{2, 2}));
  EXPECT_EQ(f.output, 0);
  EXPECT_EQ(f.index.size(), 2u);
  EXPECT_GT(std::abs(f.lhs - f.rhs), 1e-3);
  const std::string text = format_report(r);
  EXPECT_NE(text.find("FALSE  matmul_commutative"), std::string::npos) << text;
  EXPECT_NE(text.find("instance: a=2x2, b=2x2"), std::string::npos) << text;
  EXPECT_NE(text.find("worst element: output 0 at ["), std::string::npos) << text;
  EXPECT_NE(text.find("inputs: a = ["), std::string::npos) << text;
}

// Composing permutations the wrong way round (Q[P[i]] instead of P[Q[i]])
// is false for the permutations that do not commute, and validation says so.
TEST(WrongAxioms, TransposeCompositionInTheWrongOrderIsFalse) {
  const AxiomReport wrong = check_text(
      "axiom transpose3_compose_reversed[P0 in 0..2, P1 in 0..2, P2 in 0..2, Q0 in 0..2, Q1 in 0..2, Q2 in 0..2, R0, "
      "R1, R2]"
      "  # wrong\n  vars a: any\n"
      "  where R0 = pick(P0, Q0, Q1, Q2), R1 = pick(P1, Q0, Q1, Q2), R2 = pick(P2, Q0, Q1, Q2)\n"
      "  transpose[perm=Q0xQ1xQ2](transpose[perm=P0xP1xP2](a)) = transpose[perm=R0xR1xR2](a)\n");
  EXPECT_FALSE(wrong.holds());
  EXPECT_GT(wrong.failed, 0u);
  EXPECT_LT(wrong.failed, wrong.admitted);  // commuting pairs (the identity, a permutation with itself) do hold
  EXPECT_TRUE(check_text(to_text(spec("transpose3_compose"))).holds());
  // An index out of range is undefined: the assignment is not admitted.
  EXPECT_EQ(
      check_text("axiom t  # out of range\n  vars a: any\n  where pick(1, 0) = 0\n  relu(a) = relu(a)\n").admitted, 0u);
}

TEST(WrongAxioms, EnlargeUnderValidPaddingIsFalse) {
  const AxiomReport r = check_text(
      "axiom enlarge_valid  # wrong: the output shrinks\n  vars x: image, k: kernel\n"
      "  conv2d[pad=valid](x, enlarge[size=3x3](k)) = conv2d[pad=valid](x, k)\n");
  EXPECT_FALSE(r.holds());
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_NE(r.failures[0].what.find("on the left but"), std::string::npos) << r.failures[0].what;
  EXPECT_NE(r.failures[0].instance.shapes.at("k")[2] * r.failures[0].instance.shapes.at("k")[3], 9);
}

TEST(WrongAxioms, ConvolutionOfChannelsWithoutTheGroupingConditionIsFalse) {
  const AxiomReport r = check_text(
      "axiom conv_channels  # wrong: the cuts of the channels may differ\n"
      "  vars x1: image, x2: image, k1: kernel, k2: kernel\n"
      "  conv2d(concat[axis=1](x1, x2), concat[axis=1](k1, k2)) = add(conv2d(x1, k1), conv2d(x2, k2))\n");
  EXPECT_FALSE(r.holds());
  ASSERT_EQ(r.failures.size(), 1u);
  const Instance& i = r.failures[0].instance;
  EXPECT_TRUE(i.shapes.at("k1")[1] != i.shapes.at("x1")[1] || i.shapes.at("k2")[1] != i.shapes.at("x2")[1])
      << to_text(i);
}

TEST(WrongAxioms, ConcatWithDifferentAxes) {
  // Interchanging the grouping of four blocks is false when both axes are one.
  const AxiomReport same = check_text(
      "axiom interchange[A, B]  # wrong without A != B\n  vars a: any, b: any, c: any, d: any\n"
      "  concat[axis=A](concat[axis=B](a, b), concat[axis=B](c, d)) = "
      "concat[axis=B](concat[axis=A](a, c), concat[axis=A](b, d))\n");
  EXPECT_FALSE(same.holds());
  ASSERT_EQ(same.failures.size(), 1u);
  EXPECT_EQ(same.failures[0].instance.params.at("A"), same.failures[0].instance.params.at("B"));
  // Associativity with two different axes never type-checks on both sides:
  // an axiom that admits no instance is reported, not passed.
  const AxiomReport none = check_text(
      "axiom assoc[A, B]  # vacuous\n  vars a: any, b: any, c: any\n  where A != B\n"
      "  concat[axis=A](concat[axis=B](a, b), c) = concat[axis=B](a, concat[axis=A](b, c))\n");
  EXPECT_FALSE(none.holds());
  EXPECT_EQ(none.admitted, 0u);
  EXPECT_NE(none.error.find("no instance"), std::string::npos);
  // Cutting at the wrong place.
  const AxiomReport cut = check_text(
      "axiom split_swapped[A, S1, S2]  # wrong sizes\n  vars a: any, b: any\n"
      "  where S1 = dim(b, A), S2 = dim(a, A)\n"
      "  (split[axis=A, sizes=S1xS2](concat[axis=A](a, b)).0, split[axis=A, sizes=S1xS2](concat[axis=A](a, b)).1) = (a, b)\n");
  EXPECT_FALSE(cut.holds());
  ASSERT_EQ(cut.failures.size(), 1u);
  EXPECT_NE(cut.failures[0].instance.params.at("S1"), cut.failures[0].instance.params.at("S2"));
}

TEST(WrongAxioms, MaxpoolWithANegativeScalarIsFalse) {
  const std::string body =
      "  vars x: image, s: scalar\n  maxpool[kernel=3x3](scalar_mul(x, s)) = scalar_mul(maxpool[kernel=3x3](x), s)\n";
  EXPECT_FALSE(check_text("axiom m  # any s\n" + body).holds());
  const std::string guarded = "axiom m  # s >= 0\n  vars x: image, s: scalar\n  where nonnegative(s)\n" + body.substr(body.find("  maxpool"));
  EXPECT_TRUE(check_text(guarded).holds());
}

TEST(WrongAxioms, MistakesFoundWhileEnumeratingAreErrors) {
  // split has as many outputs as the list S has entries: one must be selected.
  const AxiomReport r = check_text(
      "axiom s[S]  # no .k\n  vars a: any, b: any\n  where S = shape(b)\n  relu(split[axis=0, sizes=S](a)) = relu(b)\n");
  EXPECT_FALSE(r.holds());
  EXPECT_NE(r.error.find("select one with .k"), std::string::npos) << r.error;
  // A list compared with an integer.
  const AxiomReport t = check_text("axiom t  # types\n  vars a: any\n  where shape(a) = 2\n  relu(a) = a\n");
  EXPECT_NE(t.error.find("compares"), std::string::npos) << t.error;
  EXPECT_NE(t.error.find("wrong.axioms:3:9"), std::string::npos) << t.error;
}

}  // namespace
}  // namespace tgr::axioms
