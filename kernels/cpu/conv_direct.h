// Direct float32 convolutions for stride 1, dilation 1 and few channels per group (LeNet's
// layers, the first layer of most image networks), forward and both gradients.
//
// Each image's zero-padded planes are laid out row after row, so a stride-1 convolution is a
// one-dimensional one over the flattened plane: output position p = oh * Wp + ow reads input
// p + kh * Wp + kw. Computing every p in [0, (OH - 1) * Wp + OW) in full vectors (the columns
// ow >= OW are computed and dropped) gives long contiguous loads and register-blocked
// multiply-adds over several output channels at once, where oneDNN 2.6 falls back to its
// GEMM-based kernels for these shapes. The gradient with respect to the input is the forward
// convolution of the output gradient, padded by the kernel size less one, with the weights
// flipped and transposed; the gradient with respect to the weights accumulates
// output-gradient planes (zero in the dropped columns) against shifted input planes.
//
// Compiled for AVX-512, AVX2+FMA and SSE2 (chosen for the host at run time). Sums run in a
// fixed order for a given problem and instruction set, whatever the number of threads.
// The computed-and-dropped columns multiply real or padding values: with an infinity or NaN
// anywhere in the operands those products could leak into kept results, so the entry points
// return false on non-finite operands (found while copying them) and callers then run their
// exact kernels instead.
#pragma once
#include <cstdint>

namespace pijit::conv_direct {

// x[N, C, H, W] (*) w[O, C / groups, KH, KW] -> [N, O, OH, OW], stride 1, dilation 1.
struct Problem {
  int64_t n, c, h, w, o, kh, kw, groups;
  int64_t pad[4];  // top, bottom, left, right
  int64_t out_h() const { return h + pad[0] + pad[1] - kh + 1; }
  int64_t out_w() const { return w + pad[2] + pad[3] - kw + 1; }
};

// Whether these kernels take the problem (float32, stride and dilation 1 are the caller's
// part): few channels per group, padding within the kernel size, a non-empty output.
bool Applies(const Problem& p);

// All pointers are to contiguous float32 data; `bias` may be null. Each returns false, with
// its output untouched, when an operand holds an infinity or NaN (found before any output is
// written).
// Forward's `relu` applies relu to the result as it is written (NaN stays NaN).
bool Forward(const Problem& p, const float* x, const float* w, const float* bias, float* out,
             bool relu = false);
// An epilogue applied to each finished result as it is written, in this order, each rounded
// as the separate op would: + channel_bias[o] (after the sums, which start from `bias`),
// + residual (same layout as the output), relu. The operands need not be finite.
struct Epilogue {
  const float* channel_bias = nullptr;  // [O]
  const float* residual = nullptr;      // [N, O, OH, OW]
  bool relu = false;
};
bool Forward(const Problem& p, const float* x, const float* w, const float* bias, float* out,
             const Epilogue& epi);
bool GradInput(const Problem& p, const float* dy, const float* w, float* dx);
bool GradWeight(const Problem& p, const float* x, const float* dy, float* dw);

// Tests: 0 chooses for the host; 1 forces SSE2, 2 AVX2+FMA, 3 AVX-512 (when the host has it).
void ForceIsaForTesting(int isa);
// The instruction set the kernels run with now (1, 2 or 3).
int ActiveIsa();

}  // namespace pijit::conv_direct
