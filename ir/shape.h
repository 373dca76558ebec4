// Tensor shapes and the errors shape inference raises.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tgr {

// Dimensions, outermost first. A rank-0 shape is a scalar.
using Shape = std::vector<int64_t>;

// The product of the dimensions: 0 when an axis is empty; INT64_MAX when the
// product does not fit (limits refuse such a shape).
int64_t num_elements(const Shape& shape);

// Whether the nonzero dimensions multiply within int64: what the strides and
// offsets a kernel computes over the shape need, an empty tensor's too (a
// fuzzed 0 x 2^61 x 65 holds no element, but its inner stride overflows).
bool indexable(const Shape& shape);

// ShapeError naming `what` (an operator, an input) unless indexable(shape).
void check_indexable(const Shape& shape, const std::string& what);

// "1x3x8x8"; a scalar prints as "scalar".
std::string shape_to_string(const Shape& shape);

// Shape text that does not parse ("1x?x8", "x0" without "=DIMS"). A kind of
// std::invalid_argument, as it always was, so that callers can tell bad input
// text (skip it, report it) from a program's own misuse of an interface.
class ShapeSyntaxError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Inverse of shape_to_string; throws ShapeSyntaxError naming the bad text.
Shape parse_shape(std::string_view text);

// Row-major strides of `shape` in elements.
std::vector<int64_t> row_major_strides(const Shape& shape);

// Raised by shape inference and parameter checks: the message names the
// operator and what is wrong, e.g. "matmul: inner dimensions differ (3 vs 4)".
class ShapeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tgr
