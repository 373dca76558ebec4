#include "runtime/cuda/ew_compile.h"

#include "runtime/cuda/dependent_launch.h"

#include <nvrtc.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "runtime/cuda/launch_shape.h"

namespace tgr::gpu {

namespace {

std::string reg(int r) { return std::string("r").append(std::to_string(r)); }

// A float parameter as its exact bits (infinities and NaN included).
std::string float_literal(float v) {
  uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  char text[40];
  std::snprintf(text, sizeof text, "__int_as_float(0x%08x)", bits);
  return text;
}

// Conversions between float32 and the half types' bits in generated code,
// without headers (NVRTC may lack cuda_fp16.h): float16 by the PTX
// conversions, bfloat16 by its bits (round to nearest even, NaN kept quiet).
constexpr const char* kHalfConversions =
    "__device__ __forceinline__ float tgr_h2f(unsigned short h) {\n"
    "  float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f; }\n"
    "__device__ __forceinline__ unsigned short tgr_f2h(float f) {\n"
    "  unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n"
    "__device__ __forceinline__ float tgr_bf2f(unsigned short b) { return __uint_as_float(((unsigned)b) << 16); }\n"
    "__device__ __forceinline__ unsigned short tgr_f2bf(float f) {\n"
    "  unsigned u = __float_as_uint(f);\n"
    "  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);\n"
    "  u += 0x7fffu + ((u >> 16) & 1u); return (unsigned short)(u >> 16); }\n";

// The C++ type a value is stored as in generated code.
const char* stored_type(bool int64, FloatType type) {
  if (int64) return "long long";
  return type == FloatType::kF32 ? "float" : "unsigned short";
}

// `e`, loaded as stored (int64, or floats of `type`), as the program's type.
std::string widened(const std::string& e, bool int64, FloatType type, const char* program_type) {
  if (int64 || type == FloatType::kF32) return std::string("(") + program_type + ")" + e;
  return std::string(type == FloatType::kF16 ? "tgr_h2f(" : "tgr_bf2f(") + e + ")";
}

}  // namespace

std::string ew_instruction_expression(const EwInstr& ins, bool int64_program) {
  const std::string a = reg(ins.a), b = reg(ins.b), c = reg(ins.c);
  const std::string one = int64_program ? "1LL" : "1.f", zero = int64_program ? "0LL" : "0.f";
  auto flag = [&](const std::string& cond) { return "(" + cond + " ? " + one + " : " + zero + ")"; };
  const std::string p0 = float_literal(ins.p0), p1 = float_literal(ins.p1);
  // Float-only instructions give 0 in an int64 program, as apply's do.
  auto real = [&](const std::string& e) { return int64_program ? std::string("0LL") : e; };
  // The interpreter's apply() (kernels_elementwise.cu), formula by formula;
  // no default: a new instruction is a -Wswitch error here.
  switch (ins.op) {
    case EwOp::kAdd:
      return a + " + " + b;
    case EwOp::kSub:
      return a + " - " + b;
    case EwOp::kMul:
      return a + " * " + b;
    case EwOp::kDiv:
      return int64_program ? "(" + b + " == 0LL ? 0LL : " + a + " / " + b + ")" : a + " / " + b;
    case EwOp::kMax:
      return "(" + a + " > " + b + " ? " + a + " : " + b + ")";
    case EwOp::kNeg:
      return "-" + a;
    case EwOp::kAbs:
      return "(" + a + " < " + zero + " ? -" + a + " : " + a + ")";
    case EwOp::kEqual:
      return flag(a + " == " + b);
    case EwOp::kLess:
      return flag(a + " < " + b);
    case EwOp::kGreater:
      return flag(a + " > " + b);
    case EwOp::kLessEqual:
      return flag(a + " <= " + b);
    case EwOp::kGreaterEqual:
      return flag(a + " >= " + b);
    case EwOp::kNot:
      return flag(a + " == " + zero);
    case EwOp::kNonZero:
      return flag(a + " != " + zero);
    case EwOp::kWhere:
      return "(" + a + " != " + zero + " ? " + b + " : " + c + ")";
    case EwOp::kTrunc:
      return int64_program ? a : "truncf(" + a + ")";  // integers are whole
    case EwOp::kPow:
      return real("powf(" + a + ", " + b + ")");
    case EwOp::kRelu:
      return real("(" + a + " > 0.f ? " + a + " : 0.f)");
    case EwOp::kSigmoid:
      return real("1.f / (1.f + expf(-" + a + "))");
    case EwOp::kTanh:
      return real("tanhf(" + a + ")");
    case EwOp::kSqrt:
      return real("sqrtf(" + a + ")");
    case EwOp::kExp:
      return real("expf(" + a + ")");
    case EwOp::kLog:
      return real("logf(" + a + ")");
    case EwOp::kErf:
      return real("erff(" + a + ")");
    case EwOp::kRsqrt:
      return real("1.f / sqrtf(" + a + ")");
    case EwOp::kLeakyRelu:
      return real("(" + a + " >= 0.f ? " + a + " : " + p0 + " * " + a + ")");
    case EwOp::kHardSigmoid:
      return real("fmaxf(0.f, fminf(1.f, " + p0 + " * " + a + " + " + p1 + "))");
    case EwOp::kHardSwish:
      return real(a + " * fmaxf(0.f, fminf(1.f, " + a + " / 6.f + 0.5f))");
    case EwOp::kClip:
      return real("fminf(fmaxf(" + a + ", " + p0 + "), " + p1 + ")");
    case EwOp::kSoftplus:
      return real("(" + a + " > 0.f ? " + a + " + log1pf(expf(-" + a + ")) : log1pf(expf(" + a + ")))");
    case EwOp::kFloor:
      return real("floorf(" + a + ")");
    case EwOp::kCeil:
      return real("ceilf(" + a + ")");
    case EwOp::kCos:
      return real("cosf(" + a + ")");
    case EwOp::kSin:
      return real("sinf(" + a + ")");
    case EwOp::kIsNan:
      return real("(" + a + " != " + a + " ? 1.f : 0.f)");
    case EwOp::kAddConst:
      return real(a + " + " + p0);
    case EwOp::kMulConst:
      return real(a + " * " + p0);
    case EwOp::kDivConst:
      return real(a + " / " + p0);
    case EwOp::kRSubConst:
      return real(p0 + " - " + a);
    case EwOp::kRDivConst:
      return real(p0 + " / " + a);
    case EwOp::kPowConst:
      return real("powf(" + a + ", " + p0 + ")");
    case EwOp::kGelu:
      return real("0.5f * " + a + " * (1.f + erff(" + a + " * 0.70710678118654752f))");
  }
  return zero;  // not reached: the switch names every instruction
}

std::string ew_kernel_source(const EwProgram& p, bool int64_program) {
  const char* type = int64_program ? "long long" : "float";
  const long long count = p.out.count();
  const char* index = fits_32_bits(count) ? "int" : "long long";
  std::string s;
  const bool halves =
      !int64_program &&
      (std::any_of(p.in, p.in + p.inputs, [](const EwInput& in) { return !in.int64 && in.type != FloatType::kF32; }) ||
       (!p.int64_out && p.out_type != FloatType::kF32));
  if (halves) s += kHalfConversions;
  s += "struct EwKernelArgs { const void* in[" + std::to_string(kMaxEwInputs) + "]; void* out; long long count; };\n";
  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) +
       ") tgr_ew(const EwKernelArgs args) {\n";
  // Programmatic dependent launch (dependent_launch.h): nothing is read or
  // written before the previous grid has completed.
  s += "#if __CUDA_ARCH__ >= 900\n  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n"
       "#endif\n";
  s += std::string("  typedef ") + index + " I;\n";
  for (int k = 0; k < p.inputs; ++k) {
    const char* stored = stored_type(int64_program || p.in[k].int64, p.in[k].type);
    s += "  const " + std::string(stored) + "* __restrict__ in" + std::to_string(k) + " = (const " + stored +
         "*)args.in[" + std::to_string(k) + "];\n";
  }
  const std::string out_type = stored_type(int64_program || p.int64_out, p.out_type);
  s += "  " + out_type + "* __restrict__ out = (" + out_type + "*)args.out;\n";
  s += "  for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < (I)args.count; i += (I)gridDim.x * blockDim.x) {\n";
  // Coordinates over the collapsed shape, when some input is strided.
  const bool strided = std::any_of(p.in, p.in + p.inputs, [](const EwInput& in) { return !in.contiguous; });
  if (strided) {
    s += "    I t = i;\n";
    for (int d = p.out.rank - 1; d >= 0; --d) {
      const std::string c = std::string("c").append(std::to_string(d)), size = std::to_string(p.out.size[d]);
      if (d == 0) {
        s += "    const I " + c + " = t;\n";
      } else {
        s += "    const I " + c + " = t % " + size + "; t /= " + size + ";\n";
      }
    }
  }
  for (int k = 0; k < p.inputs; ++k) {
    const EwInput& in = p.in[k];
    std::string at = "i";
    if (!in.contiguous) {
      at.clear();
      for (int d = 0; d < p.out.rank; ++d) {
        if (in.strides.s[d] == 0) continue;
        if (!at.empty()) at += " + ";
        at.append("c").append(std::to_string(d)).append(" * (I)").append(std::to_string(in.strides.s[d]));
      }
      if (at.empty()) at = "0";
    }
    s += std::string("    const ") + type + " " + reg(k) + " = " +
         widened("in" + std::to_string(k) + "[" + at + "]", int64_program || in.int64, in.type, type) + ";\n";
  }
  for (int c = 0; c < p.instrs; ++c) {
    const EwInstr& ins = p.code[c];
    s += std::string("    const ") + type + " " + reg(ins.dst) + " = " + ew_instruction_expression(ins, int64_program) +
         ";\n";
  }
  if (!int64_program && !p.int64_out && p.out_type != FloatType::kF32)
    s += "    out[i] = " + std::string(p.out_type == FloatType::kF16 ? "tgr_f2h(" : "tgr_f2bf(") + reg(p.result) +
         ");\n";
  else s += "    out[i] = (" + out_type + ")" + reg(p.result) + ";\n";
  s += "  }\n}\n";
  return s;
}

