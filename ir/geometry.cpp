#include "ir/geometry.h"

#include <algorithm>
#include <span>

#include <string>

namespace tgr {

namespace {

void same_padding(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t& begin,
                  int64_t& end) {
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - in);
  begin = total / 2;
  end = total - begin;
}

int64_t output_size(std::string_view op, const char* axis, int64_t in, int64_t pad_begin,
                    int64_t pad_end, int64_t kernel, int64_t stride, int64_t dilation) {
  const int64_t extent = (kernel - 1) * dilation + 1;
  const int64_t padded = in + pad_begin + pad_end;
  if (padded < extent)
    throw ShapeError(std::string(op) + ": window of " + std::to_string(extent) + " " + axis +
                     " does not fit the padded input of " + std::to_string(padded));
  return (padded - extent) / stride + 1;
}

}  // namespace

Window2d window_geometry(std::string_view op, const Params& params, int64_t in_h, int64_t in_w,
                         int64_t kernel_h, int64_t kernel_w, bool has_dilation) {
  Window2d w;
  w.in_h = in_h;
  w.in_w = in_w;
  w.kernel_h = kernel_h;
  w.kernel_w = kernel_w;
  const auto& stride = params.get_ints("stride");
  w.stride_h = stride[0];
  w.stride_w = stride[1];
  if (has_dilation) {
    const auto& dilation = params.get_ints("dilation");
    w.dilation_h = dilation[0];
    w.dilation_w = dilation[1];
  }
  const ParamValue& pad = params.get("pad");
  if (auto* word = std::get_if<std::string>(&pad)) {
    if (*word == "same") {
      same_padding(in_h, kernel_h, w.stride_h, w.dilation_h, w.pad_top, w.pad_bottom);
      same_padding(in_w, kernel_w, w.stride_w, w.dilation_w, w.pad_left, w.pad_right);
    }
  } else {
    const auto& p = std::get<std::vector<int64_t>>(pad);
    w.pad_top = p[0];
    w.pad_left = p[1];
    w.pad_bottom = p[2];
    w.pad_right = p[3];
  }
  w.out_h = output_size(op, "rows", in_h, w.pad_top, w.pad_bottom, kernel_h, w.stride_h, w.dilation_h);
  w.out_w = output_size(op, "columns", in_w, w.pad_left, w.pad_right, kernel_w, w.stride_w, w.dilation_w);
  return w;
}

Conv2dGeometry conv2d_geometry(const Params& params, const Shape& input, const Shape& weight) {
  if (input.size() != 4)
    throw ShapeError("conv2d: input must be 4-D (N x C x H x W), got " + shape_to_string(input));
  if (weight.size() != 4)
    throw ShapeError("conv2d: weight must be 4-D (O x C/groups x KH x KW), got " + shape_to_string(weight));
  Conv2dGeometry g;
  g.batch = input[0];
  g.in_channels = input[1];
  g.out_channels = weight[0];
  if (weight[1] <= 0 || input[1] % weight[1] != 0)
    throw ShapeError("conv2d: input channels " + std::to_string(input[1]) +
                     " are not a multiple of the weight's channels per group " + std::to_string(weight[1]));
  g.groups = input[1] / weight[1];
  if (g.out_channels % g.groups != 0)
    throw ShapeError("conv2d: output channels " + std::to_string(g.out_channels) +
                     " are not divisible by the " + std::to_string(g.groups) + " groups");
  if (weight[2] <= 0 || weight[3] <= 0)
    throw ShapeError("conv2d: empty kernel " + shape_to_string(weight));
  g.window = window_geometry("conv2d", params, input[2], input[3], weight[2], weight[3], true);
  return g;
}

bool pointwise_without_padding(const Shape& weight, const ParamValue& pad) {
  if (weight.size() != 4 || weight[2] != 1 || weight[3] != 1) return false;
  if (const auto* word = std::get_if<std::string>(&pad)) return *word == "valid" || *word == "same";
  const auto* pads = std::get_if<std::vector<int64_t>>(&pad);
  return pads && std::all_of(pads->begin(), pads->end(), [](int64_t p) { return p == 0; });
}

namespace ops {

void canonical_padding(Params& params, std::span<const Shape> shapes) {
  const auto* pads = std::get_if<std::vector<int64_t>>(&params.get("pad"));
  if (!pads) return;
  if (std::all_of(pads->begin(), pads->end(), [](int64_t p) { return p == 0; })) {
    params.set("pad", std::string("valid"));
    return;
  }
  const Shape& x = shapes[0];
  if (x.size() != 4) return;
  int64_t kh, kw;
  if (shapes.size() > 1) {  // conv2d: the kernel comes from the weight
    kh = shapes[1][2];
    kw = shapes[1][3];
  } else {
    const auto& k = params.get_ints("kernel");
    kh = k[0];
    kw = k[1];
  }
  Params same = params;
  same.set("pad", std::string("same"));
  const bool dilated = std::any_of(params.entries().begin(), params.entries().end(),
                                   [](const auto& e) { return e.first == "dilation"; });
  const Window2d w = window_geometry("pad", same, x[2], x[3], kh, kw, dilated);
  if (std::vector<int64_t>{w.pad_top, w.pad_left, w.pad_bottom, w.pad_right} == *pads) params.set("pad", std::string("same"));
}

}  // namespace ops
}  // namespace tgr
