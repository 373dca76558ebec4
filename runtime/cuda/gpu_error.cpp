#include "runtime/cuda/gpu_error.h"

namespace tgr::gpu {

std::string describe(const Where& where) {
  std::string s = where.op;
  if (where.node >= 0) {
    s += " (node ";
    s += std::to_string(where.node);
    if (!where.name.empty()) {
      s += " '";
      s += where.name;
      s += "'";
    }
    s += ")";
  }
  return s;
}

void fail(const Where& where, const std::string& what) {
  std::string msg = describe(where);
  msg += ": ";
  msg += what;
  throw GpuError(msg);
}

namespace {
[[noreturn]] void fail_call(const Where& where, const char* call, const char* status) {
  std::string what = call;
  what += " failed: ";
  what += status;
  fail(where, what);
}
}  // namespace

void check(cudaError_t status, const char* call, const Where& where) {
  if (status != cudaSuccess) fail_call(where, call, cudaGetErrorString(status));
}

void check(cublasStatus_t status, const char* call, const Where& where) {
  if (status != CUBLAS_STATUS_SUCCESS) fail_call(where, call, cublasGetStatusString(status));
}

void check(cudnnStatus_t status, const char* call, const Where& where) {
  if (status != CUDNN_STATUS_SUCCESS) fail_call(where, call, cudnnGetErrorString(status));
}

void check_launch(const char* kernel, const Where& where) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    std::string call = "launch of ";
    call += kernel;
    fail_call(where, call.c_str(), cudaGetErrorString(status));
  }
}

}  // namespace tgr::gpu
