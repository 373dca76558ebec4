#include "runtime/precision.h"

#include "ir/float_types.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tgr {

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view name) {
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kBf16, Precision::kFp16})
    if (precision_name(p) == name) return p;
  return std::nullopt;
}

DType storage_dtype(DType t, Precision p) {
  if (t != DType::kFloat) return t;
  if (p == Precision::kBf16) return DType::kBFloat16;
  if (p == Precision::kFp16) return DType::kFloat16;
  return DType::kFloat;
}

void encode_floats(std::span<const float> values, DType t, void* out) {
  switch (t) {
    case DType::kFloat:
      std::memcpy(out, values.data(), values.size_bytes());
      return;
    case DType::kBFloat16: {
      auto* o = static_cast<uint16_t*>(out);
      for (size_t i = 0; i < values.size(); ++i) o[i] = bfloat16_bits(values[i]);
      return;
    }
    case DType::kFloat16: {
      auto* o = static_cast<uint16_t*>(out);
      for (size_t i = 0; i < values.size(); ++i) o[i] = float16_bits(values[i]);
      return;
    }
    case DType::kInt64:
    case DType::kBool:
      break;
  }
  throw std::invalid_argument("encode_floats: " + std::string(dtype_name(t)) + " is not a floating type");
}

void decode_floats(const void* in, DType t, std::span<float> values) {
  switch (t) {
    case DType::kFloat:
      std::memcpy(values.data(), in, values.size_bytes());
      return;
    case DType::kBFloat16: {
      const auto* b = static_cast<const uint16_t*>(in);
      for (size_t i = 0; i < values.size(); ++i) values[i] = bfloat16_value(b[i]);
      return;
    }
    case DType::kFloat16: {
      const auto* b = static_cast<const uint16_t*>(in);
      for (size_t i = 0; i < values.size(); ++i) values[i] = float16_value(b[i]);
      return;
    }
    case DType::kInt64:
    case DType::kBool:
      break;
  }
  throw std::invalid_argument("decode_floats: " + std::string(dtype_name(t)) + " is not a floating type");
}

}  // namespace tgr
