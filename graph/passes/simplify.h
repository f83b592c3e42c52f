// Algebraic simplification: local rewrites from a rule table (simplify.cc, one rule per line
// with its identity). A rule fires only when the result keeps the node's dtype and shape and
// is bit-identical to what eager execution computes for every input, NaNs, infinities and
// signed zeros included. That is why x+0 -> x holds for integers but, for floats, only with
// a -0.0 constant (-0.0 + +0.0 is +0.0), and x-0 -> x only with +0.0. Replaced nodes stay
// behind for dce; "changed" means some use was redirected or a node rewritten.
#pragma once
#include "graph/passes/pass.h"

namespace pijit::graph::simplify {
absl::StatusOr<bool> Run(Graph& g);
}  // namespace pijit::graph::simplify
