// The GPU runtime's precision and the element type each value is stored in
// on the device. Pure C++ (no CUDA), so the plan's sizes and the encodings
// are tested anywhere.
//
//   fp32: float32 storage, float32 math (cuBLAS default math, cuDNN FMA math: no TF32)
//   tf32: float32 storage, products and convolutions on TF32 tensor cores
//         (cuBLAS/cuBLASLt CUBLAS_COMPUTE_32F_FAST_TF32, cuDNN tensor-op math);
//         everything else as fp32
//   bf16, fp16: every float32 value and weight of the graph stored in
//         bfloat16 (float16), weights converted at upload, inputs converted
//         on the way in and outputs back to float32 on the way out; products
//         and convolutions on tensor cores accumulating in float32; every
//         other kernel loads the half type, computes in float32 (softmax,
//         layer norm, reductions and pooling accumulate in float32) and
//         rounds to the half type when it stores
//
// A value the graph itself types float16 or bfloat16 is stored in its own
// type at every precision; int64 and bool values are stored as int64.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "ir/float_types.h"
#include "ir/tensor.h"

namespace tgr {

enum class Precision : uint8_t { kFp32, kTf32, kBf16, kFp16 };

std::string_view precision_name(Precision p);  // "fp32", "tf32", "bf16", "fp16"
// nullopt for any other name.
std::optional<Precision> parse_precision(std::string_view name);
// For usage messages and option help.
inline constexpr std::string_view kPrecisionNames = "fp32, tf32, bf16 or fp16";

// The type a value of graph type `t` is stored in at precision `p`.
DType storage_dtype(DType t, Precision p);
// Products and convolutions of float32 values may run on TF32 tensor cores.
inline bool allows_tf32(Precision p) { return p == Precision::kTf32; }

// Bits of the half types from float32 and back: ir/float_types.h
// (float16_bits, bfloat16_bits, float16_value, bfloat16_value).

// `values` as storage type `t` (kFloat, kFloat16 or kBFloat16) at `out`,
// which holds values.size() * device_element_bytes(t) bytes; and back.
void encode_floats(std::span<const float> values, DType t, void* out);
void decode_floats(const void* in, DType t, std::span<float> values);

}  // namespace tgr
