// The GPU runtime's plans of the bundled transformer models (no GPU needed):
// attention's head merges run nothing (the product writes the merged heads
// in place), gathers of one constant index are views (runtime/views.h), and
// every attention is one step (runtime/attention.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "onnx/onnx_import.h"
#include "runtime/execution_plan.h"
#include "runtime/step_signature.h"

namespace tgr {
namespace {

Graph import_bundled(const std::string& model) {
  onnx_io::ImportOptions options;
  return onnx_io::import_model_file(std::string(TGR_TEST_DATA) + "/models/" + model + ".onnx", options).graph;
}

// Running steps by label, counted.
std::map<std::string, int> step_counts(const Graph& g, const ExecutionPlan& plan) {
  std::map<std::string, int> counts;
  for (const Task& t : plan.tasks)
    if (!step_is_free(t)) ++counts[task_label(g, t)];
  return counts;
}

// Products written in place: batch_matmuls whose output is a view.
int products_written_in_place(const Graph& g, const ExecutionPlan& plan) {
  int n = 0;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (g.nodes()[i].is_op() && g.nodes()[i].op->name == "batch_matmul" && plan.slot({static_cast<int32_t>(i), 0}).view)
      ++n;
  return n;
}

TEST(ModelPlans, VitTinyMergesItsHeadsWithoutCopies) {
  const Graph g = import_bundled("vit_tiny");
  const ExecutionPlan plan = make_execution_plan(g);
  const std::map<std::string, int> counts = step_counts(g, plan);
  EXPECT_EQ(products_written_in_place(g, plan), 2);  // one per layer
  // The query, key and value picked from one tensor, and the class token
  // picked at the end, are views; so the reshape before them copies nothing either.
  EXPECT_EQ(counts.count("gather"), 0u);
  EXPECT_EQ(counts.count("reshape"), 0u);
}

// Each bundled transformer's attentions (two layers each) found as single
// steps, reading their queries, keys and values without copies: the steps
// that run, fused and not.
TEST(ModelPlans, EveryAttentionOfTheBundledTransformersIsOneStep) {
  struct Expected {
    const char* model;
    int fused_steps, unfused_steps;
  };
  for (const Expected& e :
       {Expected{"bert_tiny", 23, 35}, Expected{"vit_tiny", 23, 31}, Expected{"gpt2_tiny", 23, 33},
        Expected{"t5_encoder_tiny", 30, 40}, Expected{"llama_tiny", 55, 69}, Expected{"llama_tiny_dynamo", 62, 76},
        Expected{"llama_tiny_op20", 55, 69}, Expected{"qwen2_tiny", 55, 69}, Expected{"gemma_tiny", 56, 70},
        Expected{"gemma_tiny_dynamo", 63, 77}, Expected{"mistral_tiny", 55, 69}}) {
    const Graph g = import_bundled(e.model);
    const ExecutionPlan plan = make_execution_plan(g);
    PlanOptions unfused;
    unfused.attention = false;
    int attention = 0, steps = 0;
    for (const Task& t : plan.tasks) {
      attention += t.kind == Task::Kind::kAttention;
      steps += !step_is_free(t);
      if (t.kind != Task::Kind::kAttention) continue;
      // Each operand read from a value some other step computes: a layer's
      // projection (or its rotary embedding), never a copy of heads.
      for (const AttentionOperand* o : {&t.attention->q, &t.attention->k, &t.attention->v}) {
        const Node& source = g.node(o->source.node);
        EXPECT_TRUE(!source.is_op() || source.op->traits.view == ViewKind::kNone || plan.slot(o->source).view)
            << e.model << ": " << source.op->name << " copies";
      }
    }
    EXPECT_EQ(attention, 2) << e.model;
    EXPECT_EQ(steps, e.fused_steps) << e.model;
    const ExecutionPlan apart = make_execution_plan(g, unfused);
    EXPECT_EQ(std::count_if(apart.tasks.begin(), apart.tasks.end(), [](const Task& t) { return !step_is_free(t); }),
              e.unfused_steps)
        << e.model;
  }
}

TEST(ModelPlans, SqueezeNetsFireModulesConcatenateInPlace) {
  // Each fire module's two expand convolutions write their halves straight
  // into the concatenation's bytes: no concatenation runs.
  const Graph g = import_bundled("squeezenet1_1");
  const ExecutionPlan plan = make_execution_plan(g);
  int concats = 0, running = 0;
  for (const Task& t : plan.tasks)
    if (g.node(t.root()).op->name == "concat") {
      ++concats;
      running += !step_is_free(t);
    }
  EXPECT_EQ(concats, 8);
  EXPECT_EQ(running, 0);
}

// At bf16 (runtime/precision.h) a bundled model's plan runs the same steps
// as at fp32 without the fused attention step (its kernel is float32 only:
// at bf16 attention runs as its products, scale, mask and softmax), its
// views and in-place placements hold at 2 bytes per element too, every
// float value is stored in bfloat16 and the arena and weights take half the
// bytes, up to the 256-byte alignment of each value.
TEST(ModelPlans, AtBf16TheSameStepsTakeHalfTheBytes) {
  for (const char* model : {"vit_tiny", "squeezenet1_1", "bert_tiny", "llama_tiny"}) {
    const Graph g = import_bundled(model);
    PlanOptions unfused_attention;
    unfused_attention.attention = false;
    const ExecutionPlan fp32 = make_execution_plan(g, unfused_attention);
    PlanOptions options;
    options.precision = Precision::kBf16;
    const ExecutionPlan bf16 = make_execution_plan(g, options);
    EXPECT_EQ(step_counts(g, bf16), step_counts(g, fp32)) << model;
    const auto attention_steps = [&](const ExecutionPlan& plan) {
      return std::count_if(plan.tasks.begin(), plan.tasks.end(),
                           [](const Task& t) { return t.kind == Task::Kind::kAttention; });
    };
    EXPECT_EQ(attention_steps(bf16), 0) << model;
    const int64_t slack = 256 * static_cast<int64_t>(g.nodes().size());
    EXPECT_LE(bf16.arena_bytes, fp32.arena_bytes / 2 + slack) << model;
    EXPECT_LE(bf16.weight_bytes, fp32.weight_bytes / 2 + slack) << model;
    EXPECT_LT(bf16.weight_bytes, fp32.weight_bytes) << model;
    for (size_t i = 0; i < g.nodes().size(); ++i)
      for (size_t k = 0; k < bf16.slots[i].size(); ++k) {
        const ValueSlot& s = bf16.slots[i][k];
        if (s.home == ValueSlot::Home::kNone) continue;
        const DType t = g.nodes()[i].output_dtypes[k];
        EXPECT_EQ(s.storage, t == DType::kFloat ? DType::kBFloat16 : t) << model << " node " << i;
      }
  }
}

}  // namespace
}  // namespace tgr
