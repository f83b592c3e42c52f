// Convolution epilogues: a float32 conv2d followed by a chain of single-use ops that one
// kernel can apply to its result as it is written (a bias added along the channels, relu,
// gelu, tanh, sigmoid, the add of a tensor of the result's shape, such as a residual) becomes
// one fused_conv2d node (kernels/ops.h Conv2DEpilogue): oneDNN's convolution with bias and
// post-ops, or the direct kernels with the epilogue applied while the result is in cache.
//
//   %3 = conv2d(%0, %1); %4 = add(%3, %2); %6 = add(%4, %5); %7 = relu(%6)
//     -> %7 = fused_conv2d(%0, %1, %2, %5, post=[bias,add,relu])
//
// A link joins when the value before it has no other reader and is not a graph output, it
// keeps the convolution's shape and dtype (no promotion, no broadcasting of the result), and
// Conv2DEpilogueIsOnePrimitive accepts the chain so far (so a relu ends it: oneDNN's relu
// turns NaN into 0, and the kernel applies relu itself after the primitive). A bias, of shape
// [C, 1, 1] or [1, C, 1, 1], joins only first and only when the convolution has none; a
// convolution's own bias stays its third input. The node replaces the chain's last op in
// place; the others are left for dce. Results are those of the ops one by one: bit for bit
// with bias, add and relu, within kMatMulEpilogueRelTol (sign of zero and denormals aside)
// with gelu, tanh and sigmoid.
//
// Runs after autodiff (fused_conv2d has no gradient rule), after the layer epilogue pass
// (a relu folded into conv2d as its epilogue attribute, with relu's gradient masks reading
// the result, stays as it is) and before elementwise fusion, which would otherwise take the
// adds and activations.
#pragma once
#include "graph/passes/pass.h"

namespace pijit::graph::conv_epilogue {
absl::StatusOr<bool> Run(Graph& g);
}  // namespace pijit::graph::conv_epilogue
