// VJP rules of the normalisation layers: layer_norm, batch_norm and batch_norm_train, built
// from reductions and elementwise ops. With x̂ = (x - μ) r, r = 1/sqrt(σ² + eps) and
// y = γ x̂ + β, the adjoints are
//
//     dβ = Σ g,   dγ = Σ g x̂,   dx̂ = γ g
//     dx = r (dx̂ - mean(dx̂) - x̂ mean(dx̂ x̂))   when μ, σ² are the statistics of x itself
//     dx = r dx̂                                 when they are given (inference batch norm)
//
// with Σ over the axes a parameter is broadcast along and the means over the normalised axes.
#include <cmath>

#include "graph/autodiff_rules.h"

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

// layer_norm(x, [γ], [β]): statistics over the trailing len(normalized_shape) axes; γ and β
// have the normalised shape, so accumulation sums their gradients over the leading axes.
Grads LayerNormVjp(Builder& b, const VjpArgs& a) {
  const bool has_gamma = a.n.ints.size() >= 2 && a.n.ints[0];
  const bool has_beta = a.n.ints.size() >= 2 && a.n.ints[1];
  const int gamma_in = 1, beta_in = 1 + has_gamma;
  const NodeId x = Widen(b, a.in(0)), g = Widen(b, a.dy);
  const int64_t nd = static_cast<int64_t>(b.ShapeOf(x).size());
  const int64_t k = static_cast<int64_t>(a.n.ints.size()) - 2;
  if (k < 1 || k > nd) return {b.Fail(absl::InternalError("layer_norm: bad normalized_shape"))};
  Shape axes;
  for (int64_t i = nd - k; i < nd; ++i) axes.push_back(i);
  const Normalised s = NormaliseOwn(b, x, axes, Param(b, a.n, 0));
  Grads out(a.n.inputs.size(), kNil);
  if (has_beta && a.want[beta_in]) out[beta_in] = g;
  if (has_gamma && a.want[gamma_in]) out[gamma_in] = b.Mul(g, s.xhat);
  if (a.want[0]) {
    const NodeId dxhat = has_gamma ? b.Mul(g, Widen(b, a.in(gamma_in))) : g;
    out[0] = OwnStatsInputGrad(b, s, dxhat, axes);
  }
  return out;
}

// batch_norm's per-channel operands have shape [C]; against x of shape [N, C, ...] they are
// viewed as [1, C, 1, ...] and their gradients summed over every axis but 1.
struct Channels {
  Shape view;  // [1, C, 1, ...]
  Shape axes;  // {0, 2, 3, ...}
};
Channels ChannelsOf(const Shape& xs) {
  Channels c;
  for (size_t i = 0; i < xs.size(); ++i) {
    c.view.push_back(i == 1 ? xs[1] : 1);
    if (i != 1) c.axes.push_back(static_cast<int64_t>(i));
  }
  return c;
}
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

// batch_norm_train(x, running_mean, running_var, γ, β) normalises with the batch's statistics,
// so dx has the terms through them. The node is stateful (it advances the running statistics)
// and must not run again: the statistics are recomputed here from x with reductions. The
// running statistics do not affect the output and get no gradient.
Grads BatchNormTrainVjp(Builder& b, const VjpArgs& a) {
  const NodeId x = Widen(b, a.in(0)), g = Widen(b, a.dy);
  if (b.ShapeOf(x).size() < 2) return {b.Fail(absl::InternalError("batch_norm_train: rank < 2"))};
  const Channels c = ChannelsOf(b.ShapeOf(x));
  const Normalised s = NormaliseOwn(b, x, c.axes, Param(b, a.n, 0));
  const NodeId dxhat = b.Mul(g, PerChannel(b, c, a.in(3)));
  Grads out(5, kNil);
  if (a.want[0]) out[0] = OwnStatsInputGrad(b, s, dxhat, c.axes);
  if (a.want[3]) out[3] = SumPerChannel(b, c, b.Mul(g, s.xhat));
  if (a.want[4]) out[4] = SumPerChannel(b, c, g);
  return out;
}

const VjpRule kNormRules[] = {
  {Op::kLayerNorm, LayerNormVjp},
  {Op::kBatchNorm, BatchNormVjp},
  {Op::kBatchNormTrain, BatchNormTrainVjp},
};

}  // namespace

absl::Span<const VjpRule> NormVjpRules() { return kNormRules; }

}  // namespace pijit::graph::vjp
