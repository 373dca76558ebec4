// conv2d on cuDNN (NCHW, groups, stride, dilation), in the storage type of
// the plan's precision (runtime/precision.h): float32 with FMA math (no
// TF32) at fp32; float32 with tensor-op math (TF32) at tf32; float16 or
// bfloat16 data with float32 accumulation and tensor-op math at fp16 and
// bf16 (NCHW: cuDNN transforms to its tensor cores' layout inside the
// call; the runtime keeps NCHW throughout). With the bias, residual and relu of its task fused through
// cudnnConvolutionBiasActivationForward where the task ends in relu. The
// algorithm is chosen by measurement (every algorithm cudnnFindConvolution-
// ForwardAlgorithm lists, timed as the step runs it) once per
// convolution signature and epilogue, and kept in the process's
// KernelChoices (runtime/kernel_choices.h), which tools seed from and store
// to their database, so a choice is timed once per device. 1x1
// convolutions may run on cuBLAS and depthwise ones on the runtime's own
// kernel instead (kernels_conv.cu), where that measured faster at load. Asymmetric
// padding (cuDNN pads symmetrically) is applied by copying the input into a
// zeroed, padded scratch buffer first.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "ir/geometry.h"
#include "runtime/cuda/lower.h"
#include "runtime/kernel_choices.h"

namespace tgr::gpu {
namespace {

struct ConvDescs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;       // relu
  cudnnActivationDescriptor_t identity = nullptr;  // a bias alone (implicit precomputed GEMM only)
  ~ConvDescs() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (bias) cudnnDestroyTensorDescriptor(bias);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (act) cudnnDestroyActivationDescriptor(act);
    if (identity) cudnnDestroyActivationDescriptor(identity);
  }
};

struct AlgoChoice {
  cudnnConvolutionFwdAlgo_t algo{};
  size_t workspace = 0;
};

std::mutex cache_mutex;
// cuDNN's algorithms per convolution signature (FMA math, within the
// workspace limit), and the one timed fastest per signature and epilogue.
std::map<std::string, std::vector<AlgoChoice>>& algo_cache() {
  static std::map<std::string, std::vector<AlgoChoice>> cache;
  return cache;
}
struct TimedAlgo {
  AlgoChoice choice;
  double ms = 0;  // its time as the step runs it
};

int to_int(int64_t v) { return static_cast<int>(v); }

