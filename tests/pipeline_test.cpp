// The pipeline (pipeline/): the defaults each target resolves, the searches
// by name, the option table both front ends read, and the report.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "pipeline/defaults.h"
#include "pipeline/option_table.h"
#include "pipeline/report.h"
#include "pipeline/search.h"

namespace tgr::pipeline {
namespace {

using optimizer::Target;

std::vector<std::string> keys_of(const nlohmann::ordered_json& object) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.push_back(key);
  return keys;
}

const OptionRow& row(const std::string& name) {
  for (const OptionRow& r : option_table())
    if (r.name == name) return r;
  throw std::runtime_error("no option " + name);
}

OptimizeOptions with_data() {
  OptimizeOptions o;
  o.data = {"shipped.db", "specs"};
  return o;
}

// --- defaults ----------------------------------------------------------------

TEST(Defaults, EveryTargetHasOneRow) {
  ASSERT_EQ(target_defaults().size(), optimizer::targets().size());
  for (size_t i = 0; i < optimizer::targets().size(); ++i)
    EXPECT_EQ(target_defaults()[i].target, optimizer::targets()[i].target);
}

TEST(Defaults, DataPathsAndCostsComeFromTheInstallationAndTheTarget) {
  OptimizeOptions o = resolve_defaults(with_data());
  EXPECT_EQ(o.rules_db, "shipped.db");
  EXPECT_EQ(o.default_rules_db, "shipped.db");
  EXPECT_EQ(o.specs_dir, "specs");
  EXPECT_EQ(o.target.costs_db, "shipped.db");  // onnxruntime-cpu: the shipped table
  EXPECT_EQ(o.search, Search::kSaturate);

  OptimizeOptions gpu = with_data();
  gpu.rules_db = "mine.db";
  gpu.add_shipped_rules = false;
  gpu.target.target = Target::kTgrGpu;
  gpu = resolve_defaults(gpu);
  EXPECT_EQ(gpu.rules_db, "mine.db");
  EXPECT_EQ(gpu.default_rules_db, "");
  EXPECT_EQ(gpu.target.costs_db, "mine.db");  // tgr-gpu: the rules database's own table

  OptimizeOptions ort = with_data();  // without the shipped rules, their costs table still
  ort.add_shipped_rules = false;
  EXPECT_EQ(resolve_defaults(ort).target.costs_db, "shipped.db");
  ort.target.costs_db = "given.db";
  EXPECT_EQ(resolve_defaults(ort).target.costs_db, "given.db");
}

TEST(Defaults, SaturationLimitsAreTheTargetsUnlessGiven) {
  OptimizeOptions o = with_data();
  o.target.target = Target::kTgrGpu;
  const OptimizeOptions gpu = resolve_defaults(o);
  EXPECT_EQ(gpu.saturation.runner.growth_limit, target_defaults(Target::kTgrGpu).node_growth);
  EXPECT_EQ(gpu.saturation.runner.iteration_limit, target_defaults(Target::kTgrGpu).iterations);
  o.target.target = Target::kRoofline;
  const OptimizeOptions roofline = resolve_defaults(o);
  EXPECT_EQ(roofline.saturation.runner.growth_limit, 120);
  EXPECT_EQ(roofline.saturation.runner.iteration_limit, 20);

  o.node_growth = 7;
  o.iterations = 3;
  EXPECT_EQ(resolve_defaults(o).saturation.runner.growth_limit, 7);
  EXPECT_EQ(resolve_defaults(o).saturation.runner.iteration_limit, 3);
  o.node_growth.reset();
  o.node_limit = 7000;  // given: that limit alone
  EXPECT_EQ(resolve_defaults(o).saturation.runner.node_limit, 7000u);
  EXPECT_EQ(resolve_defaults(o).saturation.runner.growth_limit, 0);
}

TEST(Defaults, TheTimeoutBoundsTheSaturationAndResolvingTwiceChangesNothing) {
  OptimizeOptions o = with_data();
  o.backtracking.timeout_s = 8;
  o.backtracking.parallel = false;
  const OptimizeOptions r = resolve_defaults(o);
  EXPECT_DOUBLE_EQ(r.saturation.runner.time_limit_s, saturation::saturation_time_limit(8, r.saturation));
  EXPECT_EQ(r.saturation.timeout_s, 8);
  EXPECT_FALSE(r.saturation.runner.parallel);
  EXPECT_TRUE(r.saturation.runner.shipped_rules_first);
  EXPECT_TRUE(r.saturation.use_ilp);
  const OptimizeOptions twice = resolve_defaults(r);
  EXPECT_EQ(twice.rules_db, r.rules_db);
  EXPECT_EQ(twice.target.costs_db, r.target.costs_db);
  EXPECT_EQ(twice.saturation.runner.time_limit_s, r.saturation.runner.time_limit_s);
  EXPECT_EQ(twice.saturation.runner.growth_limit, r.saturation.runner.growth_limit);
  o.saturation.ilp.time_limit_s = 0;  // greedy extraction only
  EXPECT_FALSE(resolve_defaults(o).saturation.use_ilp);
}

// --- searches ----------------------------------------------------------------

TEST(Searches, NamesRoundTripAndAnUnknownNameListsThem) {
  for (const SearchInfo& s : searches()) EXPECT_EQ(parse_search(s.name), s.search);
  EXPECT_EQ(search_name(Search::kBoth), "both");
  try {
    parse_search("anneal");
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "search 'anneal': expected backtrack, saturate or both");
  }
}

