#include "graph/batch_norm_grad_formula.h"

#include "kernels/errors.h"
#include "kernels/ops.h"

namespace pijit::graph {
namespace {

absl::StatusOr<NodeId> Binary(Graph& g, Op op, NodeId a, NodeId b) { return g.AddOp(op, {a, b}); }

absl::StatusOr<NodeId> Scalar(Graph& g, double v, DType dt) {
  PIJIT_ASSIGN_OR_RETURN(Tensor t, Cast(Tensor::Scalar<double>(v), dt));
  return g.AddConstant(t);
}

// Row k of sums [4, C] viewed as [1, C, 1, ...].
absl::StatusOr<NodeId> Row(Graph& g, NodeId sums, int64_t k, const Shape& view) {
  IndexItem item{IndexItem::kInt};
  item.start = k;
  PIJIT_ASSIGN_OR_RETURN(NodeId row, g.AddOp(Op::kIndex, {sums}, EncodeIndex({item})));
  return g.AddOp(Op::kReshape, {row}, view);
}

absl::Status CheckRank(const Graph& g, NodeId x) {
  if (g.node(x).meta.shape.size() < 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "batch norm gradient: expected an input of at least 2 dimensions (N, C, ...), got %s",
        ShapeToString(g.node(x).meta.shape)));
  }
  return absl::OkStatus();
}

}  // namespace

Channels ChannelsOf(const Shape& x) {
  Channels c;
  for (size_t i = 0; i < x.size(); ++i) {
    c.view.push_back(i == 1 ? x[1] : 1);
    if (i != 1) {
      c.axes.push_back(static_cast<int64_t>(i));
      c.count *= x[i];
    }
  }
  return c;
}

absl::StatusOr<NodeId> AppendBatchNormGradSums(Graph& g, NodeId x, NodeId dy, double eps) {
  PIJIT_RETURN_IF_ERROR(CheckRank(g, x));
  const DType dt = g.node(x).meta.dtype;
  const Channels c = ChannelsOf(g.node(x).meta.shape);
  const Shape flat{g.node(x).meta.shape[1]};
  PIJIT_ASSIGN_OR_RETURN(NodeId mean, g.AddOp(Op::kMean, {x}, c.axes, /*keepdims=*/true));
  PIJIT_ASSIGN_OR_RETURN(NodeId centred, Binary(g, Op::kSub, x, mean));
  PIJIT_ASSIGN_OR_RETURN(NodeId sq, Binary(g, Op::kMul, centred, centred));
  PIJIT_ASSIGN_OR_RETURN(NodeId var, g.AddOp(Op::kMean, {sq}, c.axes, /*keepdims=*/true));
  PIJIT_ASSIGN_OR_RETURN(NodeId eps_node, Scalar(g, eps, dt));
  PIJIT_ASSIGN_OR_RETURN(NodeId shifted, Binary(g, Op::kAdd, var, eps_node));
  PIJIT_ASSIGN_OR_RETURN(NodeId r, g.AddOp(Op::kRsqrt, {shifted}));
  PIJIT_ASSIGN_OR_RETURN(NodeId sum_dy, g.AddOp(Op::kSum, {dy}, c.axes, /*keepdims=*/true));
  PIJIT_ASSIGN_OR_RETURN(NodeId xhat, Binary(g, Op::kMul, centred, r));
  PIJIT_ASSIGN_OR_RETURN(NodeId dy_xhat, Binary(g, Op::kMul, dy, xhat));
  PIJIT_ASSIGN_OR_RETURN(NodeId sum_dy_xhat, g.AddOp(Op::kSum, {dy_xhat}, c.axes, /*keepdims=*/true));
  absl::InlinedVector<NodeId, 4> rows;
  for (NodeId v : {mean, r, sum_dy, sum_dy_xhat}) {
    PIJIT_ASSIGN_OR_RETURN(NodeId row, g.AddOp(Op::kReshape, {v}, flat));
    rows.push_back(row);
  }
  Attrs stack;  // attr = axis 0
  return g.AddOp(Op::kStack, rows, std::move(stack));
}

absl::StatusOr<NodeId> AppendBatchNormGradInput(Graph& g, NodeId x, NodeId dy, NodeId sums,
                                                NodeId gamma) {
  PIJIT_RETURN_IF_ERROR(CheckRank(g, x));
  const DType dt = g.node(x).meta.dtype;
  const Channels c = ChannelsOf(g.node(x).meta.shape);
  PIJIT_ASSIGN_OR_RETURN(NodeId mean, Row(g, sums, 0, c.view));
  PIJIT_ASSIGN_OR_RETURN(NodeId r, Row(g, sums, 1, c.view));
  PIJIT_ASSIGN_OR_RETURN(NodeId sum_dy, Row(g, sums, 2, c.view));
  PIJIT_ASSIGN_OR_RETURN(NodeId sum_dy_xhat, Row(g, sums, 3, c.view));
  PIJIT_ASSIGN_OR_RETURN(NodeId count, Scalar(g, static_cast<double>(c.count), dt));
  PIJIT_ASSIGN_OR_RETURN(NodeId centred, Binary(g, Op::kSub, x, mean));
  PIJIT_ASSIGN_OR_RETURN(NodeId xhat, Binary(g, Op::kMul, centred, r));
  PIJIT_ASSIGN_OR_RETURN(NodeId mean_dy, Binary(g, Op::kDiv, sum_dy, count));
  PIJIT_ASSIGN_OR_RETURN(NodeId mean_dy_xhat, Binary(g, Op::kDiv, sum_dy_xhat, count));
  PIJIT_ASSIGN_OR_RETURN(NodeId t1, Binary(g, Op::kSub, dy, mean_dy));
  PIJIT_ASSIGN_OR_RETURN(NodeId t2, Binary(g, Op::kMul, xhat, mean_dy_xhat));
  PIJIT_ASSIGN_OR_RETURN(NodeId t, Binary(g, Op::kSub, t1, t2));
  PIJIT_ASSIGN_OR_RETURN(NodeId gamma_view, g.AddOp(Op::kReshape, {gamma}, c.view));
  PIJIT_ASSIGN_OR_RETURN(NodeId scale, Binary(g, Op::kMul, gamma_view, r));
  return Binary(g, Op::kMul, scale, t);
}

}  // namespace pijit::graph
