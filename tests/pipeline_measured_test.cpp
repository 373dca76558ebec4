// "Never slower" by measurement (optimizer/measured_check.h) as the
// pipeline's decide step (pipeline/pipeline.h): the input is written when a
// (fake) timer measures the rewrite no faster, the rewrite when it does.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "optimizer/measured_check.h"
#include "pipeline/defaults.h"
#include "pipeline/pipeline.h"
#include "tests/paired_times.h"

namespace tgr::pipeline {
namespace {

using optimizer::MeasuredDecision;
using optimizer::MeasureOptions;
using optimizer::ModelTimer;
using optimizer::paired;
using optimizer::PairedTimes;
using Outcome = MeasuredDecision::Outcome;

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
OptimizeOptions gpt2_options(const std::string& output) {
  OptimizeOptions o;
  o.model = std::string(TGR_TEST_MODELS) + "/gpt2_tiny.onnx";
  o.output = output;
  o.data = {TGR_DEFAULT_RULES, TGR_SPECS_DIR};
  return o;
}

OptimizeReport optimize_gpt2_with(const std::shared_ptr<FakeTimer>& timer, const std::string& output) {
  OptimizeOptions o = gpt2_options(output);
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

// Whether the decide step measures: where the target runs on a runtime
// that can time the model here, unless --no-measure.
TEST(MeasuredOptimize, MeasuresWhereATimerIsUnlessAskedNotTo) {
  OptimizeOptions o = gpt2_options("unused.onnx");
  EXPECT_FALSE(resolve_defaults(o).measure.enabled) << "no timing script, no timer (the Python package)";
  o.data.measure_ort_script = "measure_ort.py";
  EXPECT_TRUE(resolve_defaults(o).measure.enabled);
  EXPECT_EQ(resolve_defaults(o).measure.ort_script, "measure_ort.py");
  o.no_measure = true;
  EXPECT_FALSE(resolve_defaults(o).measure.enabled);
  o.no_measure = false;
  o.target.target = optimizer::Target::kRoofline;
  EXPECT_FALSE(resolve_defaults(o).measure.enabled) << "the roofline runs on no runtime";
  o.target.target = optimizer::Target::kTgrGpu;
  EXPECT_FALSE(resolve_defaults(o).measure.enabled) << "tgr-gpu is timed by bench, which this installation lacks";
  o.data.bench_program = "bench";
  EXPECT_TRUE(resolve_defaults(o).measure.enabled);
  o.convert = optimizer::PrecisionConversion{};
  EXPECT_FALSE(resolve_defaults(o).measure.enabled) << "the input is no baseline of a converted model";
  o.convert.reset();
  EXPECT_EQ(resolve_defaults(o).measure.gpu_costs_db, resolve_defaults(o).target.costs_db);
}

}  // namespace
}  // namespace tgr::pipeline
