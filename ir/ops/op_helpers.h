// Building blocks shared by the operator families in ir/ops/: parameter
// declarations, elementwise loops, broadcasting. Private to ir/.
#pragma once

#include <tbb/parallel_for.h>

#include <string>
#include <vector>

#include "ir/op_def.h"

namespace tgr::ops {

inline ParamSpec int_param(std::string name, std::optional<int64_t> def, int64_t min, int64_t max,
                           std::string doc) {
  ParamSpec p{.name = std::move(name), .kind = ParamKind::kInt, .min = min, .max = max, .doc = std::move(doc)};
  if (def) p.default_value = *def;
  return p;
}

inline ParamSpec ints_param(std::string name, std::optional<std::vector<int64_t>> def, int length,
                            int64_t min, std::string doc) {
  ParamSpec p{.name = std::move(name), .kind = ParamKind::kInts, .min = min, .length = length,
              .doc = std::move(doc)};
  if (def) p.default_value = *def;
  return p;
}

inline ParamSpec enum_param(std::string name, std::string def, std::vector<std::string> choices,
                            std::string doc) {
  return ParamSpec{.name = std::move(name), .kind = ParamKind::kEnum, .default_value = std::move(def),
                   .choices = std::move(choices), .doc = std::move(doc)};
}

// The window parameters shared by conv2d and the pools.
inline ParamSpec stride_param() { return ints_param("stride", std::vector<int64_t>{1, 1}, 2, 1, "rows x columns"); }
inline ParamSpec dilation_param() { return ints_param("dilation", std::vector<int64_t>{1, 1}, 2, 1, "rows x columns"); }
inline ParamSpec padding_param() {
  return ParamSpec{.name = "pad", .kind = ParamKind::kPadding, .default_value = std::string("same"),
                   .min = 0, .doc = "explicit order: top x left x bottom x right"};
}

// out[i] = f(in[i]), in parallel for large tensors.
template <class T, class F>
void map_elements(const Tensor<T>& in, Tensor<T>& out, F f) {
  const T* src = in.data.data();
  T* dst = out.data.data();
  const int64_t n = in.size();
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 1 << 15), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t i = r.begin(); i < r.end(); ++i) dst[i] = f(src[i]);
  });
}

// Multidirectional (NumPy/ONNX) broadcasting of two shapes; ShapeError otherwise.
Shape broadcast_shapes(std::string_view op, const Shape& a, const Shape& b);

// out[i] = f(a[ia], b[ib]) with a and b broadcast to out's shape.
template <class T, class F>
void map_broadcast(const Tensor<T>& a, const Tensor<T>& b, Tensor<T>& out, F f) {
  if (a.shape == b.shape) {
    const T* pa = a.data.data();
    const T* pb = b.data.data();
    T* po = out.data.data();
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, out.size(), 1 << 15),
                      [&](const tbb::blocked_range<int64_t>& r) {
                        for (int64_t i = r.begin(); i < r.end(); ++i) po[i] = f(pa[i], pb[i]);
                      });
    return;
  }
  const int rank = out.rank();
  // Strides of a and b in out's index space (0 along broadcast axes).
  std::vector<int64_t> sa(rank, 0), sb(rank, 0);
  auto fill = [&](const Shape& s, std::vector<int64_t>& strides) {
    const int off = rank - static_cast<int>(s.size());
    int64_t st = 1;
    for (int i = static_cast<int>(s.size()) - 1; i >= 0; --i) {
      strides[off + i] = s[i] == 1 ? 0 : st;
      st *= s[i];
    }
  };
  fill(a.shape, sa);
  fill(b.shape, sb);
  std::vector<int64_t> idx(rank, 0);
  int64_t ia = 0, ib = 0;
  for (int64_t o = 0; o < out.size(); ++o) {
    out.data[o] = f(a.data[ia], b.data[ib]);
    for (int ax = rank - 1; ax >= 0; --ax) {  // odometer increment
      ia += sa[ax];
      ib += sb[ax];
      if (++idx[ax] < out.shape[ax]) break;
      ia -= sa[ax] * out.shape[ax];
      ib -= sb[ax] * out.shape[ax];
      idx[ax] = 0;
    }
  }
}

// The activations, defined once: used by relu/sigmoid/tanh and by the fused
// activation of conv2d, so that `relu(conv2d(x, k))` and
// `conv2d[act=relu](x, k)` agree in every domain.
template <class T>
T relu_value(T x) {
  if constexpr (kIsField<T>) {
    static const uint64_t salt = field_salt("relu");
    return field_random_function(salt, x);
  } else {
    return x > T(0) ? x : T(0);
  }
}

}  // namespace tgr::ops
