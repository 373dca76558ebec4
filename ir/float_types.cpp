#include "ir/float_types.h"

#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace tgr {

// IEEE binary16 by its bits (portable: clang before 15 has no 16-bit float
// type on x86-64), rounding to nearest even; overflow to infinity, NaN stays
// NaN, subnormals kept.
uint16_t float16_bits(float v) {
  const uint32_t b = std::bit_cast<uint32_t>(v);
  const uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000);
  const uint32_t magnitude = b & 0x7fffffff;
  if (magnitude > 0x7f800000) return sign | 0x7e00;   // NaN
  if (magnitude >= 0x477ff000) return sign | 0x7c00;  // rounds to 65536 or more: infinity
  if (magnitude >= 0x38800000) {                      // normal in float16 (2^-14 and up)
    const uint32_t rounded = magnitude + 0xfff + ((magnitude >> 13) & 1);
    return sign | static_cast<uint16_t>((rounded - 0x38000000) >> 13);
  }
  // Subnormal in float16 (or zero): the value in units of 2^-24, rounded to even.
  const float units = std::bit_cast<float>(magnitude) * 16777216.0f;  // exact: a power-of-two scale
  return sign | static_cast<uint16_t>(std::nearbyint(units));
}

float float16_value(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  if (exponent == 0) {
    const float v = static_cast<float>(mantissa) / 16777216.0f;  // subnormal: mantissa * 2^-24
    return sign ? -v : v;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000 | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

// bfloat16 is the top half of a float32: add half an ulp of the kept part
// (less one when the kept part is even, so ties go to even) and truncate.
uint16_t bfloat16_bits(float v) {
  const uint32_t u = std::bit_cast<uint32_t>(v);
  if (std::isnan(v)) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN, sign kept
  const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}
float bfloat16_value(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

namespace {

// double -> float rounding to odd: truncate toward zero, then set the last
// bit when the result is inexact. Rounding that to a type of at most 22
// significant bits (bfloat16 has 8, float16 11) gives the correctly
// rounded result.
float to_float_round_to_odd(double v) {
  if (!std::isfinite(v)) return static_cast<float>(v);
  float f = static_cast<float>(v);
  if (static_cast<double>(f) == v) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
  uint32_t u = std::bit_cast<uint32_t>(f);
  if (std::isinf(f)) return f;
  return std::bit_cast<float>(u | 1u);
}

}  // namespace

float round_to_dtype(DType t, float v) {
  switch (t) {
    case DType::kFloat16:
      return float16_value(float16_bits(v));
    case DType::kBFloat16:
      return bfloat16_value(bfloat16_bits(v));
    default:
      return v;
  }
}

double round_to_dtype(DType t, double v) {
  switch (t) {
    case DType::kFloat16:
      return float16_value(float16_bits(to_float_round_to_odd(v)));
    case DType::kBFloat16:
      return bfloat16_value(bfloat16_bits(to_float_round_to_odd(v)));
    default:
      return v;
  }
}

void round_to_dtype(DType t, std::span<float> values) {
  if (t != DType::kFloat16 && t != DType::kBFloat16) return;
  for (float& v : values) v = round_to_dtype(t, v);
}

void round_to_dtype(DType t, std::span<double> values) {
  if (t != DType::kFloat16 && t != DType::kBFloat16) return;
  for (double& v : values) v = round_to_dtype(t, v);
}

uint16_t half_bits(DType t, float v) {
  if (t == DType::kFloat16) return float16_bits(v);
  if (t == DType::kBFloat16) return bfloat16_bits(v);
  throw std::logic_error("half_bits: " + std::string(dtype_name(t)) + " is not a 16-bit type");
}

float half_value(DType t, uint16_t bits) {
  if (t == DType::kFloat16) return float16_value(bits);
  if (t == DType::kBFloat16) return bfloat16_value(bits);
  throw std::logic_error("half_value: " + std::string(dtype_name(t)) + " is not a 16-bit type");
}

bool RuleTypeBinding::bind(DType pattern, DType model) {
  if (pattern != DType::kFloat) return pattern == model;
  if (!is_floating(model) || (count_ > 0 && bound_ != model)) return false;
  bound_ = model;
  ++count_;
  return true;
}

void RuleTypeBinding::unbind(DType pattern) {
  if (pattern == DType::kFloat) --count_;
}

int element_bytes(DType t) {
  switch (t) {
    case DType::kFloat:
      return 4;
    case DType::kInt64:
      return 8;
    case DType::kBool:
      return 1;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
  }
  return 0;
}

}  // namespace tgr
