// "Never slower" by measurement (optimizer/measured_check.h): the decision
// over what a timer measured, and optimize_model writing the input when a
// (fake) timer measures the rewrite no faster.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "optimizer/measured_check.h"
#include "optimizer/optimize_model.h"

namespace tgr::optimizer {
namespace {

using Outcome = MeasuredDecision::Outcome;

// Paired samples: the original at 100 us every round, the rewrite at
// 100 * ratio (one ratio per round).
PairedTimes paired(const std::vector<double>& ratios) {
  PairedTimes t;
  t.runtime = "fake";
  t.runs_per_round = 5;
  for (double r : ratios) {
    t.original_us.push_back(100);
    t.rewritten_us.push_back(100 * r);
  }
  return t;
}

TEST(MeasuredDecision, KeepsTheOriginalWhenTheRewriteMeasuresSlower) {
  const MeasuredDecision d = decide(paired({1.10, 1.05, 1.12, 1.08, 1.09, 1.11}), MeasureOptions{});
  EXPECT_EQ(d.outcome, Outcome::kNotFaster);
  EXPECT_FALSE(d.keeps_rewrite());
  EXPECT_NEAR(d.ratio, 1.095, 1e-9);
  EXPECT_NEAR(d.original_ms, 0.1, 1e-12);
  EXPECT_NE(d.output_line().find("written unchanged"), std::string::npos) << d.output_line();
}

TEST(MeasuredDecision, KeepsTheOriginalWithinTheThreshold) {
  MeasureOptions o;
  o.min_speedup = 0.01;
  // 0.5 % faster in median: within the threshold, the input is written.
  EXPECT_EQ(decide(paired({0.995, 0.99, 1.0, 0.995, 0.996}), o).outcome, Outcome::kNotFaster);
  o.min_speedup = 0.0;
  EXPECT_EQ(decide(paired({0.995, 0.99, 1.0, 0.995, 0.996}), o).outcome, Outcome::kRewriteFaster);
}

TEST(MeasuredDecision, WritesTheRewriteThatMeasuresFaster) {
  const MeasuredDecision d = decide(paired({0.90, 0.93, 0.88, 1.02, 0.91}), MeasureOptions{});
  EXPECT_EQ(d.outcome, Outcome::kRewriteFaster);
  EXPECT_TRUE(d.keeps_rewrite());
  EXPECT_NEAR(d.ratio, 0.91, 1e-9);
  EXPECT_EQ(d.output_line(), "");
  EXPECT_NE(d.summary().find("5 interleaved rounds of 5 runs"), std::string::npos) << d.summary();
}

TEST(MeasuredDecision, GivesUpOnTooFewRoundsAndWritesTheOriginal) {
  PairedTimes t = paired({0.5, 0.5});  // faster, but only two rounds within the limit
  t.stopped_at_limit = true;
  const MeasuredDecision d = decide(t, MeasureOptions{});
  EXPECT_EQ(d.outcome, Outcome::kGaveUp);
  EXPECT_FALSE(d.keeps_rewrite());
  EXPECT_NE(d.summary().find("gave up at the time limit"), std::string::npos) << d.summary();
}

TEST(MeasuredDecision, NotMeasuredWritesTheRewriteAsPredictedAndSaysWhy) {
  PairedTimes t;
  t.not_measured = "no GPU on this machine";
  const MeasuredDecision d = decide(t, MeasureOptions{});
  EXPECT_EQ(d.outcome, Outcome::kNotMeasured);
  EXPECT_TRUE(d.keeps_rewrite());
  EXPECT_NE(d.summary().find("not measured: no GPU on this machine"), std::string::npos) << d.summary();
}

TEST(MeasuredDecision, OnePairThatIsAlreadyAMedianOfRoundsIsEnough) {
  PairedTimes t;  // bench's RESULT line
  t.original_us = {1000};
  t.rewritten_us = {800};
  t.runs_per_round = 1;
  EXPECT_EQ(decide(t, MeasureOptions{}).outcome, Outcome::kRewriteFaster);
}

TEST(MeasuredDecision, AMissingTimingScriptIsNotMeasured) {
  MeasureOptions o;
  o.ort_script = "/no/such/measure_ort.py";
  const PairedTimes t = make_timer(Target::kOnnxRuntimeCpu)->time("a.onnx", "b.onnx", o);
  EXPECT_NE(t.not_measured.find("/no/such/measure_ort.py"), std::string::npos) << t.not_measured;
  EXPECT_EQ(decide(t, o).outcome, Outcome::kNotMeasured);
  EXPECT_EQ(make_timer(Target::kRoofline), nullptr);
}

// A timer that answers fixed ratios and records the files it was given.
class FakeTimer : public ModelTimer {
 public:
  explicit FakeTimer(std::vector<double> ratios) : ratios_(std::move(ratios)) {}
  PairedTimes time(const std::string& original, const std::string& rewritten, const MeasureOptions&) override {
    original_ = original;
    rewritten_existed_ = std::filesystem::exists(rewritten);
    return paired(ratios_);
  }
  std::vector<double> ratios_;
  std::string original_;
  bool rewritten_existed_ = false;
};

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// gpt2_tiny: the default rules rewrite it for onnxruntime-cpu (a transpose
// pair folded, bias adds moved), predicted x0.93.
OptimizeReport optimize_gpt2_with(const std::shared_ptr<FakeTimer>& timer, const std::string& output) {
  OptimizeOptions o;
  o.model = std::string(TGR_TEST_MODELS) + "/gpt2_tiny.onnx";
  o.output = output;
  o.rules_db = TGR_DEFAULT_RULES;
  o.specs_dir = TGR_SPECS_DIR;
  o.target.costs_db = TGR_DEFAULT_RULES;
  o.measure.enabled = true;
  o.timer = timer;
  return optimize_model(o);
}

TEST(MeasuredOptimize, WritesTheInputWhenTheRewriteMeasuresSlower) {
  const std::string out = (std::filesystem::temp_directory_path() / "measured_slower.onnx").string();
  auto timer = std::make_shared<FakeTimer>(std::vector<double>{1.05, 1.04, 1.06, 1.05, 1.05});
  const OptimizeReport report = optimize_gpt2_with(timer, out);
  ASSERT_TRUE(report.measured.has_value());
  EXPECT_EQ(report.measured->outcome, Outcome::kNotFaster);
  EXPECT_LT(report.measured->predicted_ratio, 0.98);
  EXPECT_GE(report.measured->rewrites, 2);
  EXPECT_TRUE(timer->rewritten_existed_);
  EXPECT_EQ(timer->original_, report.options.model);
  EXPECT_TRUE(report.unchanged);
  EXPECT_TRUE(report.rules_applied.empty());
  EXPECT_EQ(file_bytes(out), file_bytes(report.options.model));
  std::filesystem::remove(out);
}

TEST(MeasuredOptimize, WritesTheRewriteThatMeasuresFaster) {
  const std::string out = (std::filesystem::temp_directory_path() / "measured_faster.onnx").string();
  auto timer = std::make_shared<FakeTimer>(std::vector<double>{0.9, 0.92, 0.91, 0.9, 0.9});
  const OptimizeReport report = optimize_gpt2_with(timer, out);
  ASSERT_TRUE(report.measured.has_value());
  EXPECT_EQ(report.measured->outcome, Outcome::kRewriteFaster);
  EXPECT_FALSE(report.unchanged);
  EXPECT_FALSE(report.rules_applied.empty());
  EXPECT_NE(file_bytes(out), file_bytes(report.options.model));
  EXPECT_EQ(report.to_json()["measured"]["outcome"], "rewrite_faster");
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace tgr::optimizer