// TGR_GPU_LOG_CHOICES=1: each timed choice of implementation goes to stderr
// (docs/gpu.md), to see why two loads of one model differ.
bool log_choices() {
  static const bool on = [] {
    const char* v = std::getenv("TGR_GPU_LOG_CHOICES");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

// With TGR_GPU_LOG_CHOICES: a choice read back (from the database, or timed
// earlier in this process) is logged once per process, not at every load.
void log_stored_choice(const std::string& line) {
  static std::mutex mutex;
  static std::set<std::string> logged;
  std::lock_guard<std::mutex> lock(mutex);
  if (logged.insert(line).second) std::fprintf(stderr, "%s\n", line.c_str());
}

// The timed choices (runtime/kernel_choices.h), per signature and epilogue:
// "conv-algo KEY", cuDNN's fastest algorithm; "conv-other KEY", whether the
// other implementation (cuBLAS for 1x1, the depthwise kernel) beat it. A
// stored algorithm whose workspace exceeds this load's limit is timed again.
std::optional<TimedAlgo> stored_algo(const std::string& choice_key, size_t workspace_limit) {
  const std::optional<std::string> text = KernelChoices::process().find("conv-algo " + choice_key);
  const std::optional<TimedChoice> c = text ? TimedChoice::parse(*text) : std::nullopt;
  if (!c || c->implementation < 0 || c->implementation >= CUDNN_CONVOLUTION_FWD_ALGO_COUNT ||
      static_cast<size_t>(c->workspace) > workspace_limit)
    return std::nullopt;
  return TimedAlgo{{static_cast<cudnnConvolutionFwdAlgo_t>(c->implementation), static_cast<size_t>(c->workspace)},
                   c->ms};
}

// The task's activation as the kernels take it: relu, or the plan's clip or
// SiLU (Task::activation).
ConvActivation activation_of(const Task& task) {
  ConvActivation act;
  if (task.relu) act.kind = ConvActivation::kRelu;
  if (task.activation == Task::Activation::kClip) {
    act.kind = ConvActivation::kClip;
    act.lo = static_cast<float>(task.clip_min);
    act.hi = static_cast<float>(task.clip_max);
  }
  if (task.activation == Task::Activation::kSilu) act.kind = ConvActivation::kSilu;
  return act;
}

// ",r", ",c0:6", ",s": the activation in a choice's key (kernel_choices.h).
std::string activation_key(const ConvActivation& act) {
  switch (act.kind) {
    case ConvActivation::kRelu:
      return ",r";
    case ConvActivation::kClip: {
      char text[64];
      std::snprintf(text, sizeof text, ",c%g:%g", act.lo, act.hi);
      return text;
    }
    case ConvActivation::kSilu:
      return ",s";
    default:
      return "";
  }
}

// y = act(y [+ bias[c]] [+ residual]), in place; every operand of `type`.
EwProgram epilogue_program(void* y, const Shape& ys, const void* bias, const void* residual, ConvActivation act,
                           FloatType type) {
  EwProgram p;
  p.out = dims_of(ys);
  p.out_type = type;
  p.in[p.inputs++] = broadcast_input(y, ys, ys);
  int bias_reg = -1, residual_reg = -1;
  if (bias) {
    bias_reg = p.inputs;
    EwInput& b = p.in[p.inputs++];
    b.data = bias;
    b.strides.s[1] = 1;
  }
  if (residual) {
    residual_reg = p.inputs;
    p.in[p.inputs++] = broadcast_input(residual, ys, ys);
  }
  for (int k = 0; k < p.inputs; ++k) p.in[k].type = type;
  uint8_t r = 0, next = static_cast<uint8_t>(p.inputs);
  auto emit = [&](EwOp op, uint8_t a, uint8_t b, float p0 = 0, float p1 = 0) {
    p.code[p.instrs++] = EwInstr{op, next, a, b, 0, p0, p1};
    r = next++;
  };
  if (bias_reg >= 0) emit(EwOp::kAdd, r, static_cast<uint8_t>(bias_reg));
  if (residual_reg >= 0) emit(EwOp::kAdd, r, static_cast<uint8_t>(residual_reg));
  if (act.kind == ConvActivation::kRelu) emit(EwOp::kRelu, r, 0);
  if (act.kind == ConvActivation::kClip) emit(EwOp::kClip, r, 0, act.lo, act.hi);
  if (act.kind == ConvActivation::kSilu) {
    const uint8_t x = r;
    emit(EwOp::kSigmoid, x, 0);
    emit(EwOp::kMul, x, r);
  }
  p.result = r;
  return p;
}

// cuDNN's data type of a float storage type.
cudnnDataType_t cudnn_data_type(FloatType t) {
  switch (t) {
    case FloatType::kF16:
      return CUDNN_DATA_HALF;
    case FloatType::kBF16:
      return CUDNN_DATA_BFLOAT16;
    case FloatType::kF32:
      break;
  }
  return CUDNN_DATA_FLOAT;
}

// The math cuDNN may use at `precision`: FMA (no TF32) at fp32, tensor ops otherwise.
cudnnMathType_t conv_math(Precision precision) {
  return precision == Precision::kFp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
}

// cuDNN's descriptors of one convolution: the (padded) input, the output
// at the table's size (checked), the per-channel bias, relu and identity;
// data of `type` (the bias too), accumulation in float32.
std::shared_ptr<ConvDescs> make_descs(const Conv2dGeometry& geo, bool symmetric, int64_t ph, int64_t pw, FloatType type,
                                      Precision precision, const Where& where) {
  const cudnnDataType_t data = cudnn_data_type(type);
  const Window2d& w = geo.window;
  auto d = std::make_shared<ConvDescs>();
  TGR_GPU_CHECK(cudnnCreateTensorDescriptor(&d->x), where);
  TGR_GPU_CHECK(cudnnCreateTensorDescriptor(&d->y), where);
  TGR_GPU_CHECK(cudnnCreateTensorDescriptor(&d->bias), where);
  TGR_GPU_CHECK(cudnnCreateFilterDescriptor(&d->w), where);
  TGR_GPU_CHECK(cudnnCreateConvolutionDescriptor(&d->conv), where);
  TGR_GPU_CHECK(cudnnCreateActivationDescriptor(&d->act), where);
  TGR_GPU_CHECK(cudnnCreateActivationDescriptor(&d->identity), where);
  TGR_GPU_CHECK(cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NCHW, data, to_int(geo.batch), to_int(geo.in_channels),
                                           to_int(ph), to_int(pw)),
                where);
  TGR_GPU_CHECK(cudnnSetFilter4dDescriptor(d->w, data, CUDNN_TENSOR_NCHW, to_int(geo.out_channels),
                                           to_int(geo.in_channels_per_group()), to_int(w.kernel_h), to_int(w.kernel_w)),
                where);
  TGR_GPU_CHECK(cudnnSetConvolution2dDescriptor(d->conv, symmetric ? to_int(w.pad_top) : 0,
                                                symmetric ? to_int(w.pad_left) : 0, to_int(w.stride_h),
                                                to_int(w.stride_w), to_int(w.dilation_h), to_int(w.dilation_w),
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), where);
  TGR_GPU_CHECK(cudnnSetConvolutionGroupCount(d->conv, to_int(geo.groups)), where);
  TGR_GPU_CHECK(cudnnSetConvolutionMathType(d->conv, conv_math(precision)), where);
  int n = 0, k = 0, oh = 0, ow = 0;
  TGR_GPU_CHECK(cudnnGetConvolution2dForwardOutputDim(d->conv, d->x, d->w, &n, &k, &oh, &ow), where);
  if (oh != w.out_h || ow != w.out_w || k != geo.out_channels)
    fail(where, "cuDNN's output size differs from the operator table's");
  TGR_GPU_CHECK(cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NCHW, data, n, k, oh, ow), where);
  TGR_GPU_CHECK(cudnnSetTensor4dDescriptor(d->bias, CUDNN_TENSOR_NCHW, data, 1, k, 1, 1), where);
  TGR_GPU_CHECK(cudnnSetActivationDescriptor(d->act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0), where);
  TGR_GPU_CHECK(cudnnSetActivationDescriptor(d->identity, CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN, 0.0),
                where);
  return d;
}

