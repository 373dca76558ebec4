// "Never slower" by measurement (optimizer/measured_check.h): the decision
// over what a timer measured. The pipeline writing the input when a (fake)
// timer measures the rewrite no faster: pipeline_measured_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "optimizer/measured_check.h"
#include "tests/paired_times.h"

namespace tgr::optimizer {
namespace {

using Outcome = MeasuredDecision::Outcome;

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

}  // namespace
}  // namespace tgr::optimizer