std::string compile_ew_source(const std::string& source, int arch, std::string* log) {
  nvrtcProgram prog = nullptr;
  if (nvrtcCreateProgram(&prog, source.c_str(), "tgr_ew.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    if (log) *log = "nvrtcCreateProgram failed";
    return {};
  }
  const std::string gpu_arch = "--gpu-architecture=sm_" + std::to_string(arch);
  // --fmad=false: each instruction rounds on its own, as in the interpreter.
  const char* options[] = {gpu_arch.c_str(), "--fmad=false", "--std=c++17"};
  const nvrtcResult compiled = nvrtcCompileProgram(prog, 3, options);
  if (log) {
    size_t size = 0;
    nvrtcGetProgramLogSize(prog, &size);
    log->assign(size, '\0');
    if (size > 0) nvrtcGetProgramLog(prog, log->data());
    while (!log->empty() && log->back() == '\0') log->pop_back();
    if (compiled != NVRTC_SUCCESS) *log = std::string(nvrtcGetErrorString(compiled)) + ": " + *log;
  }
  std::string cubin;
  size_t size = 0;
  if (compiled == NVRTC_SUCCESS && nvrtcGetCUBINSize(prog, &size) == NVRTC_SUCCESS && size > 0) {
    cubin.assign(size, '\0');
    if (nvrtcGetCUBIN(prog, cubin.data()) != NVRTC_SUCCESS) cubin.clear();
  }
  nvrtcDestroyProgram(&prog);
  return cubin;
}

namespace {

// The process's compiled kernels, by source: a model's repeated blocks, and
// models loaded one after another, compile each program once. A failed
// source is remembered too (nullptr), so it is not retried per step.
// Libraries are loaded context-independently and kept for the process.
const void* cached_kernel(const std::string& source) {
  static std::mutex mutex;
  static std::map<std::string, const void*> kernels;
  static int arch = -1;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = kernels.find(source); it != kernels.end()) return it->second;
  if (arch < 0) {
    int device = 0, major = 0, minor = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
      arch = 0;
    else arch = major * 10 + minor;
  }
  const void* kernel = nullptr;
  if (arch > 0) {
    const std::string cubin = compile_ew_source(source, arch, nullptr);
    cudaLibrary_t library = nullptr;
    cudaKernel_t k = nullptr;
    if (!cubin.empty() &&
        cudaLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0) == cudaSuccess &&
        cudaLibraryGetKernel(&k, library, "tgr_ew") == cudaSuccess)
      kernel = reinterpret_cast<const void*>(k);
    cudaGetLastError();  // a refusal above is not a later launch's error
  }
  kernels.emplace(source, kernel);
  return kernel;
}

}  // namespace

EwLauncher::EwLauncher(const EwProgram& program, bool int64_program, bool compile)
    : program_(program), int64_program_(int64_program) {
  collapse_inputs(program_.out, program_.in, program_.inputs);
  if (compile) kernel_ = cached_kernel(ew_kernel_source(program_, int64_program_));
}

void EwLauncher::launch(void* out, cudaStream_t stream) const {
  if (!kernel_) {
    if (int64_program_) launch_ew_int64(program_, static_cast<int64_t*>(out), stream);
    else launch_ew_float(program_, out, stream);
    return;
  }
  EwKernelArgs args;
  for (int k = 0; k < program_.inputs; ++k) args.in[k] = program_.in[k].data;
  args.out = out;
  args.count = program_.out.count();
  void* params[] = {&args};
  const DependentLaunchConfig launch(dim3(grid_for(args.count)), dim3(kBlock), 0, stream);
  cudaLaunchKernelExC(&launch.config, kernel_, params);
}

}  // namespace tgr::gpu
