#include "graph/autodiff.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/autodiff_rules.h"
#include "graph/control_flow.h"
#include "graph/gradient_sums.h"
#include "kernels/errors.h"

namespace pijit::graph {
namespace {

using namespace vjp;  // NOLINT: the rules' vocabulary (Builder, VjpArgs, Grads)

// `x op c` for a constant c.
NodeId Cmp(Builder& b, Op op, NodeId x, double c) { return b.Emit(op, {x, b.ScalarLike(c, x)}); }

// sum/mean/prod/max/min/var/std: the output's gradient spread back over the reduced axes.
Grads ReductionVjp(Builder& b, const VjpArgs& a) {
  const NodeId x = a.in(0);
  const Shape xs = b.ShapeOf(x);
  const std::vector<bool> red = ReducedAxes(a.n, xs.size());
  const Shape kept = KeptShape(xs, red);
  const NodeId gk = b.Reshape(a.dy, kept);
  const double count = static_cast<double>(ReducedCount(xs, red));
  switch (a.n.op) {
    case Op::kSum: return {b.BroadcastTo(gk, xs)};                   // d sum(x) = 1
    case Op::kMean: return {b.BroadcastTo(b.Scale(gk, 1.0 / count), xs)};  // d mean(x) = 1/n
    case Op::kProd: {
      // d prod(x) / d x_i = the product of the other elements. Dividing y by x_i is wrong when
      // x_i = 0, so zeros are counted: with none it is p / x_i (p the product of the group),
      // with exactly one the zero element gets the product of the nonzero ones and the rest
      // get 0, with two or more everything gets 0.
      const NodeId zero = b.Emit(Op::kEqual, {x, b.ScalarLike(0, x)});
      const NodeId safe = b.Where(zero, b.ScalarLike(1, x), x);
      const NodeId nonzero_prod = b.Reduce(Op::kProd, safe, a.n.ints, /*keepdims=*/true);
      const NodeId zeros = b.Reduce(Op::kSum, b.Convert(zero, b.DTypeOf(x)), a.n.ints, /*keepdims=*/true);
      const NodeId for_zero = b.Keep(Cmp(b, Op::kEqual, zeros, 1), nonzero_prod);
      const NodeId for_other = b.Keep(Cmp(b, Op::kEqual, zeros, 0), b.Div(nonzero_prod, safe));
      return {b.Mul(gk, b.Where(zero, for_zero, for_other))};
    }
    case Op::kMax:
    case Op::kMin: {
      // The gradient goes to the extremal elements, shared equally between ties.
      const NodeId mask = b.Convert(b.Emit(Op::kEqual, {x, b.Reshape(a.y, kept)}), b.DTypeOf(x));
      const NodeId ties = b.Reduce(Op::kSum, mask, a.n.ints, /*keepdims=*/true);
      return {b.Mul(mask, b.Div(gk, ties))};
    }
    case Op::kVar:
    case Op::kStd: {
      // d var = 2 (x - mean) / (n - ddof);  d std = d var / (2 std)
      const double dof = count - static_cast<double>(a.n.attr);
      const NodeId diff = b.Sub(x, b.Reduce(Op::kMean, x, a.n.ints, /*keepdims=*/true));
      if (a.n.op == Op::kVar) return {b.Mul(diff, b.Scale(gk, 2.0 / dof))};
      return {b.Mul(diff, b.Div(gk, b.Scale(b.Reshape(a.y, kept), dof)))};
    }
    default: return {b.Fail(absl::InternalError("not a reduction"))};
  }
}

// matmul with NumPy's rules: 1-D operands gain an axis, batch axes broadcast.
Grads MatMulVjp(Builder& b, const VjpArgs& a) {
  const NodeId x = a.in(0), w = a.in(1);
  const Shape sx = b.ShapeOf(x), sw = b.ShapeOf(w);
  const Shape sx2 = sx.size() == 1 ? Shape{1, sx[0]} : sx;
  const Shape sw2 = sw.size() == 1 ? Shape{sw[0], 1} : sw;
  auto out2 = InferMatMul({b.DTypeOf(x), sx2}, {b.DTypeOf(w), sw2});
  if (!out2.ok()) return {b.Fail(out2.status()), kNil};
  const NodeId g2 = b.Reshape(a.dy, out2->shape);
  // d(x @ w) = g @ wᵀ for x,  xᵀ @ g for w (summed over broadcast batch axes)
  return {a.want[0] ? b.Reshape(b.SumTo(b.MatMul(g2, b.SwapLast(b.Reshape(w, sw2))), sx2), sx) : kNil,
          a.want[1] ? b.Reshape(b.SumTo(b.MatMul(b.SwapLast(b.Reshape(x, sx2)), g2), sw2), sw) : kNil};
}

// clip(x, lo, hi) = minimum(maximum(x, lo), hi), either bound optional.
Grads ClipVjp(Builder& b, const VjpArgs& a) {
  const bool has_lo = a.n.ints.size() == 2 && a.n.ints[0], has_hi = a.n.ints.size() == 2 && a.n.ints[1];
  const NodeId x = a.in(0);
  const NodeId lo = has_lo ? a.in(1) : kNil, hi = has_hi ? a.in(1 + has_lo) : kNil;
  Grads out(a.n.inputs.size(), kNil);
  NodeId gm = a.dy;  // gradient of maximum(x, lo)
  if (has_hi) {
    const NodeId below = b.Emit(Op::kLessEqual, {has_lo ? b.Emit(Op::kMaximum, {x, lo}) : x, hi});
    if (a.want[1 + has_lo]) out[1 + has_lo] = b.Drop(below, a.dy);
    gm = b.Keep(below, a.dy);
  }
  if (has_lo) {
    const NodeId above = b.Emit(Op::kGreaterEqual, {x, lo});
    if (a.want[1]) out[1] = b.Drop(above, gm);
    gm = b.Keep(above, gm);
  }
  out[0] = gm;
  return out;
}

// concat/stack: each input's gradient is its slice of the output's gradient.
Grads JoinVjp(Builder& b, const VjpArgs& a) {
  const bool stack = a.n.op == Op::kStack;
  const int64_t nd = static_cast<int64_t>(b.ShapeOf(a.y).size());
  auto axis = NormalizeAxis(OpName(a.n.op), a.n.attr, nd);
  if (!axis.ok()) return {b.Fail(axis.status())};
  Grads out;
  int64_t offset = 0;
  for (size_t i = 0; i < a.n.inputs.size(); ++i) {
    std::vector<IndexItem> items(*axis, IndexItem{IndexItem::kSlice});
    if (stack) {
      items.push_back(IndexItem{IndexItem::kInt, static_cast<int64_t>(i)});
    } else {
      const int64_t len = b.ShapeOf(a.in(i))[*axis];
      items.push_back(IndexItem{IndexItem::kSlice, offset, offset + len, 1});
      offset += len;
    }
    out.push_back(a.want[i] ? b.Index(a.dy, EncodeIndex(items)) : kNil);
  }
  return out;
}

// The gradients of collectives (MindSpore's rules): an all-reduce sum's, with respect to each
// rank's input, is the sum of every rank's output gradient, another all-reduce sum over the
// group; max and min pass that sum to the ranks whose input was the result; an all-gather's is
// the reduce-scatter (sum) of its gradient and a reduce-scatter's (sum) the all-gather; a
// broadcast's is the output gradient itself. Prod has none.
Grads CollectiveVjp(Builder& b, const VjpArgs& a) {
  const int64_t group = CollectiveGroup(a.n);
  const int64_t op = a.n.op == Op::kAllReduce || a.n.op == Op::kReduceScatter ? CollectiveReduction(a.n) : 0;
  const bool sum_or_pick = a.n.op == Op::kAllReduce && (op == 1 || op == 2);
  if (op != 0 && !sum_or_pick) {
    return {b.Fail(absl::UnimplementedError(absl::StrCat(
        "the gradient of ", OpName(a.n.op), " with op=", kAllReduceOpNames[op], " is not supported (",
        a.n.op == Op::kAllReduce ? "sum, max and min" : "only sum", " are)")))};
  }
  Attrs attrs;
  switch (a.n.op) {
    case Op::kBroadcast: return {a.dy};
    case Op::kAllGather:
      attrs.attr = group * kAllReduceOps;  // reduce_scatter, sum
      return {b.Emit(Op::kReduceScatter, {a.dy}, attrs)};
    case Op::kReduceScatter:
      attrs.attr = group;
      return {b.Emit(Op::kAllGather, {a.dy}, attrs)};
    default: break;
  }
  attrs.attr = group * kAllReduceOps;  // all_reduce, sum
  const NodeId summed = b.Emit(Op::kAllReduce, {a.dy}, attrs);
  if (!sum_or_pick) return {summed};
  const NodeId x = a.in(0);
  return {b.Mul(summed, b.Convert(b.Emit(Op::kEqual, {x, a.y}), b.DTypeOf(x)))};
}

Grads TransposeVjp(Builder& b, const VjpArgs& a) {
  const size_t nd = b.ShapeOf(a.in(0)).size();
  Shape inverse(nd);
  for (size_t i = 0; i < nd; ++i) {
    int64_t p = a.n.ints.empty() ? static_cast<int64_t>(nd - 1 - i) : a.n.ints[i];
    inverse[p < 0 ? p + static_cast<int64_t>(nd) : p] = static_cast<int64_t>(i);
  }
  return {b.Transpose(a.dy, inverse)};
}

Grads IndexVjp(Builder& b, const VjpArgs& a) {
  Attrs at;
  at.ints = b.ShapeOf(a.in(0));
  at.attr = static_cast<int64_t>(at.ints.size());
  at.ints.insert(at.ints.end(), a.n.ints.begin(), a.n.ints.end());
  return {b.Emit(Op::kIndexGrad, {a.dy}, std::move(at))};
}

// The index arrays get no gradient.
Grads AdvIndexVjp(Builder& b, const VjpArgs& a) {
  Attrs at;
  at.ints = b.ShapeOf(a.in(0));
  at.attr = static_cast<int64_t>(at.ints.size());
  at.ints.insert(at.ints.end(), a.n.ints.begin(), a.n.ints.end());
  absl::InlinedVector<NodeId, 3> in = {a.dy};
  for (size_t i = 1; i < a.n.inputs.size(); ++i) in.push_back(a.in(i));
  Grads g = {b.EmitN(Op::kAdvIndexGrad, in, std::move(at))};
  g.resize(a.n.inputs.size(), kNil);
  return g;
}

Grads AdvIndexGradVjp(Builder& b, const VjpArgs& a) {
  Attrs at;
  at.ints.assign(a.n.ints.begin() + a.n.attr, a.n.ints.end());
  absl::InlinedVector<NodeId, 3> in = {a.dy};
  for (size_t i = 1; i < a.n.inputs.size(); ++i) in.push_back(a.in(i));
  Grads g = {b.EmitN(Op::kAdvIndex, in, std::move(at))};
  g.resize(a.n.inputs.size(), kNil);
  return g;
}

Grads IndexGradVjp(Builder& b, const VjpArgs& a) {
  return {b.Index(a.dy, absl::Span<const int64_t>(a.n.ints).subspan(a.n.attr))};
}

// conv2d(x, w, [bias]): the adjoint convolutions for x and w, dy summed over N, H, W for bias.
Grads Conv2DVjp(Builder& b, const VjpArgs& a) {
  if (a.n.attr == kConvReluEpilogue) {  // only compiled graphs have it, after autodiff
    b.Fail(absl::UnimplementedError("conv2d with a relu epilogue has no gradient rule"));
    return {kNil, kNil, kNil};
  }
  auto with_shape = [&](NodeId of) {
    Attrs at;
    at.ints = a.n.ints;
    const Shape& s = b.ShapeOf(of);
    at.ints.insert(at.ints.end(), s.begin(), s.end());
    return at;
  };
  Grads out(a.n.inputs.size(), kNil);
  if (a.want[0]) out[0] = b.Emit(Op::kConv2DGradInput, {a.dy, a.in(1)}, with_shape(a.in(0)));
  if (a.want[1]) out[1] = b.Emit(Op::kConv2DGradWeight, {a.in(0), a.dy}, with_shape(a.in(1)));
  if (out.size() > 2 && a.want[2]) out[2] = b.Reduce(Op::kSum, a.dy, {0, 2, 3}, false);
  return out;
}

// The adjoints are linear in both inputs, so their own VJPs are convolutions again (second
// order): with dx = conv2d_grad_input(dout, w), <g, dx> = <conv2d(g, w), dout>, and with
// dw = conv2d_grad_weight(x, dout), <g, dw> = <conv2d(x, g), dout>. conv2d_transpose is
// conv2d_grad_input with the output size from its pad mode, plus a bias.
Grads Conv2DGradVjp(Builder& b, const VjpArgs& a) {
  Attrs window;
  window.ints.assign(a.n.ints.begin(), a.n.ints.begin() + std::min(a.n.ints.size(), kWindowInts));
  auto with_shape = [&](NodeId of) {
    Attrs at = window;
    const Shape& s = b.ShapeOf(of);
    at.ints.insert(at.ints.end(), s.begin(), s.end());
    return at;
  };
  const NodeId p = a.in(0), q = a.in(1), g = a.dy;
  if (a.n.op == Op::kConv2DGradInput || a.n.op == Op::kConv2DTranspose) {  // (dout or x, w, [bias])
    Grads out(a.n.inputs.size(), kNil);
    if (a.want[0]) out[0] = b.Emit(Op::kConv2D, {g, q}, window);
    if (a.want[1]) out[1] = b.Emit(Op::kConv2DGradWeight, {g, p}, with_shape(q));
    if (out.size() > 2 && a.want[2]) out[2] = b.Reduce(Op::kSum, g, {0, 2, 3}, false);
    return out;
  }
  return {(!a.want[0] ? kNil : b.Emit(Op::kConv2DGradInput, {q, g}, with_shape(p))),  // (x, dout)
          (!a.want[1] ? kNil : b.Emit(Op::kConv2D, {p, g}, window))};
}

// avg_pool2d_grad is linear in dout (x gives only its shape): its VJP is avg_pool2d.
Grads AvgPool2DGradVjp(Builder& b, const VjpArgs& a) {
  Attrs at;
  at.ints = a.n.ints;
  return {kNil, a.want[1] ? b.Emit(Op::kAvgPool2D, {a.dy}, std::move(at)) : kNil};
}

Grads Pool2DVjp(Builder& b, const VjpArgs& a) {
  Attrs at;
  at.ints = a.n.ints;
  const Op op = a.n.op == Op::kMaxPool2D ? Op::kMaxPool2DGrad : Op::kAvgPool2DGrad;
  return {b.Emit(op, {a.in(0), a.dy}, std::move(at))};
}

// pow(x, p): p x^(p-1) for x (0 where p == 0), x^p log x for p (0 where x == 0).
Grads PowVjp(Builder& b, const VjpArgs& a) {
  const NodeId x = a.in(0), p = a.in(1);
  NodeId gx = kNil, gp = kNil;
  if (a.want[0]) {
    const NodeId d = b.Mul(p, b.Emit(Op::kPow, {x, b.Sub(p, b.ScalarLike(1, p))}));
    gx = b.Mul(a.dy, b.Drop(b.Emit(Op::kEqual, {p, b.ScalarLike(0, p)}), d));
  }
  if (a.want[1]) {
    const NodeId safe = b.Where(b.Emit(Op::kEqual, {x, b.ScalarLike(0, x)}), b.ScalarLike(1, x), x);
    gp = b.Mul(a.dy, b.Mul(a.y, b.Unary(Op::kLog, safe)));
  }
  return {gx, gp};
}

// gelu(x) = x Φ(x):  Φ(x) + x φ(x)
NodeId GeluDerivative(Builder& b, NodeId x) {
  const NodeId cdf = b.Scale(b.Add(b.Unary(Op::kErf, b.Scale(x, M_SQRT1_2)), b.ScalarLike(1, x)), 0.5);
  const NodeId pdf = b.Scale(b.Unary(Op::kExp, b.Scale(b.Mul(x, x), -0.5)), 0.5 * M_2_SQRTPI * M_SQRT1_2);
  return b.Add(cdf, b.Mul(x, pdf));
}

NodeId OneMinus(Builder& b, NodeId v) { return b.Sub(b.ScalarLike(1, v), v); }

#define X a.in(0)
#define Y a.y
#define G a.dy
// Wanted input k's gradient, or kNil (the expression is only built when wanted).
#define IF(k, expr) (a.want[k] ? (expr) : kNil)

// One rule per op family. Zero-gradient ops (piecewise constant, or not depending on the
// input's values) return kNil. Ops without a rule cannot be differentiated through.
const VjpRule kVjpRules[] = {
  {Op::kAdd, [](Builder& b, const VjpArgs& a) -> Grads { return {G, G}; }},                       // d(x+y) = dx + dy
  {Op::kSub, [](Builder& b, const VjpArgs& a) -> Grads { return {G, IF(1, b.Neg(G))}; }},         // d(x-y) = dx - dy
  {Op::kMul, [](Builder& b, const VjpArgs& a) -> Grads { return {IF(0, b.Mul(G, a.in(1))), IF(1, b.Mul(G, X))}; }},  // y dx + x dy
  {Op::kDiv, [](Builder& b, const VjpArgs& a) -> Grads { return {IF(0, b.Div(G, a.in(1))), IF(1, b.Neg(b.Div(b.Mul(G, Y), a.in(1))))}; }},  // dx/y - (x/y) dy/y
  {Op::kPow, PowVjp},
  {Op::kMaximum, [](Builder& b, const VjpArgs& a) -> Grads { NodeId m = b.Emit(Op::kGreaterEqual, {X, a.in(1)}); return {IF(0, b.Keep(m, G)), IF(1, b.Drop(m, G))}; }},  // ties go to x
  {Op::kMinimum, [](Builder& b, const VjpArgs& a) -> Grads { NodeId m = b.Emit(Op::kLessEqual, {X, a.in(1)}); return {IF(0, b.Keep(m, G)), IF(1, b.Drop(m, G))}; }},     // ties go to x
  {Op::kMod, [](Builder& b, const VjpArgs& a) -> Grads { return {G, IF(1, b.Neg(b.Mul(G, b.Emit(Op::kFloorDiv, {X, a.in(1)}))))}; }},  // x - floor(x/y) y
  {Op::kFloorDiv, [](Builder& b, const VjpArgs& a) -> Grads { return {kNil, kNil}; }},           // piecewise constant
  {Op::kNeg, [](Builder& b, const VjpArgs& a) -> Grads { return {b.Neg(G)}; }},                   // -1
#define PIJIT_FLOAT_VJP(e, name, surface, kernel, vjp) \
  {Op::e, [](Builder& b, const VjpArgs& a) -> Grads { return {vjp}; }},
  PIJIT_FLOAT_FUNCTIONS(PIJIT_FLOAT_VJP)  // exp, log, sin, ...: from their table (kernels/ops.h)
#undef PIJIT_FLOAT_VJP
  // y > 0 exactly where x > 0 (relu keeps NaN and zeroes -0.0): the mask reads the output, so
  // that the input need not outlive the relu (and an op before it can apply it itself).
  {Op::kRelu, [](Builder& b, const VjpArgs& a) -> Grads { return {b.Keep(Cmp(b, Op::kGreater, Y, 0), G)}; }},  // x > 0
  {Op::kAbs, [](Builder& b, const VjpArgs& a) -> Grads { return {b.Mul(G, b.Unary(Op::kSign, X))}; }},  // sign x
  {Op::kSign, [](Builder& b, const VjpArgs& a) -> Grads { return {kNil}; }},                     // piecewise constant
  {Op::kSquare, [](Builder& b, const VjpArgs& a) -> Grads { return {b.Mul(G, b.Scale(X, 2.0))}; }},  // 2x
  {Op::kSqrt, [](Builder& b, const VjpArgs& a) -> Grads { return {b.Div(G, b.Scale(Y, 2.0))}; }},   // 1/(2 sqrt x)
  {Op::kCast, [](Builder& b, const VjpArgs& a) -> Grads { return {G}; }},                         // identity (cast back)
  {Op::kWhere, [](Builder& b, const VjpArgs& a) -> Grads { return {kNil, IF(1, b.Keep(X, G)), IF(2, b.Drop(X, G))}; }},  // routes by cond
  {Op::kClip, ClipVjp},
  {Op::kFullLike, [](Builder& b, const VjpArgs& a) -> Grads { return {kNil}; }},                 // reads only the shape
  {Op::kSum, ReductionVjp},
  {Op::kMean, ReductionVjp},
  {Op::kProd, ReductionVjp},
  {Op::kMax, ReductionVjp},
  {Op::kMin, ReductionVjp},
  {Op::kVar, ReductionVjp},
  {Op::kStd, ReductionVjp},
  {Op::kSoftmax, [](Builder& b, const VjpArgs& a) -> Grads { return {b.Mul(Y, b.Sub(G, b.Reduce(Op::kSum, b.Mul(G, Y), {a.n.attr}, true)))}; }},  // y (g - Σ g y)
  {Op::kLogSoftmax, [](Builder& b, const VjpArgs& a) -> Grads { return {b.Sub(G, b.Mul(b.Unary(Op::kExp, Y), b.Reduce(Op::kSum, G, {a.n.attr}, true)))}; }},  // g - e^y Σ g
  {Op::kMatMul, MatMulVjp},
  {Op::kConv2D, Conv2DVjp},
  {Op::kMaxPool2D, Pool2DVjp},
  {Op::kAvgPool2D, Pool2DVjp},
  {Op::kConv2DGradInput, Conv2DGradVjp},
  {Op::kConv2DTranspose, Conv2DGradVjp},
  {Op::kConv2DGradWeight, Conv2DGradVjp},
  {Op::kAvgPool2DGrad, AvgPool2DGradVjp},
  {Op::kReshape, [](Builder& b, const VjpArgs& a) -> Grads { return {b.Reshape(G, b.ShapeOf(X))}; }},
  {Op::kAllReduce, CollectiveVjp},
  {Op::kAllGather, CollectiveVjp},
  {Op::kReduceScatter, CollectiveVjp},
  {Op::kBroadcast, CollectiveVjp},
  {Op::kSqueeze, [](Builder& b, const VjpArgs& a) -> Grads { return {b.Reshape(G, b.ShapeOf(X))}; }},
  {Op::kUnsqueeze, [](Builder& b, const VjpArgs& a) -> Grads { return {b.Reshape(G, b.ShapeOf(X))}; }},
  {Op::kFlatten, [](Builder& b, const VjpArgs& a) -> Grads { return {b.Reshape(G, b.ShapeOf(X))}; }},
  {Op::kTranspose, TransposeVjp},
  {Op::kBroadcastTo, [](Builder& b, const VjpArgs& a) -> Grads { return {G}; }},                  // summed to x's shape
  {Op::kIndex, IndexVjp},
  {Op::kIndexGrad, IndexGradVjp},
  {Op::kAdvIndex, AdvIndexVjp},
  {Op::kAdvIndexGrad, AdvIndexGradVjp},
  {Op::kConcat, JoinVjp},
  {Op::kStack, JoinVjp},
};

#undef X
#undef Y
#undef G
#undef IF

VjpFn FindRule(Op op) {
  for (const VjpRule& r : kVjpRules)
    if (r.op == op) return r.fn;
  for (const VjpRule& r : NormVjpRules())
    if (r.op == op) return r.fn;
  return nullptr;
}

}  // namespace

bool HasVjpRule(Op op) {
  return FindRule(op) != nullptr || op == Op::kWhileLoop || op == Op::kCond || op == Op::kResult;
}

absl::StatusOr<NodeId> AppendZeros(Graph& g, const TensorMeta& meta) {
  Builder b(g);
  NodeId r = b.Zeros(meta);
  PIJIT_RETURN_IF_ERROR(b.status());
  return r;
}

absl::StatusOr<NodeId> AppendSumTo(Graph& g, NodeId x, absl::Span<const int64_t> shape) {
  Builder b(g);
  NodeId r = b.SumTo(x, shape);
  PIJIT_RETURN_IF_ERROR(b.status());
  return r;
}

namespace {

// The gradients of a while_loop's or cond's inputs after its predicate (graph/control_flow.h),
// given its results' (kNil: none): one while_grad or cond_grad node.
absl::StatusOr<std::vector<NodeId>> RegionVjp(Builder& b, Graph& g, NodeId id, absl::Span<const NodeId> result_grads) {
  const Node n = g.node(id);  // a copy: nodes are appended below
  std::vector<NodeId> inputs(n.inputs.begin(), n.inputs.end());
  for (int64_t i = 0; i < RegionResults(n); ++i) {
    PIJIT_ASSIGN_OR_RETURN(const TensorMeta meta, RegionResultMeta(g, id, i));
    const NodeId given = static_cast<size_t>(i) < result_grads.size() ? result_grads[i] : kNil;
    inputs.push_back(given != kNil ? b.Fit(given, meta) : b.Zeros(meta));
  }
  const auto& graphs = n.region->graphs;
  if (n.op == Op::kWhileLoop) {
    const int64_t k = LoopCarried(n), m = LoopInvariants(n);
    for (int64_t j = 0; j < m; ++j) inputs.push_back(b.Zeros(g.node(n.inputs[1 + k + j]).meta));
    PIJIT_RETURN_IF_ERROR(b.status());
    PIJIT_ASSIGN_OR_RETURN(LoopVjpBodies bodies, LoopBodyVjp(graphs[0], k));
    if (LoopResiduals(n) == 0) {
      // The loop keeps each trip's values for this gradient: its body gives the residuals, and
      // while_grad reads the loop node instead of running the trips again. (A loop already
      // differentiated keeps them for that gradient; another one runs its trips again.)
      auto region = std::make_shared<Region>();
      region->graphs.push_back(bodies.body);
      g.mutable_node(id).region = std::move(region);
      inputs[0] = id;
    }
    return AppendRegion(g, Op::kWhileGrad, inputs, {std::move(bodies.body), std::move(bodies.body_bwd)}, k);
  }
  PIJIT_RETURN_IF_ERROR(b.status());
  const int64_t results = RegionResults(n);
  PIJIT_ASSIGN_OR_RETURN(Graph if_true, BodyVjp(graphs[0], results));
  PIJIT_ASSIGN_OR_RETURN(Graph if_false, BodyVjp(graphs[1], results));
  return AppendRegion(g, Op::kCondGrad, inputs, {std::move(if_true), std::move(if_false)});
}

}  // namespace

absl::StatusOr<std::vector<NodeId>> AppendBackward(Graph& g, absl::Span<const NodeId> outputs,
                                                   absl::Span<const NodeId> seeds,
                                                   absl::Span<const NodeId> wrt,
                                                   NodeId first,
                                                   absl::Span<const CustomVjp> customs) {
  const NodeId count = static_cast<NodeId>(g.nodes().size());
  absl::flat_hash_map<NodeId, const CustomVjp*> custom_of;
  for (const CustomVjp& c : customs) {
    if (c.node < 0 || c.node >= count || g.node(c.node).op != Op::kCustomGrad ||
        c.grads.size() + 1 != g.node(c.node).inputs.size()) {
      return absl::InternalError("grad: a malformed custom gradient");
    }
    custom_of[c.node] = &c;
    // The forward's computed nodes get no gradient: a use after the Cell would need one.
    for (NodeId id = c.node + 1; id < count; ++id) {
      for (NodeId i : g.node(id).inputs) {
        if (i >= c.forward_begin && i < c.node && !HasTrait(g.node(i).op, kSource)) {
          return absl::UnimplementedError(
              "grad: a value computed inside a Cell with a bprop is used outside it");
        }
      }
    }
  }
  if (outputs.size() != seeds.size()) {
    return absl::InternalError(absl::StrFormat("grad: %d outputs but %d seeds", outputs.size(), seeds.size()));
  }
  for (auto list : {outputs, seeds, wrt}) {
    for (NodeId id : list)
      if (id < 0 || id >= count) return absl::InternalError(absl::StrFormat("grad: no node %%%d", id));
  }
  // dep[i]: node i carries a gradient from some wrt node (autodiff.h: through floats, and
  // through integers computed from integers on the path by ops with a VJP rule).
  std::vector<bool> is_wrt(count, false), dep(count, false);
  for (NodeId w : wrt) is_wrt[w] = true;
  for (NodeId id = 0; id < count; ++id) {
    const Node& n = g.node(id);
    // A loop's own value is its final condition; its results carry its gradients.
    if (!CarriesGradient(n.meta.dtype) && n.op != Op::kWhileLoop && n.op != Op::kCond) continue;
    const bool integer = IsInteger(n.meta.dtype);
    bool d = is_wrt[id];
    if (id >= first && !(d || (integer && !HasVjpRule(n.op)))) {
      for (NodeId i : n.inputs) d = d || (dep[i] && (!integer || IsInteger(g.node(i).meta.dtype)));
    }
    dep[id] = d;
  }
  Builder b(g);
  std::vector<NodeId> grad(count, kNil);
  // A node's gradient contributions are summed when the node is reached (every use comes
  // later in the graph, so all have arrived), first combined where adding them up one by one
  // is slow (graph/gradient_sums.h): rows and slices written by index_grad are stacked or
  // concatenated, products of matrices become one product.
  std::vector<std::vector<NodeId>> parts(count);
  auto accumulate = [&](NodeId target, NodeId contribution) {
    parts[target].push_back(b.Fit(contribution, g.node(target).meta));
  };
  auto finalize = [&](NodeId id) {
    std::vector<NodeId>& p = parts[id];
    if (p.empty()) return;
    const TensorMeta meta = g.node(id).meta;  // a copy: the combinations below add nodes
    p = StackRowGradients(g, b, meta, std::move(p));
    p = ConcatSliceGradients(g, b, meta, std::move(p));
    p = MergeMatMulGradients(g, b, meta, std::move(p));
    grad[id] = p[0];
    for (size_t i = 1; i < p.size(); ++i) grad[id] = b.Add(grad[id], p[i]);
    p = {};
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorMeta& out = g.node(outputs[i]).meta;
    const TensorMeta& seed = g.node(seeds[i]).meta;
    if (seed.shape != out.shape) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "grad: the sensitivity of output %d has shape %s, but the output has shape %s", i,
          ShapeToString(seed.shape), ShapeToString(out.shape)));
    }
    if (dep[outputs[i]]) accumulate(outputs[i], seeds[i]);
  }
  PIJIT_RETURN_IF_ERROR(b.status());

  absl::InlinedVector<bool, 4> want;
  absl::flat_hash_map<NodeId, std::vector<NodeId>> region_seeds;  // per loop or cond, its results' gradients
  for (NodeId id = count - 1; id >= 0; --id) {
    finalize(id);
    if (auto c = custom_of.find(id); c != custom_of.end()) {
      // As the eager tape does, the bprop runs whether or not the output got a gradient
      // (zeros then: the traced nodes themselves).
      if (!dep[id] || id < first) continue;
      const CustomVjp& cv = *c->second;
      absl::flat_hash_map<NodeId, NodeId> clone;
      if (grad[id] != kNil) {
        clone[cv.dout] = b.Fit(grad[id], g.node(cv.dout).meta);
        for (NodeId k = cv.bprop_begin; k < cv.bprop_end; ++k) {
          const Node n = g.node(k);  // a copy: adding nodes may move it
          bool reads = false;
          absl::InlinedVector<NodeId, 4> ins;
          for (NodeId i : n.inputs) {
            auto it = clone.find(i);
            reads = reads || it != clone.end();
            ins.push_back(it != clone.end() ? it->second : i);
          }
          if (!reads) continue;
          if (HasTrait(n.op, kStateful)) {
            return absl::UnimplementedError("grad: a bprop that draws random numbers");
          }
          Attrs attrs = static_cast<const Attrs&>(n);
          PIJIT_ASSIGN_OR_RETURN(clone[k], g.AddOp(n.op, ins, std::move(attrs)));
        }
      }
      const Node n = g.node(id);
      for (size_t k = 0; k < cv.grads.size(); ++k) {
        NodeId gk = cv.grads[k];
        if (gk == kNoGradient || !dep[n.inputs[k + 1]]) continue;
        if (auto it = clone.find(gk); it != clone.end()) gk = it->second;
        accumulate(n.inputs[k + 1], gk);
      }
      PIJIT_RETURN_IF_ERROR(b.status());
      continue;
    }
    if (const Op op = g.node(id).op; op == Op::kResult || op == Op::kWhileLoop || op == Op::kCond) {
      const Node& n = g.node(id);
      if (!dep[id] || id < first) continue;
      if (op == Op::kResult) {
        // Kept for its region node, reached later (it comes before its results).
        if (grad[id] == kNil) continue;
        const Node& region = g.node(n.inputs[0]);
        if (region.op != Op::kWhileLoop && region.op != Op::kCond) {
          return absl::UnimplementedError(absl::StrFormat(
              "grad: the gradient of %s (a gradient of a loop or conditional) is not implemented", OpName(region.op)));
        }
        auto& seeds = region_seeds[n.inputs[0]];
        seeds.resize(static_cast<size_t>(RegionResults(region)), kNil);
        seeds[static_cast<size_t>(n.attr)] = grad[id];
        continue;
      }
      auto seeds = region_seeds.find(id);
      if (seeds == region_seeds.end()) continue;
      PIJIT_ASSIGN_OR_RETURN(std::vector<NodeId> gs, RegionVjp(b, g, id, seeds->second));
      const Node region = g.node(id);
      for (size_t j = 0; j < gs.size(); ++j)
        if (dep[region.inputs[1 + j]]) accumulate(region.inputs[1 + j], gs[j]);
      PIJIT_RETURN_IF_ERROR(b.status());
      continue;
    }
    if (grad[id] == kNil || !dep[id] || id < first) continue;
    const Node n = g.node(id);  // a copy: the rule appends nodes
    want.assign(n.inputs.size(), false);
    bool any = false;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      want[k] = dep[n.inputs[k]];
      any = any || want[k];
    }
    if (!any) continue;  // a wrt node, or a param/constant
    VjpFn rule = FindRule(n.op);
    if (rule == nullptr) {
      return absl::UnimplementedError(absl::StrFormat(
          "grad: the gradient of %s is not implemented (node %%%d: %s)", OpName(n.op), id,
          n.op == Op::kFused || n.op == Op::kFusedReduce || n.op == Op::kFusedMatMul ||
                  n.op == Op::kFusedConv2D
              ? "differentiate graphs before fusion"
              : "no VJP rule for this op"));
    }
    Grads gs = rule(b, VjpArgs{n, id, grad[id], want});
    for (size_t k = 0; k < gs.size() && k < n.inputs.size(); ++k)
      if (want[k] && gs[k] != kNil) accumulate(n.inputs[k], gs[k]);
    if (!b.status().ok()) {
      return absl::Status(b.status().code(),
                          absl::StrFormat("grad: building the gradient of %s (node %%%d): %s",
                                          OpName(n.op), id, b.status().message()));
    }
  }
  std::vector<NodeId> result;
  for (NodeId w : wrt) {
    const TensorMeta& m = g.node(w).meta;
    if (!CarriesGradient(m.dtype)) result.push_back(kNoGradient);
    else if (grad[w] == kNil) result.push_back(b.Zeros(m));
    else result.push_back(grad[w]);
  }
  PIJIT_RETURN_IF_ERROR(b.status());
  return result;
}

}  // namespace pijit::graph
