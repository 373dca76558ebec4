#include "runtime/precision.h"

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

namespace {
uint32_t bits_of(float v) {
  uint32_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
float float_of(uint32_t b) {
  float v = 0;
  std::memcpy(&v, &b, sizeof v);
  return v;
}
}  // namespace

uint16_t float_to_bfloat16_bits(float v) {
  const uint32_t b = bits_of(v);
  if (std::isnan(v)) return static_cast<uint16_t>((b >> 16) | 0x40);  // quiet, sign kept
  const uint32_t rounding = 0x7fff + ((b >> 16) & 1);                 // to nearest, ties to even
  return static_cast<uint16_t>((b + rounding) >> 16);
}

float bfloat16_bits_to_float(uint16_t bits) { return float_of(static_cast<uint32_t>(bits) << 16); }

uint16_t float_to_float16_bits(float v) {
  const uint32_t b = bits_of(v);
  const uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000);
  const uint32_t magnitude = b & 0x7fffffff;
  if (magnitude > 0x7f800000) return sign | 0x7e00;   // NaN
  if (magnitude >= 0x477ff000) return sign | 0x7c00;  // rounds to 65536 or more: infinity
  if (magnitude >= 0x38800000) {                      // normal in float16 (2^-14 and up)
    const uint32_t rounded = magnitude + 0xfff + ((magnitude >> 13) & 1);
    return sign | static_cast<uint16_t>((rounded - 0x38000000) >> 13);
  }
  // Subnormal in float16 (or zero): the value in units of 2^-24, rounded to even.
  const float units = float_of(magnitude) * 16777216.0f;  // exact: a power-of-two scale
  return sign | static_cast<uint16_t>(std::nearbyint(units));
}

float float16_bits_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  if (exponent == 0) {
    const float v = static_cast<float>(mantissa) / 16777216.0f;  // subnormal: mantissa * 2^-24
    return sign ? -v : v;
  }
  if (exponent == 31) return float_of(sign | 0x7f800000 | (mantissa << 13));
  return float_of(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

void encode_floats(std::span<const float> values, DType t, void* out) {
  switch (t) {
    case DType::kFloat:
      std::memcpy(out, values.data(), values.size_bytes());
      return;
    case DType::kBFloat16: {
      auto* o = static_cast<uint16_t*>(out);
      for (size_t i = 0; i < values.size(); ++i) o[i] = float_to_bfloat16_bits(values[i]);
      return;
    }
    case DType::kFloat16: {
      auto* o = static_cast<uint16_t*>(out);
      for (size_t i = 0; i < values.size(); ++i) o[i] = float_to_float16_bits(values[i]);
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
      for (size_t i = 0; i < values.size(); ++i) values[i] = bfloat16_bits_to_float(b[i]);
      return;
    }
    case DType::kFloat16: {
      const auto* b = static_cast<const uint16_t*>(in);
      for (size_t i = 0; i < values.size(); ++i) values[i] = float16_bits_to_float(b[i]);
      return;
    }
    case DType::kInt64:
    case DType::kBool:
      break;
  }
  throw std::invalid_argument("decode_floats: " + std::string(dtype_name(t)) + " is not a floating type");
}

}  // namespace tgr
