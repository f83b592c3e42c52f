// How autodiff adds up the gradient contributions that one value receives, where the plain
// chain of adds would be slow: a value used once per step of an unrolled loop (a recurrent
// layer's weights, its gate matrix sliced four ways, a sequence's rows) gets one contribution
// per use. Each function takes the contributions and returns fewer, equal in sum; what it
// cannot combine it returns as it is. Not a public API (graph/autodiff.cc calls them).
#pragma once
#include <vector>

#include "graph/autodiff_rules.h"

namespace pijit::graph::vjp {

// index_grad nodes writing distinct rows (a single integer on axis 0) of every row: the rows
// stacked, instead of one zero-filled tensor per row added up.
std::vector<NodeId> StackRowGradients(const Graph& g, Builder& b, const TensorMeta& target,
                                      std::vector<NodeId> parts);

// index_grad nodes of slices (step 1) along one axis that together tile it, whole along the
// others: the slices' gradients concatenated, instead of one zero-filled tensor per slice.
std::vector<NodeId> ConcatSliceGradients(const Graph& g, Builder& b, const TensorMeta& target,
                                         std::vector<NodeId> parts);

// Products of 2-D matrices (matmul(A, B), or a transpose of one) into a 2-D target: one
// product of the factors concatenated along their inner axis, sum_i L_i R_i = [L_1 .. L_k]
// [R_1; ..; R_k]. A weight read at every step of a loop gets one product per step, each with
// a short inner axis (the batch); the merged product has them all, which matrix kernels run
// several times faster, and no k-way sum of transposed products follows.
std::vector<NodeId> MergeMatMulGradients(const Graph& g, Builder& b, const TensorMeta& target,
                                         std::vector<NodeId> parts);

}  // namespace pijit::graph::vjp
