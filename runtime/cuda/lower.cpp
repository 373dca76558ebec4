#include "runtime/cuda/lower.h"

#include <algorithm>
#include <map>
#include <vector>

namespace tgr::gpu {

void* LowerCtx::ptr(ValueRef v) const {
  const ValueSlot& s = plan.slot(v);
  switch (s.home) {
    case ValueSlot::Home::kInput:
    case ValueSlot::Home::kArena: return arena + s.offset;
    case ValueSlot::Home::kConstant: return weights + s.offset;
    case ValueSlot::Home::kNone: break;
  }
  fail(where(v.node), "value " + std::to_string(v.output) + " has no place in the memory plan");
}

EwLauncher LowerCtx::elementwise_launcher(const EwProgram& program, bool int64_program) const {
  EwLauncher launcher(program, int64_program, compile_elementwise);
  int* count = launcher.compiled() ? compiled_programs : interpreted_programs;
  if (count) ++*count;
  return launcher;
}

Strides LowerCtx::strides(ValueRef v) const {
  const ValueSlot& s = plan.slot(v);
  if (s.strides.empty()) return gpu::row_major(shape(v));
  Strides out;
  for (size_t d = 0; d < s.strides.size(); ++d) out.s[d] = s.strides[d];
  return out;
}

FloatType float_type_of(DType storage) {
  if (storage == DType::kFloat16) return FloatType::kF16;
  if (storage == DType::kBFloat16) return FloatType::kBF16;
  return FloatType::kF32;
}

cudaDataType_t cuda_data_type(FloatType t) {
  switch (t) {
    case FloatType::kF16:
      return CUDA_R_16F;
    case FloatType::kBF16:
      return CUDA_R_16BF;
    case FloatType::kF32:
      break;
  }
  return CUDA_R_32F;
}

cublasComputeType_t cublas_compute_type(Precision precision) {
  return allows_tf32(precision) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

int64_t delay_cycles(double us, const Where& where) {
  int clock_khz = 0;
  TGR_GPU_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0), where);
  return static_cast<int64_t>(clock_khz * us / 1000.0);
}

double time_launches_ms(const std::function<void()>& f, cudaStream_t stream, const Where& where) {
  cudaEvent_t start = nullptr, stop = nullptr;
  TGR_GPU_CHECK(cudaEventCreate(&start), where);
  TGR_GPU_CHECK(cudaEventCreate(&stop), where);
  // 200 us of spinning: longer than the host takes to enqueue one run.
  const int64_t delay = delay_cycles(200, where);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> times;
  for (int i = 0; i < 9; ++i) {
    // The GPU spins while the host enqueues the events and the run, so the
    // time between the events is the GPU's alone, as in the model's CUDA
    // graph; without it, an implementation with a slow host side (cuDNN's
    // fused call spends tens of microseconds there) looked slow.
    launch_delay(delay, stream);
    TGR_GPU_CHECK(cudaEventRecord(start, stream), where);
    f();
    TGR_GPU_CHECK(cudaEventRecord(stop, stream), where);
    TGR_GPU_CHECK(cudaEventSynchronize(stop), where);
    float ms = 0;
    TGR_GPU_CHECK(cudaEventElapsedTime(&ms, start, stop), where);
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[4];
}

Where LowerCtx::where(int32_t node) const {
  const Node& n = graph.node(node);
  return Where{n.is_op() ? n.op->name : "value", node, n.name};
}

Dims dims_of(const Shape& shape) {
  if (shape.size() > static_cast<size_t>(kMaxRank))
    throw GpuError("rank " + std::to_string(shape.size()) + " is above the GPU runtime's limit of 8");
  Dims d;
  d.rank = static_cast<int>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) d.size[i] = shape[i];
  return d;
}

Strides row_major(const Shape& shape) {
  Strides s;
  int64_t st = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    s.s[i] = st;
    st *= shape[i];
  }
  return s;
}

EwInput broadcast_input(const void* data, const Shape& in, const Shape& out) {
  EwInput e;
  e.data = data;
  e.contiguous = in == out;
  const int off = static_cast<int>(out.size()) - static_cast<int>(in.size());
  int64_t st = 1;
  for (int i = static_cast<int>(in.size()) - 1; i >= 0; --i) {
    e.strides.s[off + i] = in[i] == 1 ? 0 : st;
    st *= in[i];
  }
  return e;
}

EwInput view_input(const LowerCtx& ctx, ValueRef v, const Shape& out) {
  const Shape& in = ctx.shape(v);
  if (ctx.row_major(v)) return broadcast_input(ctx.ptr(v), in, out);
  const Strides st = ctx.strides(v);
  EwInput e;
  e.data = ctx.ptr(v);
  e.contiguous = false;
  const int off = static_cast<int>(out.size()) - static_cast<int>(in.size());
  for (size_t i = 0; i < in.size(); ++i) e.strides.s[off + static_cast<int>(i)] = in[i] == 1 ? 0 : st.s[i];
  return e;
}

