// Reductions of fused producers: sum, mean, max or min whose input is a fused node (or a single
// elementwise op fused code computes, e.g. (a*b).sum()) becomes one fused_reduce node that
// reduces the program's results chunk by chunk, without writing them to memory
// (kernels/fused_reduce.h).
//
// The producer must be read by that reduction only (once) and must not be a graph output, its
// dtype float32 or float64. A single op is taken when fusion would compute it exactly as the
// eager kernel does: add, sub, mul, div, neg, relu, maximum, minimum of inputs of its own dtype
// (not exp, whose fused code is an approximation, nor where and the comparisons, whose masks
// come from other nodes). Results are bit-identical to the unfused graph's: the kernel reduces
// in the eager order, and falls back to materialising the producer when the run-time layout
// (broadcast or strided inputs, reduced axes apart) does not allow that. The graph is
// rewritten only when the captured shapes take the direct path, so it also holds at other
// sizes (symbolic sizes) where the kernel decides again at run time. The producer is left for
// dce.
#pragma once
#include "graph/passes/pass.h"
#include "kernels/fused.h"

namespace pijit::graph::fused_reduce {
absl::StatusOr<bool> Run(Graph& g);
}  // namespace pijit::graph::fused_reduce
