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
//   result runs blocked when every operand of its result's shape is blocked and the others
//   are channel vectors ([C, 1, 1], [1, C, 1, 1], viewed as [1, C/b, 1, 1, b]) or single
//   values;
// - every other reader, and the graph's outputs, read NCHW: a from_blocked made once per value
//   right before its first such reader.
// So reorders remain only at the edges of the blocked region, and none is added where there
// was none: a convolution's own reorders move out of it, and a blocked elementwise op or
// pooling reads values that are blocked already.
//
// Results are bit for bit those of the graph before (the same primitives and elementwise
// operations on the same values; only where the reorders run changes). Runs last among the
// optimizing passes (after fusion, whose loops it moves into the blocked layout), on graphs of
// fixed sizes, for the CPU's kernels.
#pragma once
#include "graph/passes/pass.h"

namespace pijit::graph::layout_assignment {
absl::StatusOr<bool> Run(Graph& g);
}  // namespace pijit::graph::layout_assignment