// The convolution's signature as cuDNN sees it (the algorithms' cache key),
// with the precision after an '@' where it is not fp32 (choices stored
// before precisions existed are fp32's).
std::string signature_key(const Conv2dGeometry& geo, bool symmetric, int64_t ph, int64_t pw, Precision precision) {
  const Window2d& w = geo.window;
  std::string key = std::to_string(geo.batch);
  for (int64_t v : {geo.in_channels, ph, pw, geo.out_channels, geo.groups, w.kernel_h, w.kernel_w, w.stride_h, w.stride_w,
                    w.dilation_h, w.dilation_w, symmetric ? w.pad_top : 0, symmetric ? w.pad_left : 0}) {
    key += ",";
    key += std::to_string(v);
  }
  if (precision != Precision::kFp32) {
    key += '@';
    key += precision_name(precision);
  }
  return key;
}

// The algorithms cudnnFind lists for the signature (FMA math at fp32, any
// math otherwise; within the workspace limit), once per process. cudnnFind's own ranking is not
// trusted (it times one run per algorithm, the first including the load of
// its kernels): every candidate is timed as the step runs it (choose_algo).
std::vector<AlgoChoice> cudnn_candidates(const std::string& key, const ConvDescs& d, const LowerCtx& ctx,
                                         const Where& where) {
  std::lock_guard<std::mutex> lock(cache_mutex);
  auto it = algo_cache().find(key);
  if (it != algo_cache().end()) return it->second;
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  TGR_GPU_CHECK(cudnnFindConvolutionForwardAlgorithm(ctx.gpu.cudnn, d.x, d.w, d.conv, d.y,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf),
                where);
  std::vector<AlgoChoice> candidates;
  for (int i = 0; i < returned; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS &&
        (ctx.precision() != Precision::kFp32 || perf[i].mathType == CUDNN_FMA_MATH) &&
        perf[i].memory <= ctx.conv_workspace_limit)
      candidates.push_back({perf[i].algo, perf[i].memory});
  if (candidates.empty())
    fail(where, ctx.precision() == Precision::kFp32
                    ? "cuDNN offers no float32 (FMA) algorithm within the workspace limit"
                    : "cuDNN offers no algorithm within the workspace limit");
  algo_cache()[key] = candidates;
  return candidates;
}

