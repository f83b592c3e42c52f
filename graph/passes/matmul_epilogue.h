// Matmul epilogues: a float32 matmul followed by a chain of single-use ops that oneDNN can
// apply to the product as it is written (a bias added along the rows, relu, gelu, tanh,
// sigmoid, the add of a tensor of the product's shape, such as a residual) becomes one
// fused_matmul node (kernels/ops.h MatMulEpilogue) that runs one oneDNN primitive:
//
//   %3 = matmul(%0, %1); %4 = add(%3, %2); %5 = relu(%4)
//     -> %5 = fused_matmul(%0, %1, %2, post=[bias,relu])
//
// A link joins when the value before it has no other reader and is not a graph output, it
// keeps the product's shape and dtype (no promotion, no broadcasting of the product), and
// MatMulEpilogueIsOnePrimitive accepts the chain so far (so a relu ends it: oneDNN's relu
// turns NaN into 0, and the kernel applies relu itself after the primitive). The node
// replaces the chain's last op in place; the others are left for dce. Results are those of
// the ops one by one: bit for bit with bias, add and relu, within kMatMulEpilogueRelTol
// (sign of zero and denormals aside) with gelu, tanh and sigmoid.
//
// Runs before elementwise fusion, which would otherwise take the adds and activations.
#pragma once
#include "graph/passes/pass.h"

namespace pijit::graph::matmul_epilogue {
absl::StatusOr<bool> Run(Graph& g);
}  // namespace pijit::graph::matmul_epilogue
