// oneDNN's float32 convolution as the conv2d kernels run it (kernels/cpu/conv.cc): over NCHW
// tensors, or over tensors held in oneDNN's blocked activation layouts (nChw8c, nChw16c: a
// [N, C, H, W] tensor stored as the plain [N, C/b, H, W, b] one, kernels/blocked_layout.h),
// which compiled graphs keep between convolutions so that no reorder runs there.
#pragma once
#include "kernels/cpu/window.h"

namespace pijit::conv_onednn {

// x [N, C, H, W] or blocked [N, C/b, H, W, b] (x_block = b), the result likewise
// (out_block); weights [O, C/groups, KH, KW] and a bias [O] (or null), contiguous.
struct Operands {
  const Tensor& x;
  const Tensor& w;
  const Tensor* bias;
  Tensor& out;
  int64_t x_block = 0;
  int64_t out_block = 0;
};

// Runs the convolution with the post-ops `post` (kAdd, kMul and activations other than relu;
// each kAdd and kMul reads the next of `binaries`: contiguous tensors of the result's shape
// and layout, or channel vectors). Returns false, with the result untouched, when oneDNN
// cannot build that primitive.
bool Run(const Operands& d, const Geometry2D& g, const Window2D& win,
         absl::Span<const int64_t> post = {}, absl::Span<const Tensor> binaries = {});

// The activation layouts oneDNN's primitive for the plain problem (no bias, no post-ops)
// computes in: the block of its input and of its result, 0 where it is NCHW or another.
struct Layouts {
  int64_t src_block = 0;
  int64_t dst_block = 0;
};
Layouts ChosenLayouts(const Shape& xs, const Shape& ws, const Geometry2D& g,
                      const Window2D& win);

}  // namespace pijit::conv_onednn