// What a convolution step reads and writes, as its launches capture it.
struct ConvOperands {
  explicit ConvOperands(Where w) : where(std::move(w)) {}
  Where where;
  GpuContext* gpu = nullptr;
  std::shared_ptr<ConvDescs> descs;
  const void* x = nullptr;
  const void* weight = nullptr;
  void* y = nullptr;
  const void* bias = nullptr;  // the task's, or `zeros` where relu has none
  const void* residual = nullptr;
  std::shared_ptr<DeviceBuffer> zeros;  // a zero bias for the fused relu call, kept alive with the step
  bool relu = false;
  ConvActivation act;
  FloatType type = FloatType::kF32;  // of every operand
  // Asymmetric padding: the input copied into `scratch`, zeroed and padded.
  bool symmetric = true;
  void* scratch = nullptr;
  Shape xs, padded, ys;
  int64_t pad_offset = 0;
};

// A bias without relu: cuDNN's fused call takes the identity activation
// only with the implicit precomputed GEMM, so that algorithm runs it in one
// launch (a candidate timed like the others), and every other one adds the
// bias in a second launch.
void run_conv_bias(const ConvOperands& o, AlgoChoice choice, const void* input, void* ws, size_t ws_bytes) {
  const ConvDescs& d = *o.descs;
  const float one = 1.f, zero = 0.f;
  cudnnHandle_t cudnn = o.gpu->cudnn;
  if (o.bias && choice.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) {
    const cudnnStatus_t fused =
        cudnnConvolutionBiasActivationForward(cudnn, &one, d.x, input, d.w, o.weight, d.conv, choice.algo, ws, ws_bytes,
                                              &zero, d.y, o.y, d.bias, o.bias, d.identity, d.y, o.y);
    if (fused != CUDNN_STATUS_NOT_SUPPORTED) {
      check(fused, "cudnnConvolutionBiasActivationForward", o.where);
      return;
    }
  }
  TGR_GPU_CHECK(cudnnConvolutionForward(cudnn, &one, d.x, input, d.w, o.weight, d.conv, choice.algo, ws, ws_bytes,
                                        &zero, d.y, o.y),
                o.where);
  if (o.bias) TGR_GPU_CHECK(cudnnAddTensor(cudnn, &one, d.bias, o.bias, &one, d.y, o.y), o.where);
}

// The step on cuDNN with algorithm `choice`: relu (with the bias and
// residual) in cuDNN's fused call, falling back to an elementwise epilogue
// where cuDNN refuses it for the algorithm; a clip or SiLU (never with a
// residual; the fused call takes relu only) as the bias and activation in
// one elementwise launch after the convolution.
std::function<void()> cudnn_step(const ConvOperands& o, AlgoChoice choice, const EwLauncher& relu_epilogue,
                                 const std::optional<EwLauncher>& activation_epilogue) {
  return [=] {
    const ConvDescs& d = *o.descs;
    GpuContext* gpu = o.gpu;
    const void* input = o.x;
    if (!o.symmetric) {
      const int eb = float_type_bytes(o.type);
      if (eb == 2) launch_fill_16(o.scratch, num_elements(o.padded), 0, gpu->stream);  // +0 in both half types
      else launch_fill(o.scratch, num_elements(o.padded), 0.0, eb, gpu->stream);
      launch_strided_copy(o.x, 0, row_major(o.xs), o.scratch, o.pad_offset, row_major(o.padded), dims_of(o.xs), eb,
                          gpu->stream);
      check_launch("padding copy", o.where);
      input = o.scratch;
    }
    const float one = 1.f, zero = 0.f, alpha2 = o.residual ? 1.f : 0.f;
    void* ws = gpu->conv_workspace.data();
    const size_t ws_bytes = gpu->conv_workspace.bytes();
    if (activation_epilogue) {
      TGR_GPU_CHECK(cudnnConvolutionForward(gpu->cudnn, &one, d.x, input, d.w, o.weight, d.conv, choice.algo, ws,
                                            ws_bytes, &zero, d.y, o.y),
                    o.where);
      activation_epilogue->launch(o.y, gpu->stream);
      check_launch("conv epilogue", o.where);
    } else if (o.relu) {
      const cudnnStatus_t fused = cudnnConvolutionBiasActivationForward(
          gpu->cudnn, &one, d.x, input, d.w, o.weight, d.conv, choice.algo, ws, ws_bytes, &alpha2, d.y,
          o.residual ? o.residual : o.y, d.bias, o.bias, d.act, d.y, o.y);
      if (fused == CUDNN_STATUS_NOT_SUPPORTED) {
        TGR_GPU_CHECK(cudnnConvolutionForward(gpu->cudnn, &one, d.x, input, d.w, o.weight, d.conv, choice.algo, ws,
                                              ws_bytes, &zero, d.y, o.y),
                      o.where);
        relu_epilogue.launch(o.y, gpu->stream);
        check_launch("conv epilogue", o.where);
      } else {
        check(fused, "cudnnConvolutionBiasActivationForward", o.where);
      }
    } else {
      run_conv_bias(o, choice, input, ws, ws_bytes);
    }
  };
}

