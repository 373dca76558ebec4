// What the CUDA stack this binary was built with reports at run time: library
// versions and the visible GPUs. Built only when CUDA, cuBLAS and cuDNN are
// found (TGR_HAVE_CUDA); a machine without a GPU reports none.
#pragma once

#include <string>

namespace tgr {
std::string cuda_device_report();
}  // namespace tgr