// --- the option table ---------------------------------------------------------

TEST(OptionTable, NamesAreUniqueAndEveryRowSetsTheOptions) {
  std::set<std::string> names;
  for (const OptionRow& r : option_table()) {
    EXPECT_TRUE(names.insert(r.name).second) << r.name;
    EXPECT_FALSE(r.help.empty()) << r.name;
    EXPECT_TRUE(r.set) << r.name;
    if (!r.excludes.empty()) {
      EXPECT_NO_THROW(row(r.excludes)) << r.name;
    }
    if (!r.needs.empty()) {
      EXPECT_NO_THROW(row(r.needs)) << r.name;
    }
  }
  EXPECT_EQ(keyword_name(row("node-limit")), "node_limit");
  OptimizeOptions o;
  row("search").set(o, std::string("both"));
  EXPECT_EQ(o.search, Search::kBoth);
  row("sequential").set(o, true);
  EXPECT_FALSE(o.backtracking.parallel);
  row("no-default-rules").set(o, true);
  EXPECT_FALSE(o.add_shipped_rules);
  row("node-limit").set(o, uint64_t{7000});
  EXPECT_EQ(o.node_limit, 7000u);
  row("target").set(o, std::string("tgr-gpu"));
  EXPECT_EQ(o.target.target, Target::kTgrGpu);
  // --convert-io needs --convert-to, set before it (the table's order).
  EXPECT_EQ(row("convert-io").needs, "convert-to");
  row("convert-to").set(o, std::string("float16"));
  row("convert-io").set(o, true);
  ASSERT_TRUE(o.convert.has_value());
  EXPECT_EQ(o.convert->to, DType::kFloat16);
  EXPECT_TRUE(o.convert->convert_io);
  row("no-measure").set(o, true);
  EXPECT_TRUE(o.no_measure);
  EXPECT_FALSE(row("no-measure").keyword) << "the Python package does not time rewrites";
}

TEST(OptionTable, DefaultsShownAreTheOptionsDefaultsAndTheTargetsAreNamed) {
  const OptimizeOptions o = with_data();
  EXPECT_EQ(std::get<int64_t>(row("budget").default_value(o)), o.backtracking.budget);
  EXPECT_EQ(std::get<std::string>(row("rules").default_value(o)), "shipped.db");
  EXPECT_FALSE(row("node-growth").default_value);  // the target's
  EXPECT_NE(row("node-growth").help.find("tgr-gpu 0"), std::string::npos) << row("node-growth").help;
  EXPECT_NE(row("iterations").help.find("tgr-gpu 100"), std::string::npos) << row("iterations").help;
  EXPECT_NE(row("search").help.find("roofline saturate"), std::string::npos) << row("search").help;
}

