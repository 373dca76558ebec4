// --precision fp32|tf32|bf16|fp16 on the programs that run models on the GPU
// runtime (bench, calibrate): what it computes in (runtime/precision.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "runtime/precision.h"

namespace tgr::cli {

inline void add_precision_option(CLI::App& app, std::string& name) {
  app.add_option("--precision", name,
                 "fp32 (float32, TF32 off: the default), tf32 (float32 with products and convolutions on TF32 "
                 "tensor cores), bf16 or fp16 (every float value and weight stored in bfloat16 or float16, "
                 "products and convolutions on tensor cores, accumulation in float32)")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16", "fp16"}));
}

// The --precision value (checked by the option).
inline Precision precision_of(const std::string& name) { return parse_precision(name).value_or(Precision::kFp32); }

// The relative L2 error against the float32 interpreter that `bench` accepts
// by default at each precision (docs/gpu.md, "Precision"): 1e-4 at fp32;
// 5e-3 at tf32 (10 mantissa bits in the products' inputs, float32
// elsewhere) and at fp16 (10 bits everywhere); 2e-2 at bf16 (7 bits).
inline double default_tolerance(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return 1e-4;
    case Precision::kTf32:
      return 5e-3;
    case Precision::kFp16:
      return 5e-3;
    case Precision::kBf16:
      return 2e-2;
  }
  return 1e-4;
}

}  // namespace tgr::cli
