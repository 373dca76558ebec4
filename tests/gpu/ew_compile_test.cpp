// Elementwise programs compiled with NVRTC (runtime/cuda/ew_compile.h).
// The source generation and the NVRTC compilation need no GPU and run in CI;
// the comparison of every instruction with the interpreter kernel, and the
// counts a model's load reports, run on the GPU machine.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/cuda/ew_compile.h"
#include "runtime/cuda/gpu_context.h"
#include "runtime/cuda/launch_shape.h"
#include "tests/gpu/gpu_test_util.h"

namespace tgr {
namespace {

using gpu::EwInput;
using gpu::EwInstr;
using gpu::EwOp;
using gpu::EwProgram;

constexpr int kOps = static_cast<int>(EwOp::kWhere) + 1;

EwOp op_at(int k) { return static_cast<EwOp>(k); }

// Three inputs over a 6 x 50 output: register 0 contiguous, register 1 a
// row of 50 broadcast down the rows (strided), register 2 contiguous (in a
// float program, int64 when `int64_third`); one instruction reading
// registers 0, 1 (and 2 for where) into register 3.
EwProgram one_instruction(EwOp op, bool int64_third, const void* const data[3]) {
  EwProgram p;
  p.out.rank = 2;
  p.out.size[0] = 6;
  p.out.size[1] = 50;
  p.inputs = 3;
  p.in[0].data = data[0];
  p.in[0].contiguous = true;
  p.in[1].data = data[1];
  p.in[1].strides.s[0] = 0;
  p.in[1].strides.s[1] = 1;
  p.in[2].data = data[2];
  p.in[2].contiguous = true;
  p.in[2].int64 = int64_third;
  p.instrs = 1;
  p.code[0] = EwInstr{op, 3, 0, 1, 2, 0.25f, 0.75f};
  p.result = 3;
  p.registers = 4;
  gpu::collapse_inputs(p.out, p.in, p.inputs);
  return p;
}

TEST(EwCompile, EveryInstructionCompilesWithNvrtcForTheH100) {
  const void* data[3] = {nullptr, nullptr, nullptr};
  for (bool ints : {false, true})
    for (int k = 0; k < kOps; ++k) {
      const EwProgram p = one_instruction(op_at(k), !ints, data);
      const std::string source = gpu::ew_kernel_source(p, ints);
      std::string log;
      const std::string cubin = gpu::compile_ew_source(source, 90, &log);
      EXPECT_FALSE(cubin.empty()) << "instruction " << k << (ints ? " (int64)" : " (float)") << ": " << log << "\n"
                                  << source;
    }
}

TEST(EwCompile, HalfTypesAreWidenedOnLoadAndRoundedOnStoreAndCompile) {
  const void* data[3] = {nullptr, nullptr, nullptr};
  for (gpu::FloatType type : {gpu::FloatType::kF16, gpu::FloatType::kBF16}) {
    EwProgram p = one_instruction(EwOp::kWhere, true, data);
    p.in[0].type = p.in[1].type = type;
    p.out_type = type;
    const std::string source = gpu::ew_kernel_source(p, false);
    const std::string load = type == gpu::FloatType::kF16 ? "tgr_h2f(in0[" : "tgr_bf2f(in0[";
    const std::string store = type == gpu::FloatType::kF16 ? "out[i] = tgr_f2h(r3)" : "out[i] = tgr_f2bf(r3)";
    EXPECT_NE(source.find(load), std::string::npos) << source;
    EXPECT_NE(source.find(store), std::string::npos) << source;
    EXPECT_NE(source.find("const unsigned short* __restrict__ in1"), std::string::npos) << source;
    EXPECT_NE(source.find("const long long* __restrict__ in2"), std::string::npos) << source;  // int64 stays
    std::string log;
    EXPECT_FALSE(gpu::compile_ew_source(source, 90, &log).empty()) << log << "\n" << source;
  }
  // A float32 program names no conversion: its source is what it was before half types.
  const std::string plain = gpu::ew_kernel_source(one_instruction(EwOp::kAdd, false, data), false);
  for (const char* conversion : {"tgr_h2f", "tgr_f2h", "tgr_bf2f", "tgr_f2bf", "unsigned short"})
    EXPECT_EQ(plain.find(conversion), std::string::npos) << conversion << "\n" << plain;
}

TEST(EwCompile, SourceWritesTheProgramAndOnlyStridedShapesIn) {
  const void* data[3] = {nullptr, nullptr, nullptr};
  EwProgram p = one_instruction(EwOp::kGelu, false, data);
  std::string source = gpu::ew_kernel_source(p, false);
  EXPECT_NE(source.find("erff(r0 * 0.70710678118654752f)"), std::string::npos) << source;
  EXPECT_NE(source.find("% 50"), std::string::npos) << source;           // the broadcast row's coordinates
  EXPECT_NE(source.find("(float)in2[i]"), std::string::npos) << source;  // an int64 input converted on load
  // Launched as a dependent of the step before (dependent_launch.h): it waits for it before reading anything.
  ASSERT_NE(source.find("griddepcontrol.wait"), std::string::npos) << source;
  EXPECT_LT(source.find("griddepcontrol.wait"), source.find("args.in[0]")) << source;
  // All inputs contiguous: the count is an argument, so every count shares one kernel.
  EwProgram a = one_instruction(EwOp::kAdd, false, data), b = a;
  for (EwProgram* q : {&a, &b}) {
    q->inputs = 1;
    q->code[0] = EwInstr{EwOp::kMulConst, 1, 0, 0, 0, 3.f, 0};
    q->result = 1;
  }
  a.out.size[0] = 1000;
  b.out.size[0] = 7;
  EXPECT_EQ(gpu::ew_kernel_source(a, false), gpu::ew_kernel_source(b, false));
  // Constants by their exact bits: 3.0f is 0x40400000.
  EXPECT_NE(gpu::ew_kernel_source(a, false).find("__int_as_float(0x40400000)"), std::string::npos);
}

// --- on the GPU --------------------------------------------------------------

template <class T>
std::vector<T> download(const gpu::DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  EXPECT_EQ(cudaMemcpy(v.data(), b.data(), n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

gpu::DeviceBuffer upload(const void* src, size_t bytes) {
  gpu::DeviceBuffer b(bytes, "test");
  EXPECT_EQ(cudaMemcpy(b.data(), src, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  return b;
}

TEST(GpuCompiledPrograms, EveryInstructionMatchesTheInterpreterKernel) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> real(-3.f, 3.f);
  std::uniform_int_distribution<int64_t> small(-3, 3);
  std::vector<float> x(300), row(50);
  std::vector<int64_t> third(300);
  for (float& v : x) v = real(rng);
  for (float& v : row) v = real(rng);
  for (int64_t& v : third) v = small(rng);
  x[3] = 0.f, row[3] = 0.f, x[5] = NAN;  // division by zero, comparisons of equal values, NaN
  std::vector<int64_t> xi(300), rowi(50);
  for (size_t k = 0; k < x.size(); ++k) xi[k] = small(rng);
  for (size_t k = 0; k < row.size(); ++k) rowi[k] = small(rng);
  const gpu::DeviceBuffer dx = upload(x.data(), 300 * 4), drow = upload(row.data(), 50 * 4),
                          dthird = upload(third.data(), 300 * 8), dxi = upload(xi.data(), 300 * 8),
                          drowi = upload(rowi.data(), 50 * 8);
  gpu::DeviceBuffer compiled(300 * 8, "test"), interpreted(300 * 8, "test");
  for (bool ints : {false, true})
    for (int k = 0; k < kOps; ++k) {
      const void* data[3] = {ints ? dxi.data() : dx.data(), ints ? drowi.data() : drow.data(), dthird.data()};
      const EwProgram p = one_instruction(op_at(k), !ints, data);
      const gpu::EwLauncher jit(p, ints, true), interpreter(p, ints, false);
      ASSERT_TRUE(jit.compiled()) << "instruction " << k;
      ASSERT_FALSE(interpreter.compiled());
      jit.launch(compiled.data(), nullptr);
      interpreter.launch(interpreted.data(), nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::string what = "instruction " + std::to_string(k) + (ints ? " (int64)" : " (float)");
      if (ints) {
        EXPECT_EQ(download<int64_t>(compiled, 300), download<int64_t>(interpreted, 300)) << what;
        continue;
      }
      const std::vector<float> a = download<float>(compiled, 300), b = download<float>(interpreted, 300);
      for (size_t i = 0; i < a.size(); ++i) {
        if ((std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i]) continue;  // infinities included
        // The interpreter kernel may contract a multiply and an add inside
        // one instruction (hard sigmoid); the compiled one never does.
        EXPECT_NEAR(a[i], b[i], 1e-6f * std::max(1.f, std::abs(b[i]))) << what << " element " << i;
      }
    }
}

TEST(GpuCompiledPrograms, AModelsProgramsAreCompiledAndMatchTheInterpreted) {
  SKIP_WITHOUT_GPU();
  // GELU of a product, then a scaled residual through a permute: the
  // ConvNeXt block's elementwise steps, compiled and interpreted.
  Graph g;
  const ValueRef x = g.add_input("x", {1, 16, 9, 9}), w = g.add_input("w", {16, 16}), s = g.add_input("s", {16, 1, 1});
  const ValueRef rows = g.apply("transpose", {x}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
  const ValueRef matrix = g.apply("reshape", {rows}, {{"shape", std::vector<int64_t>{81, 16}}});
  const ValueRef product =
      g.apply("reshape", {g.apply("matmul", {matrix, w})}, {{"shape", std::vector<int64_t>{1, 9, 9, 16}}});
  const ValueRef t = g.apply("erf", {g.apply("mul", {product, rows})});
  const ValueRef back = g.apply("transpose", {t}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}});
  g.add_output(g.apply("add", {g.apply("mul", {s, back}), x}));
  const std::vector<ConstantValue> inputs = test::random_values(g, 5);
  const std::vector<ConstantValue> expected = evaluate_values<float>(g, inputs);
  gpu::GpuOptions options;
  for (bool compile : {true, false}) {
    options.compile_elementwise = compile;
    gpu::GpuModel model = gpu::GpuModel::load(g, options);
    EXPECT_GT(compile ? model.stats().compiled_programs : model.stats().interpreted_programs, 0);
    EXPECT_EQ(compile ? model.stats().interpreted_programs : model.stats().compiled_programs, 0);
    test::expect_outputs_match(model.run(inputs), expected, 1e-5, compile ? "compiled" : "interpreted");
  }
}

}  // namespace
}  // namespace tgr
