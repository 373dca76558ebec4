// tgr::Session (tgr/session.h), the library's public class: host runs
// against the bundled model's reference outputs, device runs (inputs in GPU
// memory, outputs owned by the caller) against host runs, bad inputs named;
// and without a GPU, the refusal (this test runs where the others skip).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "onnx/onnx_proto.h"
#include "runtime/precision.h"
#include "tests/gpu/gpu_test_util.h"
#include "tgr/session.h"

namespace tgr {
namespace {

std::string models_dir() {
  const char* env = std::getenv("TGR_TEST_DATA");  // on the GPU machine: the bundle's data
  return std::string(env ? env : TGR_TEST_DATA) + "/models/";
}

// The bundled SqueezeNet's test input and reference output.
struct SqueezeNet {
  std::string path = models_dir() + "squeezenet1_1.onnx";
  ConstantValue input = onnx_io::read_tensor_file(models_dir() + "squeezenet1_1-testdata/input_0.pb").value;
  ConstantValue expected = onnx_io::read_tensor_file(models_dir() + "squeezenet1_1-testdata/output_0.pb").value;
  HostTensor host_input() const { return HostTensor::float32(input.shape(), input.real.data); }
};

double relative_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) num += (a[i] - b[i]) * double(a[i] - b[i]), den += double(b[i]) * b[i];
  return std::sqrt(num / den);
}

TEST(Session, RefusedWithoutGpuNamingTheModel) {
  if (Session::gpu_available()) GTEST_SKIP() << "a GPU is visible: the sessions run (the other Session tests)";
  const SqueezeNet m;
  try {
    Session session(m.path);
    FAIL() << "a session without a GPU";
  } catch (const SessionError& e) {
    EXPECT_EQ(std::string(e.what()),
              "'" + m.path + "': no CUDA device is visible (a GPU session needs an NVIDIA GPU and its driver)");
  }
}

