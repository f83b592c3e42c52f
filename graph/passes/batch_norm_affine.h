// Inference batch norm as a per-channel affine map: batch_norm(x, mean, var, gamma, beta) with
// given statistics is (x - mean) * s + beta, s = gamma * rsqrt(var + eps), per channel. The
// pass writes it so, with the channel vectors viewed as [1, C, 1, ...]:
//
//   %7 = batch_norm(%3, %m, %v, %g, %b)
//     -> %s = mul(%g, rsqrt(add(%v, eps))); %7 = add(mul(add(%3, reshape(neg(%m))),
//                                                         reshape(%s)), reshape(%b))
//
// so that the passes after it apply it where its neighbours are computed: after a
// convolution, the three links join its epilogue (graph/passes/conv_epilogue.h: -mean becomes
// the primitive's bias, the scale and beta binary post-ops), with a following residual add
// and relu, as one oneDNN primitive; elsewhere elementwise fusion makes it one loop with the
// ops around it. The work on [C] vectors is negligible next to a pass over the activation.
//
// Float32 and float64 inputs only (half floats normalise in float32 and round once, which
// the elementwise ops would not). Results differ from the batch_norm kernel's by the
// rounding of the scale and the order of the operations: a few units in the last place of
// (x - mean) * s and of beta, float32 within 1e-5 relative to max(|y|, |beta|, 1) in
// practice (tests/python/test_batch_norm_fusion.py checks 1e-4 of the output's magnitude).
//
// Runs after autodiff (the nodes it writes have gradients, but none are needed) and before
// the convolution epilogue and elementwise fusion passes.
#pragma once
#include "graph/passes/pass.h"

namespace pijit::graph::batch_norm_affine {
absl::StatusOr<bool> Run(Graph& g);
}  // namespace pijit::graph::batch_norm_affine
