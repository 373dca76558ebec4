// Checked CUDA, cuBLAS and cuDNN calls. Every call the GPU runtime makes goes
// through TGR_GPU_CHECK, and a failure throws GpuError naming the call, the
// library's message, and the operator and node it was made for:
//   "conv2d (node 17 'conv1'): cudnnConvolutionForward(...) failed: CUDNN_STATUS_BAD_PARAM"
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <stdexcept>
#include <string>

namespace tgr::gpu {

// What a call was made for: an operator at a node, or a phase of the runtime
// ("load", "replay") with node -1.
struct Where {
  Where(std::string op_name, int node_index = -1, std::string label = "")
      : op(std::move(op_name)), node(node_index), name(std::move(label)) {}
  std::string op;
  int node = -1;
  std::string name;  // the node's label, when it has one
};

class GpuError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "conv2d (node 17 'conv1')", or just "load".
std::string describe(const Where& where);

[[noreturn]] void fail(const Where& where, const std::string& what);

void check(cudaError_t status, const char* call, const Where& where);
void check(cublasStatus_t status, const char* call, const Where& where);
void check(cudnnStatus_t status, const char* call, const Where& where);
// After a kernel launch: the launch error, if any (not a device sync).
void check_launch(const char* kernel, const Where& where);

}  // namespace tgr::gpu

#define TGR_GPU_CHECK(call, where) ::tgr::gpu::check((call), #call, (where))
