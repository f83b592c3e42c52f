// Depthwise float32 NCHW convolutions (groups == input channels, each input channel feeding
// `multiplier` output channels: MobileNet's and EfficientNet's layers), forward and both
// gradients, for any stride, dilation and padding.
//
// Depthwise convolutions do a few multiply-adds per element they read and write, so they are
// bound by memory, not arithmetic; oneDNN's GEMM-based backward kernels and the direct
// kernels of conv_direct.h (which pad copies and compute dropped columns) fall far below that
// bound. Here each output row is a sum of input rows scaled by one weight each: the runs where
// every tap lies inside the image go through vector loops over contiguous rows (strided
// columns are first split into `stride` phases, so a strided run is contiguous too), the few
// border columns through scalar loops that skip padded taps. Padding is never multiplied, so
// infinities and NaNs give the results of the loops that skip padded taps.
//
// The weight gradient sums in float32 vector accumulators per image plane and adds the
// planes' sums in double, in an order fixed by the problem alone (not the thread count).
// Compiled for AVX-512, AVX2+FMA and SSE2, chosen for the host at run time.
#pragma once
#include <cstdint>

namespace pijit::conv_depthwise {

// x[N, C, H, W] (*) w[C * multiplier, 1, KH, KW] -> [N, C * multiplier, OH, OW], groups C.
struct Problem {
  int64_t n, c, h, w, multiplier, kh, kw;
  int64_t stride[2], dilation[2];
  int64_t pad[4];  // top, bottom, left, right (may be negative: the gradient crops)
  int64_t out_h, out_w;
};

// Whether these kernels take the problem: all sizes positive, groups == channels and more
// than one channel (a single-channel convolution is conv_direct.h's).
bool Applies(const Problem& p);

// Contiguous float32 operands; `bias` may be null. Every output element is written.
void Forward(const Problem& p, const float* x, const float* w, const float* bias, float* out);
void GradInput(const Problem& p, const float* dy, const float* w, float* dx);
void GradWeight(const Problem& p, const float* x, const float* dy, float* dw);

// Tests: 0 chooses for the host; 1 forces SSE2, 2 AVX2+FMA, 3 AVX-512 (when the host has it).
void ForceIsaForTesting(int isa);
// The instruction set the kernels run with now (1, 2 or 3).
int ActiveIsa();

}  // namespace pijit::conv_depthwise
