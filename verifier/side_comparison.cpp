#include "verifier/side_comparison.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "runtime/interpreter.h"

namespace tgr::verifier {

namespace {

std::vector<int64_t> unflatten(const Shape& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

}  // namespace

SideComparison compare_sides(const Rule& rule, std::span<const Tensor<double>> inputs) {
  SideComparison c;
  const auto lhs = evaluate<double>(rule.source, inputs);
  const auto rhs = evaluate<double>(rule.target, inputs);
  for (size_t k = 0; k < lhs.size(); ++k) {
    if (lhs[k].shape != rhs[k].shape) {
      c.mismatch = "output " + std::to_string(k) + " has shape " + shape_to_string(lhs[k].shape) + " on the left but " +
                   shape_to_string(rhs[k].shape) + " on the right";
      c.output = static_cast<int>(k);
      c.worst = HUGE_VAL;
      return c;
    }
    for (int64_t i = 0; i < lhs[k].size(); ++i) {
      const double l = lhs[k].data[i], r = rhs[k].data[i];
      double err = std::fabs(l - r) / std::max({1.0, std::fabs(l), std::fabs(r)});
      if (std::isnan(l) != std::isnan(r) || (std::isinf(l) || std::isinf(r) ? l != r : false)) err = HUGE_VAL;
      if (std::isnan(l) && std::isnan(r)) err = 0;
      if (err > c.worst || c.output < 0) {
        c.worst = std::max(c.worst, err);
        c.output = static_cast<int>(k);
        c.index = unflatten(lhs[k].shape, i);
        c.source = l;
        c.target = r;
      }
    }
  }
  return c;
}

std::string number_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string worst_element_text(const SideComparison& c) {
  std::string idx = "[";
  for (size_t d = 0; d < c.index.size(); ++d) idx += (d ? ", " : "") + std::to_string(c.index[d]);
  idx += "]";
  std::string s = "output ";
  s += std::to_string(c.output);
  s += " at " + idx + ": source " + number_text(c.source) + ", target " + number_text(c.target);
  return s;
}

std::string tensor_text(const Tensor<double>& t) {
  constexpr int64_t kShown = 16;
  std::string s = "[";
  for (int64_t i = 0; i < std::min(t.size(), kShown); ++i) s += (i ? ", " : "") + number_text(t.data[i]);
  if (t.size() > kShown) s += ", ... (" + std::to_string(t.size()) + " values)";
  return s + "]";
}

}  // namespace tgr::verifier
