// Layer epilogues: elementwise work folded into the layer kernel that produces or consumes it,
// so it costs no separate pass over memory.
//
//   relu(conv2d(x, w)) -> conv2d(x, w, epilogue=relu)
//     when every other use of the convolution's result is relu's gradient mask
//     greater(c, 0): relu(c) > 0 exactly when c > 0 (NaN and -0.0 included), so the masks
//     read the fused result instead.
//   where(greater(x, 0), max_pool2d_grad(x, dy), 0) -> max_pool2d_grad(x, dy, mask=positive)
//     relu's gradient mask on a max pooling's gradient whose input x is relu's output (as
//     after the first rewrite), when nothing else uses the unmasked gradient.
//
// Results are bit-identical to the unfused graph. Runs after autodiff (conv2d's gradient rule
// rejects the epilogue) and before fusion, which would otherwise take relu into a loop.
#pragma once
#include "graph/passes/pass.h"

namespace pijit::graph::epilogue {
absl::StatusOr<bool> Run(Graph& g);
}  // namespace pijit::graph::epilogue
