// VJP rules of the normalisation layers: layer_norm and group_norm (whose dx is the
// layer_norm_grad kernel), layer_norm_grad, batch_norm (reductions and elementwise ops),
// batch_norm_train (the batch_norm_grad_sums and batch_norm_grad_input kernels) and those two
// (through their formulas). With x̂ = (x - μ) r, r = 1/sqrt(σ² + eps) and
// y = γ x̂ + β, the adjoints are
//
//     dβ = Σ g,   dγ = Σ g x̂,   dx̂ = γ g
//     dx = r (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂))   when μ, σ² are the statistics of x itself
//     dx = r dx̂                                 when they are given (inference batch norm)
//
// with Σ over the axes a parameter is broadcast along and the means over the normalised axes.
#include <algorithm>
#include <cmath>
#include <vector>

#include "graph/autodiff_rules.h"
#include "graph/batch_norm_grad_formula.h"

namespace pijit::graph::vjp {
namespace {

// The op's i-th Float64 parameter (eps, momentum) from node.value.
double Param(Builder& b, const Node& n, int64_t i) {
  if (n.value.dtype() != DType::kFloat64 || n.value.numel() <= i) {
    b.Fail(absl::InternalError(absl::StrFormat("%s: expects Float64 parameters in value", OpName(n.op))));
    return 0;
  }
  return n.value.data<double>()[i];
}

// Half floats are normalised in float32 by the kernels; their gradients are too (accumulation
// casts the result back to the input's dtype).
NodeId Widen(Builder& b, NodeId x) {
  return x != kNil && IsHalfFloat(b.DTypeOf(x)) ? b.Convert(x, DType::kFloat32) : x;
}

// The statistics of x over `axes` (kept as size-1 axes): x̂ and r.
struct Normalised {
  NodeId xhat, r;
};
Normalised NormaliseOwn(Builder& b, NodeId x, absl::Span<const int64_t> axes, double eps) {
  const NodeId centred = b.Sub(x, b.Reduce(Op::kMean, x, axes, /*keepdims=*/true));
  const NodeId var = b.Reduce(Op::kMean, b.Mul(centred, centred), axes, /*keepdims=*/true);
  const NodeId r = b.Unary(Op::kRsqrt, b.Add(var, b.ScalarLike(eps, var)));
  return {b.Mul(centred, r), r};
}

// dx when the statistics are x's own over `axes`: r (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂)).
NodeId OwnStatsInputGrad(Builder& b, const Normalised& s, NodeId dxhat,
                         absl::Span<const int64_t> axes) {
  const NodeId m1 = b.Reduce(Op::kMean, dxhat, axes, /*keepdims=*/true);
  const NodeId m2 = b.Reduce(Op::kMean, b.Mul(dxhat, s.xhat), axes, /*keepdims=*/true);
  return b.Mul(s.r, b.Sub(b.Sub(dxhat, m1), b.Mul(s.xhat, m2)));
}

// layer_norm's normalised axes: the trailing len(normalized_shape) axes of x (ints[2:]).
Shape NormalisedAxes(Builder& b, const Node& n, NodeId x) {
  const int64_t nd = static_cast<int64_t>(b.ShapeOf(x).size());
  const int64_t k = static_cast<int64_t>(n.ints.size()) - 2;
  if (k < 1 || k > nd) {
    b.Fail(absl::InternalError(absl::StrFormat("%s: bad normalized_shape", OpName(n.op))));
    return {};
  }
  Shape axes;
  for (int64_t i = nd - k; i < nd; ++i) axes.push_back(i);
  return axes;
}

// layer_norm(x, [γ], [β]): statistics over the trailing len(normalized_shape) axes; γ and β
// have the normalised shape, so accumulation sums their gradients over the leading axes. dx
// is one layer_norm_grad node (a kernel that recomputes the statistics); γ's gradient needs
// x̂, which a layer_norm without γ and β gives in one pass.
Grads LayerNormVjp(Builder& b, const VjpArgs& a) {
  const bool has_gamma = a.n.ints.size() >= 2 && a.n.ints[0];
  const bool has_beta = a.n.ints.size() >= 2 && a.n.ints[1];
  const int gamma_in = 1, beta_in = 1 + has_gamma;
  const NodeId x = Widen(b, a.in(0)), g = Widen(b, a.dy);
  const NodeId gamma = has_gamma ? Widen(b, a.in(gamma_in)) : kNil;
  if (NormalisedAxes(b, a.n, x).empty()) return {kNil};
  const Shape normalized(a.n.ints.begin() + 2, a.n.ints.end());
  Grads out(a.n.inputs.size(), kNil);
  if (has_beta && a.want[beta_in]) out[beta_in] = g;
  if (has_gamma && a.want[gamma_in]) {
    Attrs plain;
    plain.ints = {0, 0};
    plain.ints.insert(plain.ints.end(), normalized.begin(), normalized.end());
    plain.value = a.n.value;
    out[gamma_in] = b.Mul(g, b.Emit(Op::kLayerNorm, {x}, std::move(plain)));
  }
  if (a.want[0]) {
    Attrs grad;
    grad.ints = {has_gamma, 0};
    grad.ints.insert(grad.ints.end(), normalized.begin(), normalized.end());
    grad.value = a.n.value;
    out[0] = has_gamma ? b.Emit(Op::kLayerNormGrad, {x, g, gamma}, std::move(grad))
                       : b.Emit(Op::kLayerNormGrad, {x, g}, std::move(grad));
  }
  return out;
}

// The gradients of node a.n through `value`, the same function of its inputs written with
// other ops (every node of it at or after `first`, so that the gradients flow through all of
// them), which the other rules differentiate.
Grads ThroughFormula(Builder& b, const VjpArgs& a, NodeId first, NodeId value) {
  if (!b.status().ok()) return {kNil};
  // An operand used twice (x as its own dy) is differentiated once; its gradient goes to its
  // first position only, as accumulation adds every position's contribution.
  std::vector<NodeId> wrt;
  std::vector<int> slot(a.n.inputs.size(), -1);
  for (size_t k = 0; k < a.n.inputs.size(); ++k) {
    if (!a.want[k]) continue;
    const auto seen = std::find(wrt.begin(), wrt.end(), a.n.inputs[k]);
    if (seen != wrt.end()) continue;
    slot[k] = static_cast<int>(wrt.size());
    wrt.push_back(a.n.inputs[k]);
  }
  absl::StatusOr<std::vector<NodeId>> grads = AppendBackward(b.graph(), {value}, {a.dy}, wrt, first);
  if (!grads.ok()) return {b.Fail(grads.status())};
  Grads out(a.n.inputs.size(), kNil);
  for (size_t k = 0; k < out.size(); ++k)
    if (slot[k] >= 0) out[k] = (*grads)[slot[k]];
  return out;
}

// layer_norm_grad(x, dy, [γ]) = r (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂)) with dx̂ = dy γ: its own
// gradients (second-order gradients of layer_norm) are those of this formula written with
// reductions and elementwise ops.
Grads LayerNormGradVjp(Builder& b, const VjpArgs& a) {
  const bool has_gamma = a.n.ints.size() >= 2 && a.n.ints[0];
  // Every node of the formula, the widening casts included, comes at or after `first`, so
  // that the gradients flow through all of them.
  const NodeId first = static_cast<NodeId>(b.graph().nodes().size());
  const NodeId x = Widen(b, a.in(0)), dy = Widen(b, a.in(1));
  const Shape axes = NormalisedAxes(b, a.n, x);
  if (axes.empty()) return {kNil};
  const Normalised s = NormaliseOwn(b, x, axes, Param(b, a.n, 0));
  const NodeId dxhat = has_gamma ? b.Mul(dy, Widen(b, a.in(2))) : dy;
  const NodeId dx = b.Convert(OwnStatsInputGrad(b, s, dxhat, axes), b.DTypeOf(a.y));
  return ThroughFormula(b, a, first, dx);
}

// group_norm(x, γ, β) of (N, C, ...) data in G groups: x̂ is layer_norm's over the rows of x
// viewed as (N, G, rest), so dx is layer_norm_grad of those rows with dx̂ = g γ[c]; γ's and β's
// gradients sum g x̂ and g over every axis but the channels'.
Grads GroupNormVjp(Builder& b, const VjpArgs& a) {
  const NodeId x = Widen(b, a.in(0)), g = Widen(b, a.dy);
  const Shape shape = b.ShapeOf(x);
  const int64_t groups = a.n.attr;
  if (shape.size() < 2 || groups < 1 || shape[1] % groups != 0) {
    return {b.Fail(absl::InternalError("group_norm: bad shape or groups"))};
  }
  const int64_t rest = NumElements(shape) / std::max<int64_t>(1, shape[0] * groups);
  const Shape rows{shape[0], groups, rest}, channel{shape[1]};
  Shape view(shape.size(), 1), others;
  view[1] = shape[1];
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
    if (i != 1) others.push_back(i);
  Attrs stats;  // {has_gamma, has_beta, normalized_shape} of the rows: the last axis
  stats.ints = {0, 0, rest};
  stats.value = a.n.value;
  const NodeId xr = b.Reshape(x, rows);
  Grads out(3, kNil);
  if (a.want[0]) {
    const NodeId dxhat = b.Mul(g, b.Reshape(Widen(b, a.in(1)), view));
    Attrs grad = stats;
    out[0] = b.Reshape(b.Emit(Op::kLayerNormGrad, {xr, b.Reshape(dxhat, rows)}, std::move(grad)), shape);
  }
  if (a.want[1]) {
    const NodeId xhat = b.Reshape(b.Emit(Op::kLayerNorm, {xr}, stats), shape);
    out[1] = b.Reshape(b.SumInRuns(b.Mul(g, xhat), others), channel);
  }
  if (a.want[2]) out[2] = b.Reshape(b.SumInRuns(g, others), channel);
  return out;
}

// batch_norm's per-channel operands have shape [C]; against x of shape [N, C, ...] they are
// viewed as [1, C, 1, ...] and their gradients summed over every axis but 1.
NodeId PerChannel(Builder& b, const Channels& c, NodeId v) { return b.Reshape(Widen(b, v), c.view); }
NodeId SumPerChannel(Builder& b, const Channels& c, NodeId v) {
  return b.Reduce(Op::kSum, v, c.axes, /*keepdims=*/false);
}

// batch_norm(x, mean, var, γ, β) with given statistics: every operand gets a gradient,
// d mean = -Σ γ r g and d var = -½ r³ Σ γ g (x - mean).
Grads BatchNormVjp(Builder& b, const VjpArgs& a) {
  const NodeId x = Widen(b, a.in(0)), g = Widen(b, a.dy);
  if (b.ShapeOf(x).size() < 2) return {b.Fail(absl::InternalError("batch_norm: rank < 2"))};
  const Channels c = ChannelsOf(b.ShapeOf(x));
  const NodeId mean = PerChannel(b, c, a.in(1)), var = PerChannel(b, c, a.in(2));
  const NodeId gamma = PerChannel(b, c, a.in(3));
  const NodeId r = b.Unary(Op::kRsqrt, b.Add(var, b.ScalarLike(Param(b, a.n, 0), var)));
  const NodeId centred = b.Sub(x, mean);
  const NodeId dxhat = b.Mul(g, gamma);
  Grads out(5, kNil);
  if (a.want[0]) out[0] = b.Mul(dxhat, r);
  if (a.want[1]) out[1] = b.Neg(SumPerChannel(b, c, b.Mul(dxhat, r)));
  if (a.want[2]) {
    const NodeId r3 = b.Mul(r, b.Mul(r, r));
    out[2] = b.Scale(SumPerChannel(b, c, b.Mul(b.Mul(dxhat, centred), r3)), -0.5);
  }
  if (a.want[3]) out[3] = SumPerChannel(b, c, b.Mul(g, b.Mul(centred, r)));
  if (a.want[4]) out[4] = SumPerChannel(b, c, g);
  return out;
}

// Row `k` of a [rows, C] node: shape [C].
NodeId Row(Builder& b, NodeId m, int64_t k) {
  IndexItem item{IndexItem::kInt};
  item.start = k;
  return b.Index(m, EncodeIndex({item}));
}

// batch_norm_train(x, running_mean, running_var, γ, β) normalises with the batch's statistics,
// so dx has the terms through them. The node is stateful (it advances the running statistics)
// and must not run again: batch_norm_grad_sums recomputes the statistics from x, with Σ g
// (dβ) and Σ g x̂ (dγ) in the same pass over each channel, and batch_norm_grad_input writes
// dx from them in one more. Backends without those kernels get them expanded into reductions
// and elementwise ops (graph/passes/batch_norm_grad_expand.h). The running statistics do not
// affect the output and get no gradient.
Grads BatchNormTrainVjp(Builder& b, const VjpArgs& a) {
  const NodeId x = Widen(b, a.in(0));
  if (b.ShapeOf(x).size() < 2) return {b.Fail(absl::InternalError("batch_norm_train: rank < 2"))};
  const NodeId g = b.Convert(a.dy, b.DTypeOf(x));
  Attrs eps;
  eps.value = a.n.value;  // {eps, momentum}: the grad ops read eps, the first
  const NodeId sums = b.Emit(Op::kBatchNormGradSums, {x, g}, std::move(eps));
  Grads out(5, kNil);
  if (a.want[0]) out[0] = b.Emit(Op::kBatchNormGradInput, {x, g, sums, b.Convert(a.in(3), b.DTypeOf(x))});
  if (a.want[3]) out[3] = Row(b, sums, 3);
  if (a.want[4]) out[4] = Row(b, sums, 2);
  return out;
}

// batch_norm_grad_sums and batch_norm_grad_input (second-order gradients of training batch
// norm): through their formulas (graph/batch_norm_grad_formula.h).
Grads BatchNormGradSumsVjp(Builder& b, const VjpArgs& a) {
  const NodeId first = static_cast<NodeId>(b.graph().nodes().size());
  const double eps = Param(b, a.n, 0);
  if (!b.status().ok()) return {kNil};
  absl::StatusOr<NodeId> value = AppendBatchNormGradSums(b.graph(), a.in(0), a.in(1), eps);
  if (!value.ok()) return {b.Fail(value.status())};
  return ThroughFormula(b, a, first, *value);
}
Grads BatchNormGradInputVjp(Builder& b, const VjpArgs& a) {
  const NodeId first = static_cast<NodeId>(b.graph().nodes().size());
  absl::StatusOr<NodeId> value =
      AppendBatchNormGradInput(b.graph(), a.in(0), a.in(1), a.in(2), a.in(3));
  if (!value.ok()) return {b.Fail(value.status())};
  return ThroughFormula(b, a, first, *value);
}

const VjpRule kNormRules[] = {
  {Op::kLayerNorm, LayerNormVjp},
  {Op::kLayerNormGrad, LayerNormGradVjp},
  {Op::kGroupNorm, GroupNormVjp},
  {Op::kBatchNorm, BatchNormVjp},
  {Op::kBatchNormTrain, BatchNormTrainVjp},
  {Op::kBatchNormGradSums, BatchNormGradSumsVjp},
  {Op::kBatchNormGradInput, BatchNormGradInputVjp},
};

}  // namespace

absl::Span<const VjpRule> NormVjpRules() { return kNormRules; }

}  // namespace pijit::graph::vjp
