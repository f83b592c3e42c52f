#include "graph/passes/batch_norm_grad_expand.h"

#include "graph/batch_norm_grad_formula.h"
#include "graph/passes/node_insertion.h"
#include "kernels/errors.h"

namespace pijit::graph::batch_norm_grad_expand {
namespace {

// The node becomes the formula's last node; the copy that AppendBatchNormGrad* left at the
// graph's end has no reader, for dce.
absl::Status Expand(Graph& g, NodeId id) {
  const Node n = g.node(id);
  absl::StatusOr<NodeId> last;
  if (n.op == Op::kBatchNormGradSums) {
    if (n.value.dtype() != DType::kFloat64 || n.value.numel() < 1) {
      return absl::InternalError("batch_norm_grad_sums: expects eps in value");
    }
    last = AppendBatchNormGradSums(g, n.inputs[0], n.inputs[1], n.value.data<double>()[0]);
  } else {
    last = AppendBatchNormGradInput(g, n.inputs[0], n.inputs[1], n.inputs[2], n.inputs[3]);
  }
  PIJIT_RETURN_IF_ERROR(last.status());
  Node copy = g.node(*last);
  copy.param_index = -1;
  g.mutable_node(id) = std::move(copy);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> Run(Graph& g) {
  NodeInsertion insertion(g);
  const size_t count = g.nodes().size();
  for (size_t i = 0; i < count; ++i) {
    const NodeId id = static_cast<NodeId>(i);
    const Op op = g.node(id).op;
    if (op != Op::kBatchNormGradSums && op != Op::kBatchNormGradInput) continue;
    insertion.Begin(g, id);
    PIJIT_RETURN_IF_ERROR(Expand(g, id));
  }
  if (insertion.empty()) return false;
  PIJIT_RETURN_IF_ERROR(insertion.Place(g));
  return true;
}

}  // namespace pijit::graph::batch_norm_grad_expand
