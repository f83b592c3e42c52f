#include "graph/passes/batch_norm_affine.h"

#include "graph/batch_norm_grad_formula.h"
#include "graph/passes/node_insertion.h"
#include "kernels/errors.h"
#include "kernels/ops.h"

namespace pijit::graph::batch_norm_affine {
namespace {

// The new nodes that compute one batch norm's affine map, appended at the graph's end; the
// batch norm node itself becomes the final add (its id and uses stay).
absl::Status Rewrite(Graph& g, NodeId bn) {
  const Node n = g.node(bn);
  const NodeId x = n.inputs[0], mean = n.inputs[1], var = n.inputs[2];
  const NodeId gamma = n.inputs[3], beta = n.inputs[4];
  const TensorMeta& xm = g.node(x).meta;
  const Shape view = ChannelsOf(xm.shape).view;
  PIJIT_ASSIGN_OR_RETURN(Tensor eps, Cast(Tensor::Scalar<double>(n.value.data<double>()[0]), xm.dtype));
  const NodeId eps_node = g.AddConstant(eps);
  PIJIT_ASSIGN_OR_RETURN(NodeId shifted_var, g.AddOp(Op::kAdd, {var, eps_node}));
  PIJIT_ASSIGN_OR_RETURN(NodeId inv_std, g.AddOp(Op::kRsqrt, {shifted_var}));
  PIJIT_ASSIGN_OR_RETURN(NodeId scale, g.AddOp(Op::kMul, {gamma, inv_std}));
  PIJIT_ASSIGN_OR_RETURN(NodeId neg_mean, g.AddOp(Op::kNeg, {mean}));
  PIJIT_ASSIGN_OR_RETURN(NodeId neg_mean_view, g.AddOp(Op::kReshape, {neg_mean}, view));
  PIJIT_ASSIGN_OR_RETURN(NodeId scale_view, g.AddOp(Op::kReshape, {scale}, view));
  PIJIT_ASSIGN_OR_RETURN(NodeId beta_view, g.AddOp(Op::kReshape, {beta}, view));
  PIJIT_ASSIGN_OR_RETURN(NodeId centred, g.AddOp(Op::kAdd, {x, neg_mean_view}));
  PIJIT_ASSIGN_OR_RETURN(NodeId scaled, g.AddOp(Op::kMul, {centred, scale_view}));
  Node& out = g.mutable_node(bn);
  out.op = Op::kAdd;
  out.inputs = {scaled, beta_view};
  static_cast<Attrs&>(out) = Attrs{};
  return absl::OkStatus();
}

bool Applies(const Graph& g, const Node& n) {
  if (n.op != Op::kBatchNorm || n.inputs.size() != 5 || n.value.dtype() != DType::kFloat64 ||
      n.value.numel() < 1) {
    return false;
  }
  const TensorMeta& x = g.node(n.inputs[0]).meta;
  if (x.dtype != DType::kFloat32 && x.dtype != DType::kFloat64) return false;
  for (NodeId i : n.inputs)
    if (g.node(i).meta.dtype != x.dtype) return false;
  return x.shape.size() >= 2 && n.meta == x;
}

}  // namespace

absl::StatusOr<bool> Run(Graph& g) {
  NodeInsertion insertion(g);
  const size_t count = g.nodes().size();
  for (size_t id = 0; id < count; ++id) {
    if (!Applies(g, g.node(static_cast<NodeId>(id)))) continue;
    insertion.Begin(g, static_cast<NodeId>(id));
    PIJIT_RETURN_IF_ERROR(Rewrite(g, static_cast<NodeId>(id)));
  }
  if (insertion.empty()) return false;
  PIJIT_RETURN_IF_ERROR(insertion.Place(g));
  return true;
}

}  // namespace pijit::graph::batch_norm_affine
