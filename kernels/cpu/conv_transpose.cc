// conv2d_transpose: MindSpore's Conv2dTranspose, the gradient of conv2d with respect to its
// input run forward. The output size follows from the input size and pad_mode, and the work is
// Conv2DGradInput's (oneDNN's backward-data convolution or the direct kernels).
#include <algorithm>

#include "absl/strings/str_format.h"
#include "kernels/errors.h"
#include "kernels/ops.h"

namespace pijit {
namespace {

// The output's spatial size along one axis (0 = H, 1 = W).
int64_t TransposedSize(int64_t in, int axis, int64_t kernel, const Window2D& win,
                       const ConvTransposeShape& out) {
  const int64_t s = win.stride[axis], extent = win.dilation[axis] * (kernel - 1) + 1;
  if (win.same) return in * s;
  if (out.valid) return in * s + std::max<int64_t>(extent - s, 0);
  const int64_t pads = win.pad[2 * axis] + win.pad[2 * axis + 1];
  return (in - 1) * s - pads + extent + out.output_padding[axis];
}

}  // namespace

absl::StatusOr<TensorMeta> InferConv2DTranspose(const TensorMeta& x, const TensorMeta& w,
                                                const TensorMeta* bias, const Window2D& win,
                                                const ConvTransposeShape& out) {
  constexpr const char* op = "conv2d_transpose";
  if (x.shape.size() != 4 || w.shape.size() != 4) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: expects a 4-D input (N, C, H, W) and a 4-D weight (C, O/groups, KH, KW), got %s and %s",
        op, ShapeToString(x.shape), ShapeToString(w.shape)));
  }
  if (x.dtype != w.dtype || !IsFloating(x.dtype)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: input and weight must have the same floating dtype, got %s and %s", op,
        DTypeName(x.dtype), DTypeName(w.dtype)));
  }
  if (x.shape[1] != w.shape[0]) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the input has %d channels but the weight %s expects %d (its first axis)", op,
        x.shape[1], ShapeToString(w.shape), w.shape[0]));
  }
  const int64_t* out_pad = out.output_padding;
  for (int axis = 0; axis < 2; ++axis) {
    if (out_pad[axis] < 0 || out_pad[axis] >= win.stride[axis]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: output_padding must be non-negative and smaller than the stride, got (%d, %d) "
          "with stride (%d, %d)", op, out_pad[0], out_pad[1], win.stride[0], win.stride[1]));
    }
    if (out_pad[axis] != 0 && (win.same || out.valid)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: output_padding needs pad_mode 'pad', got (%d, %d) with pad_mode '%s'", op,
          out_pad[0], out_pad[1], win.same ? "same" : "valid"));
    }
  }
  const int64_t out_channels = w.shape[1] * win.groups;
  const Shape y{x.shape[0], out_channels,
                TransposedSize(x.shape[2], 0, w.shape[2], win, out),
                TransposedSize(x.shape[3], 1, w.shape[3], win, out)};
  if (y[2] <= 0 || y[3] <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the padding leaves no output: input %s, weight %s give spatial size (%d, %d)", op,
        ShapeToString(x.shape), ShapeToString(w.shape), y[2], y[3]));
  }
  if (bias != nullptr && (bias->dtype != x.dtype || bias->shape != Shape{out_channels})) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: bias must be a %s vector of the %d output channels, got %s %s", op,
        DTypeName(x.dtype), out_channels, DTypeName(bias->dtype), ShapeToString(bias->shape)));
  }
  // The shape checks of the convolution this transposes (groups, kernel against padding).
  PIJIT_ASSIGN_OR_RETURN(TensorMeta back, InferConv2DGradInput(x, w, y, win));
  return back;
}

absl::StatusOr<Tensor> Conv2DTranspose(const Tensor& x, const Tensor& w, const Tensor* bias,
                                       const Window2D& win, const ConvTransposeShape& out) {
  const TensorMeta bias_meta = bias ? MetaOf(*bias) : TensorMeta{};
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferConv2DTranspose(MetaOf(x), MetaOf(w),
                                                               bias ? &bias_meta : nullptr, win,
                                                               out));
  PIJIT_ASSIGN_OR_RETURN(Tensor y, Conv2DGradInput(x, w, meta.shape, win));
  if (bias == nullptr) return y;
  PIJIT_ASSIGN_OR_RETURN(Tensor b, Reshape(*bias, {1, meta.shape[1], 1, 1}));
  return Binary(BinaryOp::kAdd, y, b);
}

}  // namespace pijit