TEST(OptionTable, ChecksSayWhatIsWrong) {
  EXPECT_EQ(check_words(row("budget"), int64_t{0}), "must be positive");
  EXPECT_EQ(check_words(row("budget"), int64_t{1}), "");
  EXPECT_EQ(check_words(row("node-growth"), -1.0), "must not be negative");
  EXPECT_EQ(check_words(row("unmeasured-margin"), 0.0), "must be positive");
  EXPECT_EQ(check_words(row("alpha"), 11.0), "must be in [1, 10]");
  EXPECT_EQ(check_words(row("timeout"), 1e18), "must be a number of seconds above 0, at most 31536000 (a year)");
  EXPECT_EQ(check_words(row("ilp-timeout"), 0.0), "");
  EXPECT_EQ(check_words(row("search"), std::string("anneal")), "expected 'backtrack', 'saturate' or 'both'");
  EXPECT_EQ(check_words(row("search"), std::string("both")), "");
}

// --- the report of `optimize --report` -----------------------------------------

// Scripts and tests read these keys; their names and order are the report's
// interface (README.md, "Optimizing a model").
TEST(OptimizeReport, ToJsonHasTheReportKeysAndValues) {
  OptimizeReport r;
  r.options.model = "in.onnx";
  r.options.output = "out \"quoted\".onnx";
  r.options.rules_db = "rules.db";
  r.options.backtracking.budget = 20;
  r.options.backtracking.alpha = 1.05;
  r.cost_model = "analytic (H100 roofline)";
  r.operators_before = 66;
  r.operators_after = 52;
  r.cost_before_us = 123.456789;
  r.cost_after_us = 100;
  r.rules_applied = {{7, "relu(relu(x0)) => relu(x0)", 3}};
  r.rewrites = {{7, "relu(relu(x0)) => relu(x0)", "rule7", {"/a/Relu", "/a/Relu_1"}, {"/a/Relu/rule7/relu"}}};
  optimizer::BacktrackingStats stats;
  stats.popped = 4;
  stats.timed_out = true;
  r.searches.push_back({"backtracking", "search:", backtracking_stats(stats, r.options.backtracking)});
  r.proofs.proved = 5;
  r.proofs.corrected = 1;
  r.fold.folded_nodes = 2;
  r.opaque_nodes = 1;
  r.import_seconds = 0.25;

  const nlohmann::ordered_json j = r.to_json();
  EXPECT_EQ(j["rewrites"][0]["rule"], "rule7");
  EXPECT_EQ(j["rewrites"][0]["removed"][1], "/a/Relu_1");
  EXPECT_EQ(j["rewrites"][0]["added"][0], "/a/Relu/rule7/relu");
  const std::vector<std::string> report_keys = {"model",
                                                "output",
                                                "rules_db",
                                                "rule_sets",
                                                "directions_that_can_match",
                                                "directions_unreachable",
                                                "target",
                                                "cost_model",
                                                "operators_before",
                                                "operators_after",
                                                "cost_before_us",
                                                "cost_after_us",
                                                "cost_ratio",
                                                "min_gain",
                                                "below_min_gain",
                                                "measured",
                                                "rules_applied",
                                                "rewrites",
                                                "search",
                                                "proofs",
                                                "folded_constant_nodes",
                                                "opaque_nodes",
                                                "seconds"};
  EXPECT_EQ(keys_of(j), report_keys);
  EXPECT_EQ(keys_of(j["search"]),
            (std::vector<std::string>{"popped", "candidates", "pushed", "duplicates", "pruned_by_cost",
                                      "unproved_instances", "matches_rejected_used_outside", "matches_rejected_cycle",
                                      "budget", "alpha", "timed_out", "stop_reason", "seconds"}));
  EXPECT_EQ(keys_of(j["proofs"]),
            (std::vector<std::string>{"proved", "failed", "cache_hits", "replayed", "corrected_partial", "ms"}));
  EXPECT_EQ(keys_of(j["seconds"]), (std::vector<std::string>{"import", "search", "export"}));

  EXPECT_EQ(j["target"], "onnxruntime-cpu");  // the default target
  EXPECT_EQ(j["output"], "out \"quoted\".onnx");
  EXPECT_EQ(j["operators_after"], 52);
  EXPECT_EQ(j["cost_before_us"].get<double>(), 123.457);  // six significant digits, as always
  EXPECT_EQ(j["cost_ratio"].get<double>(), 0.81);
  ASSERT_EQ(j["rules_applied"].size(), 1u);
  EXPECT_EQ(j["rules_applied"][0],
            (nlohmann::ordered_json{
                {"id", 7}, {"count", 3}, {"rule", "relu(relu(x0)) => relu(x0)"}, {"rules_db", "rules.db"}}));
  EXPECT_EQ(j["search"]["budget"], 20);
  EXPECT_EQ(j["search"]["timed_out"], true);
  EXPECT_EQ(j["proofs"]["corrected_partial"], 1);
  EXPECT_EQ(j["folded_constant_nodes"], 2);
  EXPECT_EQ(j["opaque_nodes"], 1);
  // What is written is what is read back.
  EXPECT_EQ(nlohmann::ordered_json::parse(j.dump(2)), j);
}

