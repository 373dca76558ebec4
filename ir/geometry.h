// Geometry of the sliding-window operators (conv2d, avgpool, maxpool),
// defined once so that shape inference, every kernel and (later) the region
// checker and GPU runtime agree on padding and rounding.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "ir/params.h"
#include "ir/shape.h"

namespace tgr {

struct Window2d {
  int64_t in_h = 0, in_w = 0;        // input spatial size
  int64_t kernel_h = 0, kernel_w = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t out_h = 0, out_w = 0;
};

// Resolves the `pad` parameter ("same", "valid", or explicit T x L x B x R)
// and computes the output size:
//   out = floor((in + pad_begin + pad_end - ((k - 1) * dilation + 1)) / stride) + 1
// "same" gives out = ceil(in / stride), the total padding split with the
// extra element at the end (ONNX SAME_UPPER). `params` must hold `stride`
// and `pad`, and `dilation` if the operator has one. Raises ShapeError
// naming `op` when the window does not fit.
Window2d window_geometry(std::string_view op, const Params& params, int64_t in_h, int64_t in_w,
                         int64_t kernel_h, int64_t kernel_w, bool has_dilation);

// conv2d: input N x C x H x W, weight O x (C / groups) x KH x KW. The number
// of groups is derived from the shapes, groups = C / weight.shape[1], so a
// rule that concatenates kernels along the output-channel axis stays correct.
struct Conv2dGeometry {
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1;
  Window2d window;
  int64_t in_channels_per_group() const { return in_channels / groups; }
  int64_t out_channels_per_group() const { return out_channels / groups; }
};

Conv2dGeometry conv2d_geometry(const Params& params, const Shape& input, const Shape& weight);

// A 1 x 1 convolution (`weight` O x I x 1 x 1) whose padding `pad` reads
// nothing: 'valid', 'same' or all-zero pads are then one convolution (axiom
// conv2d_pointwise_padding).
bool pointwise_without_padding(const Shape& weight, const ParamValue& pad);

namespace ops {
// Explicit padding equal to what `same` gives becomes `same`, all zeros
// `valid`: one window, one text and one hash (so imported models and rules
// match). shapes[0] is the input; conv2d's shapes[1] the weight.
void canonical_padding(Params& params, std::span<const Shape> shapes);
}  // namespace ops

}  // namespace tgr
