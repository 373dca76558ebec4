// A dense row-major tensor over one numeric domain: float, double or Fp.
#pragma once

#include <vector>

#include "ir/field.h"
#include "ir/shape.h"

namespace tgr {

template <class T>
struct Tensor {
  Shape shape;
  std::vector<T> data;

  Tensor() = default;
  explicit Tensor(Shape s) : shape(std::move(s)), data(static_cast<size_t>(num_elements(shape))) {}
  Tensor(Shape s, std::vector<T> values) : shape(std::move(s)), data(std::move(values)) {
    if (static_cast<int64_t>(data.size()) != num_elements(shape))
      throw ShapeError("tensor of shape " + shape_to_string(shape) + " given " +
                       std::to_string(data.size()) + " values");
  }

  int64_t size() const { return static_cast<int64_t>(data.size()); }
  int rank() const { return static_cast<int>(shape.size()); }
};

// The three domains every operator is defined over.
template <class T>
inline constexpr bool kIsField = std::is_same_v<T, Fp>;

}  // namespace tgr
