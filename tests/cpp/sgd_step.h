// The training half of the step graphs in lenet_step.h and resnet_step.h: the backward of
// `loss` with respect to `params` (AppendBackward) and SGD updates written into them with
// assign. The loss becomes the graph's only output; the assigns are stateful, so dead-code
// removal keeps them although no output reads them.
#pragma once
#include <vector>

#include "graph/autodiff.h"
#include "graph/graph.h"
#include "kernels/errors.h"

namespace pijit::graph {

inline absl::Status AppendSgdStep(Graph& g, NodeId loss, absl::Span<const NodeId> params, float lr) {
  const NodeId seed = g.AddConstant(Tensor::Scalar<float>(1.0f));
  PIJIT_ASSIGN_OR_RETURN(std::vector<NodeId> grads, AppendBackward(g, {loss}, {seed}, params));
  const NodeId rate = g.AddConstant(Tensor::Scalar<float>(lr));
  for (size_t i = 0; i < params.size(); ++i) {
    PIJIT_ASSIGN_OR_RETURN(NodeId step, g.AddOp(Op::kMul, {grads[i], rate}));
    PIJIT_ASSIGN_OR_RETURN(NodeId updated, g.AddOp(Op::kSub, {params[i], step}));
    PIJIT_RETURN_IF_ERROR(g.AddOp(Op::kAssign, {params[i], updated}).status());
  }
  g.SetOutputs({loss});
  return absl::OkStatus();
}

}  // namespace pijit::graph
