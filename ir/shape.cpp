#include "ir/shape.h"

#include <charconv>
#include <limits>

#include "ir/tensor.h"

namespace tgr {

int64_t num_elements(const Shape& shape) {
  // Zero if any axis is empty, however large the others (a fuzzed ONNX
  // initializer of dims 0 x ... x 107 x 95 x ...); a product beyond int64
  // saturates, so that every limit refuses it.
  for (int64_t d : shape)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  return n;
}

bool indexable(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d != 0 && __builtin_mul_overflow(n, d, &n)) return false;
  return true;
}

void check_indexable(const Shape& shape, const std::string& what) {
  if (!indexable(shape))
    throw ShapeError(what + ": shape " + shape_to_string(shape) +
                     " has dimensions whose product exceeds what a 64-bit index can hold");
}

std::string shape_to_string(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

Shape parse_shape(std::string_view text) {
  if (text == "scalar") return {};
  Shape shape;
  size_t pos = 0;
  while (true) {
    size_t end = text.find('x', pos);
    std::string_view part = text.substr(pos, end == std::string_view::npos ? end : end - pos);
    int64_t d = 0;
    auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), d);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || d < 0)
      throw ShapeSyntaxError("bad shape '" + std::string(text) + "': expected dimensions like 1x3x8x8 or 'scalar'");
    shape.push_back(d);
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return shape;
}

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kFloat: return "float";
    case DType::kInt64: return "int64";
    case DType::kBool: return "bool";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  for (DType t : {DType::kFloat, DType::kInt64, DType::kBool, DType::kFloat16, DType::kBFloat16})
    if (dtype_name(t) == name) return t;
  throw ShapeError("unknown element type '" + std::string(name) + "' (float, int64, bool, float16 or bfloat16)");
}

}  // namespace tgr
