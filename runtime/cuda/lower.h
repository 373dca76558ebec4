// Lowering: each task of the execution plan becomes a Step, a closure that
// enqueues its kernels (or cuBLAS/cuDNN calls) on the model's stream, with
// every device pointer resolved at load. One file per operator family.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/cuda/ew_compile.h"
#include "runtime/cuda/gpu_context.h"
#include "runtime/cuda/gpu_error.h"
#include "runtime/cuda/gpu_model.h"
#include "runtime/cuda/kernels.h"
#include "runtime/execution_plan.h"

namespace tgr::gpu {

// kF16 for float16, kBF16 for bfloat16, kF32 for every other type.
FloatType float_type_of(DType storage);
// The CUDA library type of a float storage type (CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF).
cudaDataType_t cuda_data_type(FloatType t);
// cuBLAS's compute type for products at `precision` (float32 accumulation;
// CUBLAS_COMPUTE_32F_FAST_TF32 at tf32).
cublasComputeType_t cublas_compute_type(Precision precision);

struct Step {
  std::string label;  // task_label: "conv2d+add+relu"
  int node = -1;      // the task's last node
  std::function<void()> run;
};

struct LowerCtx {
  const Graph& graph;
  const ExecutionPlan& plan;
  GpuContext& gpu;
  char* arena = nullptr;
  char* weights = nullptr;
  size_t conv_workspace_limit = 0;
  ConvChoice conv_choice = ConvChoice::kFaster;
  bool compile_elementwise = true;
  // Counted as programs are lowered: compiled ones and interpreted ones.
  int* compiled_programs = nullptr;
  int* interpreted_programs = nullptr;

  // The launcher of an elementwise program (ew_compile.h), counted.
  EwLauncher elementwise_launcher(const EwProgram& program, bool int64_program) const;
  void* ptr(ValueRef v) const;
  // Element strides of a value as the plan stores it (row-major unless a strided view).
  Strides strides(ValueRef v) const;
  bool row_major(ValueRef v) const { return plan.slot(v).strides.empty(); }
  Where where(int32_t node) const;
  const Shape& shape(ValueRef v) const { return graph.shape(v); }
  DType dtype(ValueRef v) const { return graph.dtype(v); }
  // The element type of `v` on the device (runtime/precision.h) and its bytes.
  DType storage(ValueRef v) const { return plan.slot(v).storage; }
  int element_bytes(ValueRef v) const { return static_cast<int>(device_element_bytes(storage(v))); }
  // How a float value is stored (float32 for an integer value: callers check).
  FloatType float_type(ValueRef v) const { return float_type_of(storage(v)); }
  Precision precision() const { return plan.precision; }
};

// `us` microseconds in clock cycles of GPU 0 (launch_delay's unit).
int64_t delay_cycles(double us, const Where& where);

// Milliseconds of one run of `f` (its launches on `stream`): the median of
// 9 runs after 3 warm-ups, by CUDA events, each run enqueued behind a delay
// kernel so that the time is the GPU's, not the host's (as in the model's
// CUDA graph): a choice made once at load should not hang on one slow run,
// on clocks still rising, or on host overhead the graph never pays. For choosing between
// implementations of one step at load (cuDNN's and cuBLASLt's algorithms,
// the runtime's own kernels).
double time_launches_ms(const std::function<void()>& f, cudaStream_t stream, const Where& where);

// Dims of a shape (rank <= kMaxRank; a scalar is rank 0 with one element).
Dims dims_of(const Shape& shape);
// Row-major strides of `shape`, and the strides of `in` broadcast (NumPy) to `out`.
Strides row_major(const Shape& shape);
EwInput broadcast_input(const void* data, const Shape& in, const Shape& out);
// A value (maybe a strided view) read broadcast to `out`.
EwInput view_input(const LowerCtx& ctx, ValueRef v, const Shape& out);

Step lower_task(const LowerCtx& ctx, const Task& task, size_t task_index);

// The lowering registry (lower.cpp, a switch over OpKind), queryable
// without a GPU. The family that lowers an operator: "elementwise" (a fused
// program), "conv", "matmul", "layout", "index", "normalization"; "" when
// none does.
std::string lowering_family(OpKind kind);
// The table's operators the GPU runtime lowers, in table order.
std::vector<std::string> lowered_ops();
// The table's operators it deliberately does not lower: (name, why).
const std::vector<std::pair<std::string, std::string>>& unlowered_ops();
// Operators with an instruction sequence in the elementwise program
// (lower_elementwise.cpp).
bool lowers_in_elementwise_program(OpKind kind);
// Rewrites a program as lowered (lower_elementwise.cpp): GELU's erf chain
// becomes one kGelu instruction, instructions and inputs the result does not
// read are dropped, registers are renumbered densely and counted.
void simplify_program(EwProgram& p);

// Families (lower_*.cpp); each handles the tasks of its operators.
std::function<void()> lower_elementwise(const LowerCtx& ctx, const Task& task);
std::function<void()> lower_conv(const LowerCtx& ctx, const Task& task, void* scratch);
std::function<void()> lower_matmul(const LowerCtx& ctx, int32_t node);
std::function<void()> lower_product(const LowerCtx& ctx, const Task& task);  // cuBLAS(Lt) with alpha, an epilogue
std::function<void()> lower_attention(const LowerCtx& ctx, const Task& task);  // lower_attention.cpp
std::function<void()> lower_layout(const LowerCtx& ctx, int32_t node);
std::function<void()> lower_index(const LowerCtx& ctx, int32_t node);
std::function<void()> lower_normalization(const LowerCtx& ctx, int32_t node);

}  // namespace tgr::gpu
