// conv2d (im2col + gemm, groups derived from the shapes, optional fused relu)
// and enlarge (zero-pad a kernel to a larger size, centred).
#include <tbb/parallel_for.h>

#include "ir/geometry.h"
#include "ir/kernels/gemm.h"
#include "ir/ops/families.h"
#include "ir/ops/op_helpers.h"

namespace tgr {
namespace {

std::vector<Shape> conv2d_shapes(const OpCall& call) {
  const Conv2dGeometry g = conv2d_geometry(call.params, call.input_shapes[0], call.input_shapes[1]);
  return {{g.batch, g.out_channels, g.window.out_h, g.window.out_w}};
}

// Gathers the receptive fields of one group of one image into a
// (channels * KH * KW) x (OH * OW) matrix; padding reads as zero.
template <class T>
void im2col(const T* image, int64_t channels, const Window2d& w, T* col) {
  const int64_t positions = w.out_h * w.out_w;
  const int64_t rows = channels * w.kernel_h * w.kernel_w;
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, 16), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t row = r.begin(); row < r.end(); ++row) {
      const int64_t c = row / (w.kernel_h * w.kernel_w);
      const int64_t kh = row / w.kernel_w % w.kernel_h;
      const int64_t kw = row % w.kernel_w;
      const T* plane = image + c * w.in_h * w.in_w;
      T* dst = col + row * positions;
      for (int64_t oh = 0; oh < w.out_h; ++oh) {
        const int64_t ih = oh * w.stride_h - w.pad_top + kh * w.dilation_h;
        T* dst_row = dst + oh * w.out_w;
        if (ih < 0 || ih >= w.in_h) {
          std::fill(dst_row, dst_row + w.out_w, T{});
          continue;
        }
        const T* src_row = plane + ih * w.in_w;
        for (int64_t ow = 0; ow < w.out_w; ++ow) {
          const int64_t iw = ow * w.stride_w - w.pad_left + kw * w.dilation_w;
          dst_row[ow] = (iw >= 0 && iw < w.in_w) ? src_row[iw] : T{};
        }
      }
    }
  });
}

template <class T>
void conv2d_kernel(const OpCall& call, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const Tensor<T>& x = *in[0];
  const Tensor<T>& weight = *in[1];
  const Conv2dGeometry g = conv2d_geometry(call.params, x.shape, weight.shape);
  const Window2d& w = g.window;
  const int64_t cg = g.in_channels_per_group(), og = g.out_channels_per_group();
  const int64_t depth = cg * w.kernel_h * w.kernel_w;
  const int64_t positions = w.out_h * w.out_w;
  // A 1x1 kernel with unit stride and no padding reads the image as it is.
  const bool direct = w.kernel_h == 1 && w.kernel_w == 1 && w.stride_h == 1 && w.stride_w == 1 &&
                      w.pad_top == 0 && w.pad_left == 0 && w.pad_bottom == 0 && w.pad_right == 0;

  auto convolve_group = [&](int64_t n, int64_t group, std::vector<T>& col) {
    const T* image = x.data.data() + (n * g.in_channels + group * cg) * w.in_h * w.in_w;
    const T* rhs = image;
    if (!direct) {
      col.resize(depth * positions);
      im2col(image, cg, w, col.data());
      rhs = col.data();
    }
    gemm<T>(og, positions, depth, weight.data.data() + group * og * depth, depth, rhs, positions,
            out[0].data.data() + (n * g.out_channels + group * og) * positions, positions);
  };
  if (g.groups >= 4) {  // many small groups (depthwise, ResNeXt): parallel over groups
    tbb::parallel_for(int64_t{0}, g.batch * g.groups, [&](int64_t task) {
      std::vector<T> col;
      convolve_group(task / g.groups, task % g.groups, col);
    });
  } else {
    std::vector<T> col;
    for (int64_t n = 0; n < g.batch; ++n)
      for (int64_t group = 0; group < g.groups; ++group) convolve_group(n, group, col);
  }
  if (call.params.get_word("act") == "relu")
    for (T& v : out[0].data) v = ops::relu_value(v);
}

std::vector<Shape> enlarge_shapes(const OpCall& call) {
  const Shape& k = call.input_shapes[0];
  const auto& size = call.params.get_ints("size");
  if (k.size() != 4) throw ShapeError("enlarge: kernel must be 4-D, got " + shape_to_string(k));
  for (int axis = 0; axis < 2; ++axis) {
    const int64_t grow = size[axis] - k[2 + axis];
    if (grow < 0 || grow % 2 != 0)
      throw ShapeError("enlarge: cannot centre a " + shape_to_string({k[2], k[3]}) + " kernel in " +
                       shape_to_string(size) + " (each size must grow by an even amount)");
  }
  return {{k[0], k[1], size[0], size[1]}};
}

template <class T>
void enlarge_kernel(const OpCall&, std::span<const Tensor<T>* const> in, std::span<Tensor<T>> out) {
  const Tensor<T>& k = *in[0];
  Tensor<T>& o = out[0];
  const int64_t planes = k.shape[0] * k.shape[1], kh = k.shape[2], kw = k.shape[3];
  const int64_t oh = o.shape[2], ow = o.shape[3];
  const int64_t top = (oh - kh) / 2, left = (ow - kw) / 2;
  std::fill(o.data.begin(), o.data.end(), T{});
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) o.data[(p * oh + i + top) * ow + j + left] = k.data[(p * kh + i) * kw + j];
}

}  // namespace

void register_convolution_ops(OpTable& table) {
  using namespace ops;
  table.add({.name = "conv2d",
             .summary = "2-D convolution, NCHW; groups = input channels / weight.shape[1]",
             .inputs = {"x", "weight"},
             .params = {stride_param(), padding_param(), dilation_param(),
                        enum_param("act", "none", {"none", "relu"}, "fused activation")},
             .infer_shapes = conv2d_shapes,
             .kernels = TGR_KERNELS(conv2d_kernel),
             .field = FieldSemantics::kExact,  // the fused relu uses relu's pseudo-random function
             .multilinear = {true, true},
             .nonlinear_when = [](const Params& p) { return p.get_word("act") != "none"; },
             .canonicalize = ops::canonical_padding,
             .cost = {.flops =
                          [](const OpCall& call) {  // a multiply-add per weight of each output's window
                            const Shape& w = call.input_shapes[1];
                            return 2.0 * output_elements(call) * static_cast<double>(w[1] * w[2] * w[3]);
                          },
                      .bytes = operand_bytes}});
  table.add({.name = "enlarge",
             .summary = "zero-pad a kernel O x I x kh x kw to O x I x size, centred",
             .inputs = {"kernel"},
             .params = {shape_dependent(ints_param("size", std::nullopt, 2, 1, "rows x columns"))},
             .infer_shapes = enlarge_shapes,
             .kernels = TGR_KERNELS(enlarge_kernel),
             .multilinear = {true},
             .traits = layout_traits(),  // a pad of the two last axes
             .cost = per_output_element_cost()});
}

}  // namespace tgr