// A 1x1 convolution with unit stride and no padding as a matrix product per
// image (Y[K, HW] = W[K, C] X[C, HW] on cuBLAS), then one elementwise epilogue.
std::function<void()> pointwise_step(const ConvOperands& o, const Conv2dGeometry& geo, const LowerCtx& ctx) {
  const bool has_epilogue = o.bias || o.residual || o.act.kind != ConvActivation::kNone;
  const EwLauncher epilogue =
      ctx.elementwise_launcher(epilogue_program(o.y, o.ys, o.bias, o.residual, o.act, o.type), false);
  const int hw = to_int(geo.window.out_h * geo.window.out_w), cin = to_int(geo.in_channels);
  const int kout = to_int(geo.out_channels), batch = to_int(geo.batch);
  const cudaDataType_t type = cuda_data_type(o.type);
  const cublasComputeType_t compute = cublas_compute_type(ctx.precision());
  return [=] {
    const float one = 1.f, zero = 0.f;
    TGR_GPU_CHECK(cublasGemmStridedBatchedEx(o.gpu->cublas, CUBLAS_OP_N, CUBLAS_OP_N, hw, kout, cin, &one, o.x, type,
                                             hw, int64_t{cin} * hw, o.weight, type, cin, 0, &zero, o.y, type, hw,
                                             int64_t{kout} * hw, batch, compute, CUBLAS_GEMM_DEFAULT),
                  o.where);
    if (has_epilogue) {
      epilogue.launch(o.y, o.gpu->stream);
      check_launch("conv epilogue", o.where);
    }
  };
}

// A depthwise convolution on the runtime's own kernel (bias, residual and
// activation inside; it pads, symmetrically or not, as it loads).
std::function<void()> depthwise_step(const ConvOperands& o, const DepthwiseGeometry& dw) {
  return [=] {
    launch_depthwise_conv(o.x, o.weight, o.bias, o.residual, o.y, dw, o.act, o.type, o.gpu->stream);
    check_launch("depthwise conv", o.where);
  };
}

DepthwiseGeometry depthwise_geometry(const Conv2dGeometry& geo) {
  const Window2d& w = geo.window;
  DepthwiseGeometry dw;
  dw.planes = geo.batch * geo.in_channels;
  dw.channels = geo.in_channels;
  dw.in_h = w.in_h, dw.in_w = w.in_w, dw.out_h = w.out_h, dw.out_w = w.out_w;
  dw.kernel = w.kernel_h, dw.stride = w.stride_h, dw.pad_top = w.pad_top, dw.pad_left = w.pad_left;
  return dw;
}

bool is_pointwise(const Conv2dGeometry& geo) {
  const Window2d& w = geo.window;
  return w.kernel_h == 1 && w.kernel_w == 1 && w.stride_h == 1 && w.stride_w == 1 && w.dilation_h == 1 &&
         w.dilation_w == 1 && w.pad_top == 0 && w.pad_left == 0 && w.pad_bottom == 0 && w.pad_right == 0 &&
         geo.groups == 1;
}

bool is_depthwise(const Conv2dGeometry& geo, const DepthwiseGeometry& dw) {
  const Window2d& w = geo.window;
  return geo.groups == geo.in_channels && geo.out_channels == geo.in_channels && w.kernel_h == w.kernel_w &&
         w.stride_h == w.stride_w && w.dilation_h == 1 && w.dilation_w == 1 && depthwise_kernel_fits(dw);
}

