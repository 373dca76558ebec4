// Elementwise programs compiled for the GPU they run on.
//
// The interpreter kernel (kernels_elementwise.cu) runs any EwProgram, but it
// pays for that on every element: a switch per instruction, registers read
// and written through selects, index arithmetic with divisions by run-time
// sizes. On the H100 a GELU over 1.2 M floats took 12.5 us that way, where a
// kernel written for it takes under 4 us (torch.compile's, measured in the
// same profile). So each program is also written out as CUDA C++ of its own
// (ew_kernel_source: one statement per instruction, the index arithmetic
// over the collapsed shape with its sizes and strides as constants),
// compiled once per process with NVRTC for the device's architecture, and
// launched instead.
//
// The generated code computes exactly what the interpreter computes: the
// same formula per instruction (one table, ew_instruction_expression, that
// the tests hold against the interpreter's switch), each instruction rounded
// on its own (--fmad=false: no multiply-add contraction across
// instructions), loads and stores converted the same way.
//
// When NVRTC or the driver refuses (an architecture newer than this NVRTC,
// a missing libnvrtc-builtins), the program runs on the interpreter kernel
// and EwLauncher::compiled() says so; GpuModel counts both kinds in its stats.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "runtime/cuda/kernels.h"

namespace tgr::gpu {

// The C++ expression instruction `ins` computes from registers named
// r<a>, r<b>, r<c>, in float (in long long for an int64 program), as the
// interpreter's apply() does.
std::string ew_instruction_expression(const EwInstr& ins, bool int64_program);

// A kernel `tgr_ew(EwKernelArgs)` computing `program` (its inputs already
// collapsed: collapse_inputs). Programs whose inputs are all contiguous give
// the same source for every output size (the element count is an argument;
// only the index type, 32 or 64 bits, depends on it); a strided input writes
// the collapsed sizes and its strides in.
std::string ew_kernel_source(const EwProgram& program, bool int64_program);

// What the generated kernel takes: the inputs' and the output's device
// pointers and the element count. Defined the same way in the generated source.
struct EwKernelArgs {
  const void* in[kMaxEwInputs] = {};
  void* out = nullptr;
  long long count = 0;
};

// NVRTC: `source` compiled to a CUBIN for sm_<arch> (e.g. 90), no GPU
// needed. Empty on failure, with NVRTC's log in *log.
std::string compile_ew_source(const std::string& source, int arch, std::string* log);

// One elementwise program, ready to launch: the compiled kernel (cached per
// source for the process) when `compile` is set and compilation succeeds,
// the interpreter kernel otherwise.
class EwLauncher {
 public:
  EwLauncher(const EwProgram& program, bool int64_program, bool compile);
  // out: float* (int64_t* for an int64 program or an int64_out program).
  void launch(void* out, cudaStream_t stream) const;
  bool compiled() const { return kernel_ != nullptr; }

 private:
  EwProgram program_;  // inputs collapsed
  bool int64_program_ = false;
  const void* kernel_ = nullptr;  // a cudaKernel_t from the process's cache
};

}  // namespace tgr::gpu
