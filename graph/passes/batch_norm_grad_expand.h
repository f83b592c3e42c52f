// For backends without batch_norm_grad_sums and batch_norm_grad_input kernels (the CUDA
// backend): each becomes the reductions and elementwise ops that compute it
// (graph/batch_norm_grad_formula.h). Results equal the kernels' within float rounding (they
// sum in another order). Runs first, before the cleanup passes, and whether or not the graph
// is optimised.
#pragma once
#include "graph/passes/pass.h"

namespace pijit::graph::batch_norm_grad_expand {
absl::StatusOr<bool> Run(Graph& g);
}  // namespace pijit::graph::batch_norm_grad_expand
