// batch_norm_grad_sums and batch_norm_grad_input (kernels/ops.h BatchNormGradSums,
// BatchNormGradInput) written with reductions and elementwise ops over the axes other than 1,
// for what has no kernels for them: their own gradients (second-order gradients of training
// batch norm, graph/autodiff_nn.cc) and backends other than the host's
// (graph/passes/batch_norm_grad_expand.h).
//
//   sums = stack(μ, r, Σ dy, Σ dy x̂)      μ = mean(x), r = rsqrt(mean((x - μ)²) + eps)
//   dx = γ r (dy - Σdy / M - x̂ Σ(dy x̂) / M)
//
// Each appends its nodes to `g` and returns the last, the value: equal to the kernel's
// within float rounding (the sums add in another order).
#pragma once
#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace pijit::graph {

// The per-channel layout of (N, C, ...) data: the axes a channel's statistics reduce over
// (every axis but 1), the shape [1, C, 1, ...] a channel vector broadcasts from, and the
// number of values per channel.
struct Channels {
  Shape axes;
  Shape view;
  int64_t count = 1;
};
Channels ChannelsOf(const Shape& x);

absl::StatusOr<NodeId> AppendBatchNormGradSums(Graph& g, NodeId x, NodeId dy, double eps);
absl::StatusOr<NodeId> AppendBatchNormGradInput(Graph& g, NodeId x, NodeId dy, NodeId sums,
                                                NodeId gamma);

}  // namespace pijit::graph