TEST(OptimizeReport, NoRuleAppliedIsAnEmptyArrayAndRatioOne) {
  const nlohmann::ordered_json j = OptimizeReport{}.to_json();
  EXPECT_TRUE(j["rules_applied"].is_array());
  EXPECT_TRUE(j["rules_applied"].empty());
  EXPECT_EQ(j["cost_ratio"].get<double>(), 1.0);
}

TEST(OptimizeReport, SeveralSearchesAreOneObjectEachAndWhichWasKept) {
  OptimizeReport r;
  SearchResult saturation;
  saturation.stop_reason = "saturated";
  saturation.summary = "saturation, stopped: saturated";
  saturation.report = {{"kind", "saturation"}};
  optimizer::BacktrackingStats then;
  then.budget_exhausted = true;
  r.searches = {{"saturation", "search:", saturation},
                {"backtracking", "then:", backtracking_stats(then, r.options.backtracking)},
                {"backtracking_from_input", "and:",
                 backtracking_stats(optimizer::BacktrackingStats{}, r.options.backtracking, " from the input")}};
  r.kept = "saturation, then backtracking";
  const nlohmann::ordered_json j = r.to_json();
  EXPECT_EQ(keys_of(j["search"]),
            (std::vector<std::string>{"saturation", "backtracking", "backtracking_from_input", "kept"}));
  EXPECT_EQ(j["search"]["saturation"]["kind"], "saturation");
  EXPECT_EQ(j["search"]["backtracking"]["stop_reason"], "budget");
  EXPECT_EQ(j["search"]["kept"], "saturation, then backtracking");
  EXPECT_EQ(r.stop_reason(), "budget");  // the backtracking from saturation's graph
  char* text = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  r.print_summary(out);
  std::fclose(out);
  const std::string summary(text, size);
  std::free(text);
  EXPECT_NE(summary.find("  search:         saturation, stopped: saturated\n"), std::string::npos) << summary;
  EXPECT_NE(summary.find("  then:           backtracking, stopped at the budget: "), std::string::npos) << summary;
  EXPECT_NE(summary.find("  and:            backtracking from the input, stopped with every graph within alpha"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("  kept:           the graph of saturation, then backtracking (the cheapest)"),
            std::string::npos)
      << summary;
}

}  // namespace
}  // namespace tgr::pipeline