// cuDNN's algorithm for the step: the stored one, or every candidate timed
// when there is a choice to make (between them, or against the other
// implementation), the fastest kept per signature and epilogue
// (KernelChoices::process()).
TimedAlgo choose_algo(const std::vector<AlgoChoice>& candidates, const std::optional<TimedAlgo>& stored,
                      bool compare_other, const std::string& choice_key,
                      const std::function<std::function<void()>(AlgoChoice)>& step_with, GpuContext* gpu,
                      const Where& where) {
  if (stored) {
    if (log_choices())
      log_stored_choice("conv " + choice_key + ": stored algo " +
                        std::to_string(static_cast<int>(stored->choice.algo)));
    return *stored;
  }
  TimedAlgo cudnn{candidates.front(), 0};
  if (candidates.size() <= 1 && !compare_other) return cudnn;
  // A workspace for timing (the model's is sized to the chosen algorithms once all steps are lowered).
  size_t most = 0;
  for (const AlgoChoice& a : candidates) most = std::max(most, a.workspace);
  if (gpu->conv_workspace.bytes() < most) gpu->conv_workspace = DeviceBuffer(most, "convolution workspace");
  std::string log;
  for (const AlgoChoice& a : candidates) {
    const double ms = time_launches_ms(step_with(a), gpu->stream, where);
    if (&a == &candidates.front() || ms < cudnn.ms) cudnn = {a, ms};
    if (log_choices())
      log += " algo " + std::to_string(static_cast<int>(a.algo)) + " " + std::to_string(ms * 1e3) + " us;";
  }
  if (log_choices())
    std::fprintf(stderr, "conv %s: %s chosen algo %d\n", choice_key.c_str(), log.c_str(),
                 static_cast<int>(cudnn.choice.algo));
  KernelChoices::process().put(
      "conv-algo " + choice_key,
      TimedChoice{cudnn.choice.algo, static_cast<int64_t>(cudnn.choice.workspace), cudnn.ms}.to_text());
  return cudnn;
}

// cuDNN's step or the other implementation, whichever the stored choice
// says or, without one, whichever times faster here (then stored).
std::function<void()> faster_of(const std::function<void()>& via_cudnn, double cudnn_ms,
                                const std::function<void()>& other, bool pointwise, const std::string& choice_key,
                                GpuContext* gpu, const Where& where) {
  const std::string other_key = "conv-other " + choice_key;
  if (const std::optional<std::string> text = KernelChoices::process().find(other_key)) {
    if (const std::optional<TimedChoice> won = TimedChoice::parse(*text)) {
      if (log_choices())
        log_stored_choice("conv " + choice_key + ": stored " +
                          (won->implementation ? (pointwise ? "cuBLAS" : "depthwise kernel") : "cuDNN"));
      return won->implementation ? other : via_cudnn;
    }
  }
  const double other_ms = time_launches_ms(other, gpu->stream, where);
  if (log_choices())
    std::fprintf(stderr, "conv %s: %s %.2f us against cuDNN's %.2f us\n", choice_key.c_str(),
                 pointwise ? "cuBLAS" : "depthwise kernel", other_ms * 1e3, cudnn_ms * 1e3);
  const bool other_wins = other_ms < cudnn_ms;
  KernelChoices::process().put(other_key, TimedChoice{other_wins ? 1 : 0, 0, other_ms}.to_text());
  return other_wins ? other : via_cudnn;
}

// The operands of the task's convolution; a zero bias where relu has none
// (cuDNN's fused call needs one).
ConvOperands conv_operands(const LowerCtx& ctx, const Task& task, const Conv2dGeometry& geo, bool symmetric, int64_t ph,
                           int64_t pw, void* scratch) {
  const Graph& g = ctx.graph;
  const Node& conv = g.node(task.nodes[0]);
  const Window2d& w = geo.window;
  ConvOperands o(ctx.where(task.nodes[0]));
  o.gpu = &ctx.gpu;
  o.type = ctx.float_type(conv.inputs[0]);
  for (ValueRef v : {conv.inputs[1], ValueRef{task.root(), 0}})
    if (ctx.float_type(v) != o.type) fail(o.where, "the convolution's operands are stored in different types");
  o.descs = make_descs(geo, symmetric, ph, pw, o.type, ctx.precision(), o.where);
  o.x = ctx.ptr(conv.inputs[0]);
  o.weight = ctx.ptr(conv.inputs[1]);
  o.y = ctx.ptr({task.root(), 0});
  o.bias = task.bias ? ctx.ptr(*task.bias) : nullptr;
  o.residual = task.residual ? ctx.ptr(*task.residual) : nullptr;
  o.relu = task.relu;
  o.act = activation_of(task);
  if (o.relu && !o.bias) {
    o.zeros = std::make_shared<DeviceBuffer>(static_cast<size_t>(geo.out_channels) * float_type_bytes(o.type),
                                             "conv zero bias");  // zero bits: +0 in every float type
    TGR_GPU_CHECK(cudaMemset(o.zeros->data(), 0, o.zeros->bytes()), o.where);
    o.bias = o.zeros->data();
  }
  o.symmetric = symmetric;
  o.scratch = scratch;
  o.xs = g.shape(conv.inputs[0]);
  o.padded = Shape{geo.batch, geo.in_channels, ph, pw};
  o.pad_offset = w.pad_top * pw + w.pad_left;
  o.ys = g.node(task.root()).output_shapes[0];
  return o;
}

}  // namespace

