// Layout assignment: the activations that flow between oneDNN's convolutions stay in its
// blocked layouts (kernels/blocked_layout.h) instead of being reordered back to NCHW after
// each convolution and into the blocked layout again before the next.
//
//   %5 = fused_conv2d(%0, %1, %2, post=[bias,relu])      %9 = to_blocked(%0, block=8)
//   %6 = max_pool2d(%5)                            ->   %5 = fused_conv2d(%9, %1, %2, post=[bias,relu], block=8)
//   %8 = fused(%6, %7, program="...")                   %6 = max_pool2d(%5)   (5-D in, 5-D out)
//   return (%8)                                         %10 = reshape(%7, shape=[1,C/8,1,1,8])
//                                                       %8 = fused(%6, %10, program="...")
//                                                       %11 = from_blocked(%8)
//                                                       return (%11)
//
// The rules, in graph order:
// - a convolution (conv2d, fused_conv2d) that runs as one oneDNN primitive over blocked
//   layouts (Conv2DBlockedLayouts) becomes a fused_conv2d giving its result blocked; it reads
//   its input blocked where oneDNN's primitive does (the reorder, made once, is shared by the
//   input's other blocked readers), and residual operands of its result's shape blocked;
// - max and average pooling run blocked when their input is blocked (Pool2DBlock);
// - an elementwise op (a single one or a fused loop, not a random one) with a float32 NCHW
//   result runs blocked when an operand of its result's shape is blocked, the others are
//   channel vectors ([C, 1, 1], [1, C, 1, 1], viewed as [1, C/b, 1, 1, b]) or single values,
//   and a reader takes its result blocked (or none needs it NCHW); it runs in the block most
//   of its operands have, the others reordered into it (from another block in one reorder);
// - training graphs: conv2d_grad_input and conv2d_grad_weight over oneDNN's blocked kernels
//   read their activations in the layout they come in, the input gradient's result in the
//   block of the forward values its readers meet; batch_norm_train, batch_norm_grad_sums and
//   batch_norm_grad_input run blocked where x is (block=), dy taken into x's block, and a
//   relu that is batch norm's only reader runs inside it (epilogue=relu); a depthwise
//   convolution and its gradients run blocked (oneDNN's nChw8c kernels) after a blocked input;
// - every other reader, and the graph's outputs, read NCHW: a from_blocked made once per value
//   right before its first such reader.
// So reorders remain mostly at the edges of the blocked region: a convolution's own reorders
// move out of it, and a blocked elementwise op or pooling reads values that are blocked
// already, but for operands it takes into its block (one reorder where the NCHW op would have
// needed the blocked operands' and its result's).
//
// Results are bit for bit those of the graph before (the same primitives and elementwise
// operations on the same values; only where the reorders run changes), except where other
// kernels run: batch norm's training kernels and gradients over blocked layouts, oneDNN's
// NHWC gradient kernels and its depthwise ones (float32 rounding, tests/cpp/
// blocked_training_test.cc). Runs last among the
// optimizing passes (after fusion, whose loops it moves into the blocked layout), on graphs of
// fixed sizes, for the CPU's kernels.
#pragma once
#include "graph/passes/pass.h"

namespace pijit::graph::layout_assignment {
absl::StatusOr<bool> Run(Graph& g);
}  // namespace pijit::graph::layout_assignment
