// Loads an ONNX model (one `optimize` wrote, say) onto tgr's GPU runtime, runs
// it on inputs of ones and prints each output's shape and first values.
#include <tgr/session.h>

#include <algorithm>
#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: run_on_gpu MODEL.onnx\n"), 2;
  try {
    tgr::Session session(argv[1]);
    std::map<std::string, tgr::HostTensor> inputs;
    for (const tgr::TensorInfo& input : session.inputs()) inputs[input.name] = tgr::HostTensor::filled(input, 1);
    for (const auto& [name, output] : session.run(inputs)) {
      std::printf("%s [", name.c_str());
      for (int64_t d : output.shape) std::printf(" %lld", static_cast<long long>(d));
      std::printf(" ]:");
      const size_t n = std::max(output.floats.size(), output.ints.size());
      for (size_t i = 0; i < std::min<size_t>(n, 5); ++i)
        std::printf(" %g", output.floats.empty() ? double(output.ints[i]) : double(output.floats[i]));
      std::printf("\n");
    }
  } catch (const tgr::SessionError& e) {
    return std::fprintf(stderr, "run_on_gpu: error: %s\n", e.what()), 1;
  }
}
