// The GPU session's part of the module tgr._tgr (session_bindings.cpp):
// the class GpuSession over tgr::Session (tgr/session.h), DeviceArray (an
// output on the GPU, with the DLPack protocol) and whether this build has CUDA.
#pragma once

#include <pybind11/pybind11.h>

namespace tgr::python {

void register_session(pybind11::module_& m);

}  // namespace tgr::python