std::function<void()> lower_conv(const LowerCtx& ctx, const Task& task, void* scratch) {
  const Graph& g = ctx.graph;
  const Node& conv = g.node(task.nodes[0]);
  const Where where = ctx.where(task.nodes[0]);
  const Conv2dGeometry geo = conv2d_geometry(conv.params, g.shape(conv.inputs[0]), g.shape(conv.inputs[1]));
  const Window2d& w = geo.window;
  const bool symmetric = w.pad_top == w.pad_bottom && w.pad_left == w.pad_right;
  const int64_t ph = w.in_h + (symmetric ? 0 : w.pad_top + w.pad_bottom);
  const int64_t pw = w.in_w + (symmetric ? 0 : w.pad_left + w.pad_right);
  if (!symmetric && !scratch) fail(where, "asymmetric padding needs a scratch buffer the plan did not give");
  const ConvOperands o = conv_operands(ctx, task, geo, symmetric, ph, pw, scratch);

  // The algorithm: a choice timed earlier (this process, or a stored one:
  // kernel_choices.h) needs no list of candidates (cudnnFind times every
  // algorithm, a tenth of a second for a large convolution).
  const std::string key = signature_key(geo, symmetric, ph, pw, ctx.precision());
  const std::string choice_key = key + (task.bias ? ",b" : "") + (task.residual ? ",z" : "") + activation_key(o.act);
  const std::optional<TimedAlgo> stored = stored_algo(choice_key, ctx.conv_workspace_limit);
  const std::vector<AlgoChoice> candidates =
      stored ? std::vector<AlgoChoice>{stored->choice} : cudnn_candidates(key, *o.descs, ctx, where);
  // The fallback should cuDNN refuse the fused relu call for an algorithm:
  // rarely runs, so not compiled (nor counted).
  const EwLauncher relu_epilogue(
      epilogue_program(o.y, o.ys, o.bias, o.residual, ConvActivation{ConvActivation::kRelu}, o.type), false, false);
  std::optional<EwLauncher> activation_epilogue;
  if (o.act.kind == ConvActivation::kClip || o.act.kind == ConvActivation::kSilu)
    activation_epilogue.emplace(
        ctx.elementwise_launcher(epilogue_program(o.y, o.ys, o.bias, nullptr, o.act, o.type), false));
  auto step_with = [&](AlgoChoice choice) { return cudnn_step(o, choice, relu_epilogue, activation_epilogue); };

  // Besides cuDNN, a convolution may have another implementation (a 1x1 one
  // on cuBLAS, a depthwise one on the runtime's kernel); whichever of the
  // two is faster here (measured at load on the real shapes) runs, unless
  // the options pin one.
  std::function<void()> other;
  const bool pointwise = is_pointwise(geo);
  const DepthwiseGeometry dw = depthwise_geometry(geo);
  if (pointwise) other = pointwise_step(o, geo, ctx);
  if (is_depthwise(geo, dw)) other = depthwise_step(o, dw);
  const bool compare_other = other && ctx.conv_choice == ConvChoice::kFaster;
  const TimedAlgo cudnn = choose_algo(candidates, stored, compare_other, choice_key, step_with, o.gpu, where);
  ctx.gpu.conv_workspace_needed = std::max(ctx.gpu.conv_workspace_needed, cudnn.choice.workspace);
  const std::function<void()> via_cudnn = step_with(cudnn.choice);
  if (!other || ctx.conv_choice == ConvChoice::kCudnn) return via_cudnn;
  if (ctx.conv_choice == ConvChoice::kOther) return other;
  return faster_of(via_cudnn, cudnn.ms, other, pointwise, choice_key, o.gpu, where);
}

}  // namespace tgr::gpu
