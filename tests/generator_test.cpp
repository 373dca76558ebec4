// The enumerator and the candidate pipeline on small enumeration spaces; the full
// default run is checked by the generate.* ctest entries (rules lookup).
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>

#include "generator/candidates.h"
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
std::unique_ptr<Enumerated> enumerate(std::vector<std::string> ops, int max_ops, int vars, uint64_t seed = 1) {
  auto e = std::make_unique<Enumerated>();
  e->worlds = build_worlds({std::move(ops), vars});
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

TEST(Candidates, WellKnownRulesSurvivePruningAndFalseOnesNeverAppear) {
  auto e = enumerate({"matmul", "add", "transpose", "relu", "conv2d"}, 3, 2);
  // Keep what pass 2 keeps: classes with two or more graphs.
  std::map<std::pair<int, uint64_t>, int> count;
  for (const auto& r : e->records) ++count[{r.world, r.key}];
  std::vector<GraphRecord> kept;
  for (const auto& r : e->records)
    if (count[{r.world, r.key}] > 1) kept.push_back(r);
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

}  // namespace
}  // namespace tgr::gen
