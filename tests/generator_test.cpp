// The enumerator and the candidate pipeline on small enumeration spaces; the full
// default run is checked by the generate.* ctest entries (rules lookup).
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>

#include "generator/candidates.h"
#include "generator/implication.h"
#include "ir/canonical.h"

namespace tgr::gen {
namespace {

struct Enumerated {
  std::vector<World> worlds;
  std::vector<Enumerator> enumerators;
  std::vector<GraphRecord> records;
  std::map<std::string, uint64_t> key_of;  // graph text -> fingerprint class
};

// Pass-by-value safe: enumerators refer to `worlds`, so build in place.
std::unique_ptr<Enumerated> enumerate(std::vector<std::string> ops, int max_ops, int vars, uint64_t seed = 1,
                                      const Space* space = nullptr) {
  auto e = std::make_unique<Enumerated>();
  e->worlds = build_worlds({std::move(ops), vars, "default", space});
  for (size_t w = 0; w < e->worlds.size(); ++w) e->enumerators.emplace_back(e->worlds[w], static_cast<uint8_t>(w), max_ops, seed);
  std::mutex m;
  std::atomic<bool> stop{false};
  for (auto& en : e->enumerators) {
    EnumerationCounters c;
    en.run([&](const GraphRecord& r) {
      std::lock_guard lock(m);
      e->records.push_back(r);
    }, stop, c);
  }
  for (const GraphRecord& r : e->records) e->key_of[to_text(e->enumerators[r.world].to_graph(r))] = r.key;
  return e;
}

TEST(Enumerator, EqualProgramsShareAClassAndOthersDoNot) {
  const auto e = enumerate({"matmul", "transpose"}, 3, 2);
  const auto& k = e->key_of;
  ASSERT_TRUE(k.count("matmul(matmul(x0, w0), w1)"));
  ASSERT_TRUE(k.count("matmul(x0, matmul(w0, w1))"));
  EXPECT_EQ(k.at("matmul(matmul(x0, w0), w1)"), k.at("matmul(x0, matmul(w0, w1))"));
  EXPECT_EQ(k.at("transpose(matmul(x0, w0))"), k.at("matmul(transpose(w0), transpose(x0))"));
  // matmul is not commutative, and two variables of one shape hold
  // independent values, so these never meet.
  EXPECT_NE(k.at("matmul(w0, w1)"), k.at("matmul(w1, w0)"));
  EXPECT_NE(k.at("matmul(matmul(x0, w0), w1)"), k.at("matmul(matmul(x0, w1), w0)")) << "w0 and w1 hold different values";
  // A graph whose variables are not the first of their kind is a renamed
  // copy of one that is, and is not kept.
  EXPECT_FALSE(k.count("matmul(x0, w1)"));
  EXPECT_EQ(k.at("transpose(transpose(x0))"), k.at("x0"));  // graphs of no operator take part
}

TEST(Enumerator, EveryGraphOnceWhateverTheOrderOfIndependentOperators) {
  // relu(x0) and relu(x1) are independent: the pair appears in one order
  // only, and each distinct graph (by structure) is registered once.
  const auto e = enumerate({"add", "relu", "matmul"}, 3, 2);
  std::map<uint64_t, int> by_structure;
  for (const GraphRecord& r : e->records) ++by_structure[r.structure];
  int repeated = 0;
  for (const auto& [s, n] : by_structure) repeated += n > 1;
  EXPECT_LT(repeated, static_cast<int>(by_structure.size()) / 20) << "few graphs are built twice";
  EXPECT_TRUE(e->key_of.count("add(relu(x0), relu(x1))"));
  EXPECT_FALSE(e->key_of.count("add(x0, x0)")) << "one value as both arguments is not enumerated";
}

TEST(Enumerator, DeterministicForASeed) {
  auto sorted_keys = [](uint64_t seed) {
    auto e = enumerate({"matmul", "add"}, 2, 2, seed);
    std::vector<uint64_t> keys;
    for (const auto& r : e->records) keys.push_back(r.key);
    std::sort(keys.begin(), keys.end());
    return keys;
  };
  EXPECT_EQ(sorted_keys(7), sorted_keys(7));
  EXPECT_NE(sorted_keys(7), sorted_keys(8));
}

// What pass 2 keeps: the records of classes with two or more graphs.
std::vector<GraphRecord> repeated_classes(const std::vector<GraphRecord>& records) {
  std::map<std::pair<int, uint64_t>, int> count;
  for (const auto& r : records) ++count[{r.world, r.key}];
  std::vector<GraphRecord> kept;
  for (const auto& r : records)
    if (count[{r.world, r.key}] > 1) kept.push_back(r);
  return kept;
}

TEST(Candidates, WellKnownRulesSurvivePruningAndFalseOnesNeverAppear) {
  auto e = enumerate({"matmul", "add", "transpose", "relu", "conv2d"}, 3, 2);
  // Keep what pass 2 keeps: classes with two or more graphs.
  std::vector<GraphRecord> kept = repeated_classes(e->records);
  CandidateStats stats;
  std::atomic<bool> stop{false};
  const auto candidates = find_candidates(e->enumerators, kept, 1, stats, stop);
  std::set<std::string> keys;
  for (const auto& c : candidates) keys.insert(c.canonical);
  for (const char* rule : {"relu(conv2d(i0, k0)) => conv2d[act=relu](i0, k0)",
                           "transpose(matmul(x0, w0)) => matmul(transpose(w0), transpose(x0))",
                           "add(conv2d(i0, k0), conv2d(i0, k1)) => conv2d(i0, add(k0, k1))"})
    EXPECT_TRUE(keys.count(canonical_rule_text(rule))) << rule;
  EXPECT_FALSE(keys.count(canonical_rule_text("matmul(w0, w1) => matmul(w1, w0)")));
  EXPECT_GT(stats.renaming, 0u);
  EXPECT_EQ(stats.kept, candidates.size());
  EXPECT_EQ(stats.pairs, stats.trivial + stats.renaming + stats.commutative + stats.common_subgraph +
                             stats.common_supergraph + stats.float64_rejected + stats.instances + stats.kept);
  // Generalization: a rule with two variables merged is an instance of the
  // kept rule, dropped, and still implied by it.
  EXPECT_GT(stats.instances, 0u);
  const std::string merged = canonical_rule_text("matmul(matmul(x0, w0), w0) => matmul(x0, matmul(w0, w0))");
  EXPECT_FALSE(keys.count(merged));
  ImplicationIndex index;
  for (size_t i = 0; i < candidates.size(); ++i) index.add(i, candidates[i].canonical, candidates[i].variables);
  EXPECT_FALSE(
      index.explain(canonical_rule_text("matmul(w0, w1) => matmul(w1, w0)"), {{"w0", {4, 4}}, {"w1", {4, 4}}}));
  const auto how = index.explain(merged, {{"x0", {2, 4}}, {"w0", {4, 4}}});
  ASSERT_TRUE(how);
  EXPECT_EQ(how->pass, "substitution");
  const std::string instance =
      canonical_rule_text("add(conv2d(relu(i0), k0), conv2d(relu(i0), k1)) => conv2d(relu(i0), add(k0, k1))");
  EXPECT_FALSE(keys.count(instance));
  EXPECT_TRUE(index.explain(instance, {{"i0", {1, 2, 4, 4}}, {"k0", {2, 2, 3, 3}}, {"k1", {2, 2, 3, 3}}}));
  // A larger rule that only adds the same context on both sides is pruned.
  EXPECT_FALSE(keys.count(canonical_rule_text("relu(relu(conv2d(i0, k0))) => relu(conv2d[act=relu](i0, k0))")));
  std::sort(kept.begin(), kept.end());
  const auto again = find_candidates(e->enumerators, kept, 1, stats, stop);
  ASSERT_EQ(again.size(), candidates.size());
  for (size_t i = 0; i < again.size(); ++i) EXPECT_EQ(again[i].canonical, candidates[i].canonical);
}

TEST(EnumerationSpace, BadOperatorNamesAreErrors) {
  EXPECT_THROW(build_worlds({{"conv3d"}, 3}), std::invalid_argument);
  EXPECT_THROW(build_worlds({{"softmax"}, 3}), std::invalid_argument);  // in the table, not in the generator's set
  EXPECT_THROW(build_worlds({{}, 10}), std::invalid_argument);
  EXPECT_EQ(build_worlds({{}, 3}).size(), 3u);
  EXPECT_EQ(build_worlds({{}, 0}).size(), 3u);  // 0: the space's variables-per-kind
}

TEST(SearchSpace, BuiltInSpacesParseAndBuild) {
  const auto names = builtin_space_names();
  for (const char* name : {"default", "layout", "merge", "mobile", "pointwise", "splitk", "taso", "transformer"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  for (const auto& name : names) {
    const Space space = load_space(name);
    EXPECT_EQ(space.name, name);
    EXPECT_FALSE(space.about.empty()) << name;
    EXPECT_FALSE(build_worlds({{}, 0, name}).empty()) << name;
  }
  const Space d = load_space("default");
  EXPECT_EQ(d.vars_per_kind, 4);  // images; every other kind at most 3 (TASO's rules of four images)
  EXPECT_EQ(d.operators().size(), 17u);
  const auto worlds = build_worlds({{}, 0, "default"});
  ASSERT_EQ(worlds.size(), 3u);
  EXPECT_EQ(worlds[0].name, "matrices");
  EXPECT_EQ(worlds[0].variables.size(), 8u);  // x0..x2, w0..w2, s0, s1 (scalars: at most 2)
  EXPECT_EQ(worlds[2].variables.size(), 15u);  // i0..i3, k0..k2, p0..p2, r0..r2, s0, s1
  EXPECT_EQ(worlds[2].alternative_shape("k"), (Shape{3, 3, 3, 3}));
  // Without batch_matmul the batches world, which needs it, is left out.
  const auto without = build_worlds({{"add", "matmul"}, 0, "default"});
  ASSERT_EQ(without.size(), 2u);
  EXPECT_EQ(without[1].name, "images");
  // The transformer space uses operators the default leaves out.
  const auto ops = load_space("transformer").operators();
  for (const char* op : {"softmax", "layer_norm", "batch_matmul", "reshape", "transpose"})
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
}

TEST(SearchSpace, ErrorsNameTheFileAndLine) {
  auto error = [](const std::string& text) {
    try {
      parse_space(text, "my.space");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string head = "space t\nworld w\nvariable x 2x2 tensor alternative 3x3\n";
  EXPECT_EQ(error(head + "operator frob\n"), "my.space:4: unknown operator 'frob'");
  EXPECT_EQ(error(head + "operator concat[axes=1]\n"), "my.space:4: concat has no parameter 'axes'");
  EXPECT_EQ(error(head + "operator matmul (tensor)\n"), "my.space:4: matmul takes 2 arguments; 1 roles given");
  EXPECT_EQ(error(head + "operator relu -> vector\n"),
            "my.space:4: unknown role 'vector' (tensor, image, kernel, scalar, bias, any, same)");
  EXPECT_EQ(error(head + "operator eye[n=2]\n"), "my.space:4: eye takes no arguments: give its output role (-> ROLE)");
  EXPECT_EQ(error(head + "operator relu broadcasting\n"), "my.space:4: only add and mul take 'broadcasting'");
  EXPECT_EQ(error(head + "variable x 2x2 tensor alternative 3x3\n"),
            "my.space:4: a second variable kind 'x' in this world");
  EXPECT_EQ(error(head + "variable y 2x2 tensor alternative 3\n"),
            "my.space:4: the alternative shape of 'y' has another rank");
  EXPECT_EQ(error("world w\n"), "my.space: no 'space NAME' line");
  EXPECT_EQ(error("space t\nvariable x 2 tensor alternative 3\n"),
            "my.space:2: 'variable' and 'operator' lines belong to a 'world'");
  EXPECT_EQ(error("space t\nfrob\n"),
            "my.space:2: unknown keyword 'frob' (space, about, variables-per-kind, world, variable, operator)");
  EXPECT_THROW(load_space("no-such-space"), std::invalid_argument);
  EXPECT_THROW(build_worlds({{"softmax"}, 0, "default"}), std::invalid_argument);  // not in the default space
}

// A space file decides the variables (a kind of role any: kernels that are
// also convolved as images), broadcasting, and operators of three arguments.
TEST(SearchSpace, ASpaceFileDecidesWhatIsEnumerated) {
  const Space space = parse_space(R"(space test
world images
variable i 1x2x4x4 image alternative 2x3x5x6
variable k 2x2x3x3 kernel alternative 3x3x3x3
variable u 2x2x3x3 any alternative 3x3x3x3 at-most 1
operator conv2d (image, kernel) -> image
operator reduce_mean[axes=2x3] (image)
operator mul (image, image) broadcasting
world rows
variable x 2x4 tensor alternative 3x6
variable g 4 tensor alternative 6
operator layer_norm[axis=1] (tensor, tensor, tensor) -> tensor
)",
                                  "test.space");
  const auto e = enumerate({}, 2, 2, 1, &space);
  const auto& k = e->key_of;
  EXPECT_TRUE(k.count("conv2d(u0, k0)")) << "a kernel of role any is convolved as an image";
  EXPECT_TRUE(k.count("conv2d(i0, u0)")) << "and as a kernel";
  EXPECT_FALSE(k.count("conv2d(k0, i0)"));
  EXPECT_FALSE(k.count("u1")) << "at most one u";
  EXPECT_TRUE(k.count("mul(i0, reduce_mean[axes=2x3](i0))")) << "broadcasting";
  EXPECT_TRUE(k.count("layer_norm[axis=1](x0, g0, g1)"));
  EXPECT_FALSE(k.count("layer_norm[axis=1](x0, g0, g0)")) << "one value as two arguments";
  EXPECT_NE(k.at("reduce_mean[axes=2x3](conv2d(i0, k0))"), k.at("conv2d(reduce_mean[axes=2x3](i0), k0)"))
      << "a 3x3 kernel with same padding does not commute with global pooling";
}

// Candidates of a space at a size: what pass 2 keeps (classes of two or
// more graphs), paired and pruned; their canonical texts.
std::set<std::string> candidate_rules(const Space& space, int max_ops, int vars) {
  auto e = enumerate({}, max_ops, vars, 1, &space);
  std::vector<GraphRecord> kept = repeated_classes(e->records);
  CandidateStats stats;
  std::atomic<bool> stop{false};
  std::set<std::string> keys;
  for (const auto& c : find_candidates(e->enumerators, kept, 1, stats, stop)) keys.insert(c.canonical);
  return keys;
}

// Per-channel biases (role bias) broadcast over images of two widths: the
// generator finds that the biases of stacked branches stack (the rule
// rules/extra.rules once wrote by hand, now rules/generated.rules), and a commutative operator whose
// roles differ is enumerated with its arguments in the roles' order even
// when the bias variables come first.
TEST(SearchSpace, BiasesOfStackedChannelsStack) {
  const Space space = parse_space(R"(space biases
world channels
variable c 1x2x1x1 bias alternative 1x3x1x1
variable d 1x3x1x1 bias alternative 1x4x1x1
variable x 1x2x4x4 image alternative 1x3x4x4
variable y 1x3x4x4 image alternative 1x4x4x4
operator add (image, bias) broadcasting
operator concat[axis=1]
)",
                                  "biases.space");
  const auto e = enumerate({}, 2, 1, 1, &space);
  const auto& k = e->key_of;
  EXPECT_TRUE(k.count("add(x0, c0)")) << "the image first, though c0 is an earlier variable";
  EXPECT_FALSE(k.count("add(c0, x0)")) << "a bias is not the first argument";
  EXPECT_FALSE(k.count("add(x0, d0)")) << "2 channels and a bias of 3 do not broadcast";
  EXPECT_TRUE(k.count("concat[axis=1](c0, d0)"));
  const auto rules = candidate_rules(space, 3, 1);
  EXPECT_TRUE(rules.count(canonical_rule_text(
      "concat[axis=1](add(x0, c0), add(y0, d0)) => add(concat[axis=1](x0, y0), concat[axis=1](c0, d0))")));
  EXPECT_EQ(space.worlds[0].templates[0].symmetric_roles(), false);
  EXPECT_EQ(space.worlds[0].templates[1].symmetric_roles(), true);
}

// Two convolutions of one input are one over the stacked kernels, split
// (a rule of two outputs); a 1 x 1 kernel reads no padding.
TEST(SearchSpace, ConvolutionsOfOneInputMerge) {
  const Space space = parse_space(R"(space branches
world branches
variable i 1x4x5x5 image alternative 1x6x5x5
variable k 2x4x3x3 kernel alternative 3x6x3x3
variable l 3x4x3x3 kernel alternative 4x6x3x3
variable p 2x4x1x1 kernel alternative 3x6x1x1
operator conv2d (image, kernel) -> image
operator conv2d[pad=valid] (image, kernel) -> image
operator concat[axis=0] (kernel, kernel)
operator split[axis=1, sizes=2x3] (image)
)",
                                  "branches.space");
  const auto rules = candidate_rules(space, 3, 1);
  EXPECT_TRUE(rules.count(canonical_rule_text(
      "(conv2d(i0, k0), conv2d(i0, l0)) => (split[axis=1, sizes=2x3](conv2d(i0, concat[axis=0](k0, l0))).0, "
      "split[axis=1, sizes=2x3](conv2d(i0, concat[axis=0](k0, l0))).1)")));
  EXPECT_TRUE(rules.count(canonical_rule_text("conv2d[pad=valid](i0, p0) => conv2d(i0, p0)")));
  EXPECT_FALSE(rules.count(canonical_rule_text("conv2d[pad=valid](i0, k0) => conv2d(i0, k0)")))
      << "a 3 x 3 kernel does read padding";
}

}  // namespace
}  // namespace tgr::gen
