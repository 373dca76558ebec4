// The half-precision element types (float16, bfloat16): their 16-bit
// encodings and rounding to them. Values of every floating type are held as
// float32 or float64 reals (every float16 and bfloat16 number is exactly a
// float32); a half-typed value is one whose reals are all representable in
// its type. Rounding is IEEE round-to-nearest-even, overflow to infinity,
// NaN kept a NaN.
#pragma once

#include <cstdint>
#include <span>

#include "ir/tensor.h"

namespace tgr {

uint16_t float16_bits(float v);       // rounds to nearest even
float float16_value(uint16_t bits);   // exact
uint16_t bfloat16_bits(float v);      // rounds to nearest even
float bfloat16_value(uint16_t bits);  // exact

// The nearest number of half type `t` (rounding once, also from double); the
// identity for kFloat and the integer types (a float64 domain keeps kFloat
// values in float64: it is the real semantics, not float32's).
float round_to_dtype(DType t, float v);
double round_to_dtype(DType t, double v);

// Rounds every element in place to half type `t` (no-op for the others).
void round_to_dtype(DType t, std::span<float> values);
void round_to_dtype(DType t, std::span<double> values);

// The 16-bit encoding of a float16/bfloat16 value and back (`t` is one of the two).
uint16_t half_bits(DType t, float v);
float half_value(DType t, uint16_t bits);

// The float type one match of a rule binds. Rules are written over float
// (kFloat) variables and hold over the reals, so a rule matches values of
// any one floating type; it never mixes types across its variables (its
// target would add a float16 to a bfloat16). A pattern variable of type
// `pattern` accepts a model value of type `model` (bind returns true) when
// the types are equal, or `pattern` is kFloat, `model` is floating and every
// kFloat variable bound so far has that same type. Each accepted bind is
// undone by unbind(pattern) when the matcher backtracks.
class RuleTypeBinding {
 public:
  bool bind(DType pattern, DType model);
  void unbind(DType pattern);

 private:
  DType bound_ = DType::kFloat;
  int count_ = 0;  // kFloat variables bound to `bound_`
};

// Bytes one element of `t` takes in a file or on a device: 4, 8, 1, 2, 2.
int element_bytes(DType t);

}  // namespace tgr
