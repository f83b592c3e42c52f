// The CUDA backend's data-movement and creation nodes (graph/backend_cuda_data.cc).
#pragma once
#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace pijit::graph {

// assign, index_grad, concat, stack, full, full_like, one_hot.
bool IsCudaDataOp(Op op);
// Node `n` of one of those ops on device tensors `in`.
absl::StatusOr<Tensor> RunCudaDataOp(const Node& n, absl::Span<const Tensor* const> in);

}  // namespace pijit::graph
