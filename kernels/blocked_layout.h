// oneDNN's blocked activation layouts (nChw8c, nChw16c), which compiled graphs keep between
// convolutions, poolings and the elementwise ops around them (graph/passes/
// layout_assignment.h) so that the reorders oneDNN's convolutions need run only where the
// graph leaves the blocked ops, not around every convolution.
//
// A [N, C, H, W] tensor in the layout of block b (8 or 16, C a multiple of b) is held as the
// plain tensor [N, C/b, H, W, b]: element (n, c, h, w) at [n, c / b, h, w, c % b]. A channel
// vector [1, C, 1, 1] reshaped to [1, C/b, 1, 1, b] broadcasts against it as the vector did
// against the NCHW tensor, so elementwise ops run on blocked tensors unchanged.
#pragma once
#include "kernels/ops.h"

namespace pijit {

// Whether `block` is a blocked layout of `channels` channels: 8 or 16 dividing them (oneDNN's
// nChw8c, nChw16c), or all of them (NHWC: [N, 1, H, W, C]).
inline bool IsChannelBlock(int64_t channels, int64_t block) {
  return block > 0 && channels % block == 0 && (block == 8 || block == 16 || block == channels);
}

// The block of a tensor of shape `s` held blocked ([N, C/b, H, W, b]), 0 for other shapes.
inline int64_t BlockOfShape(const Shape& s) { return s.size() == 5 ? s[4] : 0; }

// [N, C, H, W] for a blocked shape [N, C/b, H, W, b]; other shapes as they are.
inline Shape PlainShapeOfBlocked(const Shape& s) {
  if (s.size() != 5) return s;
  return {s[0], s[1] * s[4], s[2], s[3]};
}

// x [N, C, H, W] (float32, C a multiple of `block`, 8 or 16) -> [N, C/block, H, W, block];
// x blocked in another block ([N, C/b, H, W, b]) is reordered straight into `block`.
absl::StatusOr<TensorMeta> InferToBlocked(const TensorMeta& x, int64_t block);
absl::StatusOr<Tensor> ToBlocked(const Tensor& x, int64_t block);
// The inverse: [N, C/b, H, W, b] -> [N, C, H, W].
absl::StatusOr<TensorMeta> InferFromBlocked(const TensorMeta& x);
absl::StatusOr<Tensor> FromBlocked(const Tensor& x);

// The blocks of a convolution that runs in blocked layouts: its input's (0: it reads NCHW)
// and its result's.
struct ConvBlocks {
  int64_t input = 0;
  int64_t result = 0;
};
// Whether Conv2DEpilogue's problem (plain metas, as InferConv2DEpilogue takes them) runs as
// one oneDNN primitive whose result is in a blocked layout (its direct kernels over blocked
// layouts: many channels), and in which blocks: float32, an epilogue that
// Conv2DEpilogueIsOnePrimitive accepts without approximated activations, not a problem the
// direct kernels take, nor one the depthwise kernels take unless oneDNN's run it over nChw8c
// (DepthwiseRunsBlocked, kernels/cpu/window.h). Its results equal Conv2DEpilogue's bit for bit
// but for those depthwise ones (other kernels: float32 rounding).
std::optional<ConvBlocks> Conv2DBlockedLayouts(const TensorMeta& x, const TensorMeta& w,
                                               const TensorMeta* bias, const Window2D& win,
                                               absl::Span<const int64_t> post,
                                               absl::Span<const TensorMeta* const> operands);
// Conv2DEpilogue with x plain or blocked ([N, C/b, H, W, b]) and the result in the layout of
// `result_block`; operands of the result's full shape are in that layout too, channel vectors
// as Conv2DEpilogue takes them. Results equal Conv2DEpilogue's bit for bit (the same primitive
// computes them; only the reorders around it move). For problems Conv2DBlockedLayouts accepts.
absl::StatusOr<TensorMeta> InferConv2DBlocked(const TensorMeta& x, const TensorMeta& w,
                                              const TensorMeta* bias, const Window2D& win,
                                              absl::Span<const int64_t> post,
                                              absl::Span<const TensorMeta* const> operands,
                                              int64_t result_block);
absl::StatusOr<Tensor> Conv2DBlocked(const Tensor& x, const Tensor& w, const Tensor* bias,
                                     const Window2D& win, absl::Span<const int64_t> post,
                                     absl::Span<const Tensor* const> operands,
                                     int64_t result_block);

// The block in which Pool2D runs this float32 problem on oneDNN's blocked kernels (its
// channels a multiple of it), or 0. Pool2D and InferPool2D take a blocked x
// [N, C/b, H, W, b] and give a blocked result, equal to the NCHW one's.
int64_t Pool2DBlock(PoolKind kind, const TensorMeta& x, const Window2D& win);
// Whether pooling runs on the blocked kernels in the layout of `block` (any IsChannelBlock of
// x's channels) for this problem (x in NCHW).
bool Pool2DRunsBlocked(PoolKind kind, const TensorMeta& x, const Window2D& win, int64_t block);

// The NCHW meta of a tensor held in the layout of `block`: float32 [N, C/b, H, W, b] with
// b == block, 8, 16 or C; errors name `op` and `what` (the operand).
absl::StatusOr<TensorMeta> PlainMetaOfBlocked(const char* op, const char* what,
                                              const TensorMeta& x, int64_t block);
// The NCHW meta of an activation operand given NCHW or blocked in its own block (5-D): as
// PlainMetaOfBlocked for the latter, itself for the former.
absl::StatusOr<TensorMeta> PlainMetaOfActivation(const char* op, const char* what,
                                                 const TensorMeta& x);

// Training batch norm (kernels/ops.h BatchNormTrain) of x held in the layout of `block`
// (float32), y in the same layout, relu(y) where `relu` (a graph's relu after it, fused); the
// statistics and parameters are [C] vectors as there. The statistics are summed in another
// order than BatchNormTrain's (float32 within a few units in the last place).
absl::StatusOr<TensorMeta> InferBatchNormTrainBlocked(const TensorMeta& x, const TensorMeta& mean,
                                                      const TensorMeta& var,
                                                      const TensorMeta& gamma,
                                                      const TensorMeta& beta, int64_t block);
absl::StatusOr<Tensor> BatchNormTrainBlocked(const Tensor& x, const Tensor& mean,
                                             const Tensor& var, const Tensor& gamma,
                                             const Tensor& beta, double eps, double momentum,
                                             int64_t block, bool relu = false);
// Its gradients (kernels/ops.h BatchNormGradSums, BatchNormGradInput) with x and dy in the
// layout of `block`: the sums [4, C] as there, dx in x's layout. Sums are accumulated in
// another order than the NCHW kernels' (float32 within a few units in the last place).
absl::StatusOr<TensorMeta> InferBatchNormGradSumsBlocked(const TensorMeta& x, const TensorMeta& dy,
                                                         int64_t block);
absl::StatusOr<Tensor> BatchNormGradSumsBlocked(const Tensor& x, const Tensor& dy, double eps,
                                                int64_t block);
absl::StatusOr<TensorMeta> InferBatchNormGradInputBlocked(const TensorMeta& x,
                                                          const TensorMeta& dy,
                                                          const TensorMeta& sums,
                                                          const TensorMeta& gamma, int64_t block);
absl::StatusOr<Tensor> BatchNormGradInputBlocked(const Tensor& x, const Tensor& dy,
                                                 const Tensor& sums, const Tensor& gamma,
                                                 int64_t block);

// conv2d's gradients (kernels/ops.h Conv2DGradInput, Conv2DGradWeight) over activations in
// blocked layouts, for float32 problems that Conv2DGradBlock accepts: each activation operand
// (x, dout) NCHW [N, C, H, W] or blocked in any layout ([N, C/b, H, W, b]), dx in the layout
// of `dx_block`, dw plain. Results equal the NCHW kernels' bit for bit where oneDNN picks the
// same implementation (operands given in NHWC select its NHWC kernels).
//
// Conv2DGradBlock: the layout in which the forward convolution of this problem (NCHW x and
// w) reads its input, which its input gradient is given in; 0 where the gradients do not run
// on oneDNN's blocked kernels (few channels, groups other than depthwise ones over 8-channel
// multiples, the direct kernels).
int64_t Conv2DGradBlock(const TensorMeta& x, const TensorMeta& w, const Window2D& win);
absl::StatusOr<TensorMeta> InferConv2DGradInputBlocked(const TensorMeta& dout, const TensorMeta& w,
                                                       absl::Span<const int64_t> x_shape,
                                                       const Window2D& win, int64_t dx_block);
absl::StatusOr<Tensor> Conv2DGradInputBlocked(const Tensor& dout, const Tensor& w,
                                              absl::Span<const int64_t> x_shape,
                                              const Window2D& win, int64_t dx_block);
absl::StatusOr<TensorMeta> InferConv2DGradWeightBlocked(const TensorMeta& x, const TensorMeta& dout,
                                                        absl::Span<const int64_t> w_shape,
                                                        const Window2D& win);
absl::StatusOr<Tensor> Conv2DGradWeightBlocked(const Tensor& x, const Tensor& dout,
                                               absl::Span<const int64_t> w_shape,
                                               const Window2D& win);

}  // namespace pijit