TEST(Session, HostRunsMatchTheReference) {
  SKIP_WITHOUT_GPU();
  const SqueezeNet m;
  Session session(m.path);
  ASSERT_EQ(session.inputs().size(), 1u);
  ASSERT_EQ(session.outputs().size(), 1u);
  EXPECT_EQ(session.inputs()[0].name, "input.1");
  EXPECT_EQ(session.inputs()[0].shape, (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(session.outputs()[0].shape, (std::vector<int64_t>{1, 1000}));
  for (int run = 0; run < 3; ++run) {
    const auto out = session.run({{"input.1", m.host_input()}});
    ASSERT_EQ(out.count(session.outputs()[0].name), 1u);
    EXPECT_LT(relative_l2(out.begin()->second.floats, m.expected.real.data), 1e-4);
  }
  EXPECT_GT(session.replay_ms(5, 1), 0);
}

// SessionOptions::precision: tf32 runs and matches within TF32's tolerance;
// bf16 and fp16 hold the float32 input and output in the half type on the
// GPU (TensorInfo::device_type), host runs convert and match within the
// precision's tolerance (docs/gpu.md), device runs take and return the half
// type and equal host runs; an unknown name is refused before anything runs.
TEST(Session, PrecisionsRunAndHalfStorageHoldsTheBoundaryInTheHalfType) {
  SKIP_WITHOUT_GPU();
  const SqueezeNet m;
  SessionOptions tf32;
  tf32.precision = "tf32";
  Session session(m.path, tf32);
  EXPECT_EQ(session.inputs()[0].device_type, ElementType::kFloat32);
  const auto out = session.run({{"input.1", m.host_input()}});
  EXPECT_LT(relative_l2(out.begin()->second.floats, m.expected.real.data), 1e-2);
  for (const auto& [name, half, tolerance] :
       {std::tuple{"bf16", ElementType::kBFloat16, 2e-2}, std::tuple{"fp16", ElementType::kFloat16, 5e-3}}) {
    SessionOptions o;
    o.precision = name;
    Session at(m.path, o);
    ASSERT_EQ(at.inputs()[0].device_type, half) << name;
    ASSERT_EQ(at.outputs()[0].device_type, half) << name;
    EXPECT_EQ(at.inputs()[0].type, ElementType::kFloat32);
    EXPECT_EQ(at.inputs()[0].device_bytes(), m.input.real.data.size() * 2);
    const std::vector<float> host = at.run({{"input.1", m.host_input()}}).begin()->second.floats;
    EXPECT_LT(relative_l2(host, m.expected.real.data), tolerance) << name;
    // On the device: the input in the half type, the output too.
    const DType graph_half = half == ElementType::kBFloat16 ? DType::kBFloat16 : DType::kFloat16;
    std::vector<uint16_t> bits(m.input.real.data.size());
    encode_floats(m.input.real.data, graph_half, bits.data());
    void* x = nullptr;
    ASSERT_EQ(cudaMalloc(&x, bits.size() * 2), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(x, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
    const DeviceTensor input{half, at.inputs()[0].shape, x, nullptr, at.device()};
    const DeviceTensor y = at.run_on_device({{"input.1", input}}).begin()->second;
    EXPECT_EQ(y.type, half);
    std::vector<uint16_t> y_bits(host.size());
    ASSERT_EQ(cudaMemcpy(y_bits.data(), y.data, y_bits.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    std::vector<float> from_device(host.size());
    decode_floats(y_bits.data(), graph_half, from_device);
    EXPECT_EQ(from_device, host) << name;
    // A float32 device input is not the half type the GPU holds.
    const DeviceTensor f32{ElementType::kFloat32, at.inputs()[0].shape, x, nullptr, at.device()};
    try {
      at.run_on_device({{"input.1", f32}});
      FAIL() << "a float32 device input at " << name;
    } catch (const SessionError& e) {
      EXPECT_NE(std::string(e.what()).find("on the GPU, given float32"), std::string::npos) << e.what();
    }
    cudaFree(x);
  }
  SessionOptions unknown;
  unknown.precision = "f32";
  try {
    Session refused(m.path, unknown);
    FAIL() << "precision f32 accepted";
  } catch (const SessionError& e) {
    EXPECT_NE(std::string(e.what()).find("precision 'f32'"), std::string::npos) << e.what();
  }
}

TEST(Session, DeviceRunsEqualHostRuns) {
  SKIP_WITHOUT_GPU();
  const SqueezeNet m;
  Session session(m.path);
  const std::vector<float> host = session.run({{"input.1", m.host_input()}}).begin()->second.floats;
  const size_t bytes = m.input.real.data.size() * sizeof(float);
  void* x = nullptr;
  ASSERT_EQ(cudaMalloc(&x, bytes), cudaSuccess);
  cudaStream_t producer = nullptr;
  ASSERT_EQ(cudaStreamCreate(&producer), cudaSuccess);
  // Written on the producer's stream; the run waits for it (wait_stream).
  ASSERT_EQ(cudaMemcpyAsync(x, m.input.real.data.data(), bytes, cudaMemcpyHostToDevice, producer), cudaSuccess);
  const DeviceTensor input{ElementType::kFloat32, session.inputs()[0].shape, x, nullptr, session.device()};
  auto out = session.run_on_device({{"input.1", input}}, producer);
  const DeviceTensor y = out.begin()->second;
  std::vector<float> from_device(host.size());
  ASSERT_EQ(cudaMemcpy(from_device.data(), y.data, host.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(from_device, host);
  // The output is the caller's: a later run (of zeros) leaves it as it was.
  ASSERT_EQ(cudaMemset(x, 0, bytes), cudaSuccess);
  const auto zeros = session.run_on_device({{"input.1", input}});
  std::vector<float> again(host.size());
  ASSERT_EQ(cudaMemcpy(again.data(), y.data, host.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(again, host);
  EXPECT_NE(zeros.begin()->second.data, y.data);
  // run_buffers: host memory in, host memory out.
  std::vector<float> raw(host.size());
  session.run_buffers({m.input.real.data.data()}, {raw.data()});
  EXPECT_EQ(raw, host);
  cudaStreamDestroy(producer);
  cudaFree(x);
}

TEST(Session, BadInputsAreNamed) {
  SKIP_WITHOUT_GPU();
  const SqueezeNet m;
  Session session(m.path);
  auto message = [&](const std::map<std::string, HostTensor>& inputs) {
    try {
      session.run(inputs);
    } catch (const SessionError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({{"x", m.host_input()}}), "the model has no input 'x' (its inputs: input.1)");
  EXPECT_EQ(message({}), "no tensor given for the model's input 'input.1'");
  EXPECT_EQ(message({{"input.1", HostTensor::float32({1, 3}, {1, 2, 3})}}),
            "input 'input.1' is float32 1x3x224x224, given float32 1x3");
  EXPECT_THROW(Session(models_dir() + "no_such_model.onnx"), SessionError);
}

}  // namespace
}  // namespace tgr