namespace {

// How the GPU runtime runs an operator of the table (gpu_lowering).
using NodeLowering = std::function<void()> (*)(const LowerCtx& ctx, int32_t node);
struct GpuLowering {
  const char* family = "";          // lowering_family's answer; "" when nothing lowers it
  NodeLowering node = nullptr;      // the family function for tasks of one node (Task::Kind::kNode)
  const char* unlowered = nullptr;  // why it is deliberately not lowered (unlowered_ops)
};

// The GPU lowering registry, one case per kind without a default: an
// operator added to ir/op_list.def is a -Wswitch error here until it says
// how (or why not) the GPU runs it. Operators of fused tasks (elementwise
// programs, conv2d) have no node function: lower_task lowers their tasks.
GpuLowering gpu_lowering(OpKind kind) {
  switch (kind) {
    // lower_matmul.cpp: cuBLAS
    case OpKind::kMatmul:
    case OpKind::kBatchMatmul:
      return {"matmul", lower_matmul};
    // lower_layout.cpp: strided copies (OpTraits::strided_copy)
    case OpKind::kTranspose:
    case OpKind::kSlice:
    case OpKind::kExpand:
    case OpKind::kPad:
    case OpKind::kEnlarge:
    case OpKind::kConcat:
    case OpKind::kSplit:
    case OpKind::kReshape:
      return {"layout", lower_layout};
    // lower_index.cpp
    case OpKind::kGather:
    case OpKind::kGatherElements:
      return {"index", lower_index};
    // lower_normalization.cpp: own kernels
    case OpKind::kSoftmax:
    case OpKind::kLayerNorm:
    case OpKind::kReduceSum:
    case OpKind::kReduceMean:
    case OpKind::kReduceMax:
    case OpKind::kReduceMin:
    case OpKind::kAvgpool:
    case OpKind::kMaxpool:
      return {"normalization", lower_normalization};
    // conv tasks (execution_plan.cpp), lower_conv.cpp
    case OpKind::kConv2d:
      return {"conv"};
    // lower_elementwise.cpp: fused programs (its ew_lowering says how)
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kPow:
    case OpKind::kScalarMul:
    case OpKind::kNeg:
    case OpKind::kRelu:
    case OpKind::kSigmoid:
    case OpKind::kTanh:
    case OpKind::kAbs:
    case OpKind::kSqrt:
    case OpKind::kExp:
    case OpKind::kLog:
    case OpKind::kErf:
    case OpKind::kCos:
    case OpKind::kSin:
    case OpKind::kLeakyRelu:
    case OpKind::kHardSigmoid:
    case OpKind::kHardSwish:
    case OpKind::kSoftplus:
    case OpKind::kFloor:
    case OpKind::kCeil:
    case OpKind::kClip:
    case OpKind::kEqual:
    case OpKind::kLess:
    case OpKind::kGreater:
    case OpKind::kLessEqual:
    case OpKind::kGreaterEqual:
    case OpKind::kIsNan:
    case OpKind::kLogicalNot:
    case OpKind::kCast:
    case OpKind::kWhere:
    case OpKind::kBatchNorm:
      return {"elementwise"};
    // Constant operators have no inputs, so the plan computes them at load on
    // the CPU (execution_plan.cpp folds every node whose inputs are all
    // known); no kernel ever runs them.
    case OpKind::kEye:
    case OpKind::kConvIdentity:
    case OpKind::kPoolKernel:
    case OpKind::kOnes:
      return {"", nullptr, "constant: computed at load"};
    case OpKind::kOpaque:
      return {};  // no semantics to lower (onnx/opaque_op.h)
  }
  return {};  // not an OpKind value
}

}  // namespace

std::string lowering_family(OpKind kind) { return gpu_lowering(kind).family; }

std::vector<std::string> lowered_ops() {
  std::vector<std::string> names;
  for (const OpDef* op : OpTable::instance().all())
    if (!lowering_family(op->kind).empty()) names.push_back(op->name);
  return names;
}

const std::vector<std::pair<std::string, std::string>>& unlowered_ops() {
  static const std::vector<std::pair<std::string, std::string>> list = [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const OpDef* op : OpTable::instance().all())
      if (const char* why = gpu_lowering(op->kind).unlowered) out.emplace_back(op->name, why);
    return out;
  }();
  return list;
}

Step lower_task(const LowerCtx& ctx, const Task& task, size_t task_index) {
  Step step;
  step.label = task_label(ctx.graph, task);
  step.node = task.root();
  const Node& n = ctx.graph.node(task.root());
  switch (task.kind) {
    case Task::Kind::kAlias: return step;  // no work: the same bytes
    case Task::Kind::kElementwise: step.run = lower_elementwise(ctx, task); return step;
    case Task::Kind::kConv: {
      const int64_t off = ctx.plan.scratch_offsets.at(task_index);
      step.run = lower_conv(ctx, task, off >= 0 ? ctx.arena + off : nullptr);
      return step;
    }
    case Task::Kind::kProduct:
      step.run = lower_product(ctx, task);
      return step;
    case Task::Kind::kAttention:
      step.run = lower_attention(ctx, task);
      return step;
    case Task::Kind::kNode: break;
  }
  const NodeLowering lower_node = gpu_lowering(n.op->kind).node;
  if (lower_node == nullptr) fail(ctx.where(task.root()), "operator not supported by the GPU runtime");
  step.run = lower_node(ctx, task.root());
  return step;
}

}  // namespace tgr::gpu
