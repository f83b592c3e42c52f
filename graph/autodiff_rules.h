// Internals shared by the VJP rule files (autodiff.cc, autodiff_nn.cc): the Builder that
// appends backward nodes, what a rule sees, and the rule table's entry type. Not a public API.
#pragma once
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "graph/autodiff.h"
#include "graph/graph.h"
#include "kernels/errors.h"

namespace pijit::graph::vjp {

constexpr NodeId kNil = kNoGradient;

// Appends backward nodes. The first failure is kept and every later call returns kNil, so
// rules read as straight-line math and the caller checks status() once per rule.
class Builder {
 public:
  explicit Builder(Graph& g) : g_(g) {}
  absl::Status status() const { return status_; }
  // The graph the nodes go to, for rules that differentiate nodes they emitted themselves.
  Graph& graph() { return g_; }
  const TensorMeta& Meta(NodeId id) const { return g_.node(id).meta; }
  const Shape& ShapeOf(NodeId id) const { return Meta(id).shape; }
  DType DTypeOf(NodeId id) const { return Meta(id).dtype; }

  NodeId Emit(Op op, std::initializer_list<NodeId> in, Attrs attrs = {}) {
    return EmitN(op, absl::Span<const NodeId>(in.begin(), in.size()), std::move(attrs));
  }
  NodeId EmitN(Op op, absl::Span<const NodeId> in, Attrs attrs = {}) {
    if (!status_.ok()) return kNil;
    for (NodeId i : in)
      if (i == kNil) return Fail(absl::InternalError(absl::StrFormat("%s of a missing value", OpName(op))));
    auto r = g_.AddOp(op, in, std::move(attrs));
    if (!r.ok()) return Fail(r.status());
    return *r;
  }
  NodeId Fail(absl::Status s) {
    if (status_.ok()) status_ = std::move(s);
    return kNil;
  }

  NodeId Add(NodeId a, NodeId b) { return Emit(Op::kAdd, {a, b}); }
  NodeId Sub(NodeId a, NodeId b) { return Emit(Op::kSub, {a, b}); }
  NodeId Mul(NodeId a, NodeId b) { return Emit(Op::kMul, {a, b}); }
  NodeId Div(NodeId a, NodeId b) { return Emit(Op::kDiv, {a, b}); }
  NodeId Scale(NodeId a, double c) { return Mul(a, ScalarLike(c, a)); }
  NodeId Neg(NodeId a) { return Emit(Op::kNeg, {a}); }
  NodeId Unary(Op op, NodeId a) { return Emit(op, {a}); }
  NodeId Where(NodeId c, NodeId a, NodeId b) { return Emit(Op::kWhere, {c, a, b}); }
  // `g` where `c` holds, else 0 (and the reverse).
  NodeId Keep(NodeId c, NodeId g) { return Where(c, g, ScalarLike(0, g)); }
  NodeId Drop(NodeId c, NodeId g) { return Where(c, ScalarLike(0, g), g); }

  NodeId Scalar(double v, DType dt) {
    if (!status_.ok()) return kNil;
    auto t = pijit::Cast(Tensor::Scalar<double>(v), dt);
    if (!t.ok()) return Fail(t.status());
    return g_.AddConstant(*t);
  }
  NodeId ScalarLike(double v, NodeId like) {
    return like == kNil ? Fail(absl::InternalError("constant next to a missing value"))
                         : Scalar(v, DTypeOf(like));
  }
  NodeId Zeros(const TensorMeta& m) {
    Attrs a;
    a.ints = m.shape;
    a.dtype = m.dtype;
    a.value = Tensor::Scalar<int64_t>(0);
    return Emit(Op::kFull, {}, std::move(a));
  }
  NodeId Convert(NodeId x, DType dt) {
    if (x == kNil || DTypeOf(x) == dt) return x;
    Attrs a;
    a.dtype = dt;
    return Emit(Op::kCast, {x}, std::move(a));
  }
  NodeId Reshape(NodeId x, absl::Span<const int64_t> shape) {
    if (x == kNil || ShapeOf(x) == Shape(shape.begin(), shape.end())) return x;
    return Emit(Op::kReshape, {x}, Ints(shape));
  }
  NodeId Transpose(NodeId x, absl::Span<const int64_t> perm) {
    return Emit(Op::kTranspose, {x}, Ints(perm));
  }
  NodeId BroadcastTo(NodeId x, absl::Span<const int64_t> shape) {
    if (x == kNil || ShapeOf(x) == Shape(shape.begin(), shape.end())) return x;
    return Emit(Op::kBroadcastTo, {x}, Ints(shape));
  }
  NodeId Reduce(Op op, NodeId x, absl::Span<const int64_t> axes, bool keepdims) {
    Attrs a = Ints(axes);
    a.keepdims = keepdims;
    return Emit(op, {x}, std::move(a));
  }
  NodeId MatMul(NodeId a, NodeId b) { return Emit(Op::kMatMul, {a, b}); }
  // Swaps the last two axes (rank >= 2).
  NodeId SwapLast(NodeId x) {
    if (x == kNil) return x;
    Shape perm;
    for (size_t i = 0; i < ShapeOf(x).size(); ++i) perm.push_back(static_cast<int64_t>(i));
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    return Transpose(x, perm);
  }
  NodeId Index(NodeId x, absl::Span<const int64_t> encoded) {
    return Emit(Op::kIndex, {x}, Ints(encoded));
  }

  // Sums `x` down to `shape`, the shape it was broadcast from.
  NodeId SumTo(NodeId x, absl::Span<const int64_t> target) {
    if (x == kNil) return x;
    // `target` may be a node's shape: emitting nodes can move it, so it is copied first.
    const Shape shape(target.begin(), target.end());
    const Shape s = ShapeOf(x);
    if (s == Shape(shape.begin(), shape.end())) return x;
    const int64_t lead = static_cast<int64_t>(s.size()) - static_cast<int64_t>(shape.size());
    if (lead < 0) {
      if (NumElements(s) == NumElements(shape)) return Reshape(x, shape);  // only size-1 axes
      return Fail(NotBroadcast(s, shape));
    }
    Shape axes;
    for (int64_t i = 0; i < lead; ++i) axes.push_back(i);
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == s[lead + i]) continue;
      if (shape[i] != 1) return Fail(NotBroadcast(s, shape));
      axes.push_back(lead + static_cast<int64_t>(i));
    }
    return Reshape(SumInRuns(x, axes), shape);
  }

  // The sum of `x` over `axes` (ascending, size-1 axes kept), one run of adjacent axes at a
  // time from the innermost: a per-channel gradient of (N, C, H, W) data sums over (2, 3)
  // and then over 0, so the first sum reads its producer's contiguous rows and fuses with it
  // (fused_reduce takes adjacent axes only) instead of materialising the producer.
  NodeId SumInRuns(NodeId x, Shape axes) {
    const Shape& s = ShapeOf(x);
    Shape wide;  // the axes of size > 1: only they separate runs
    for (int64_t a : axes)
      if (s[a] != 1) wide.push_back(a);
    // wide[start..] is the innermost run: no kept axis of size > 1 between its axes.
    size_t start = wide.empty() ? 0 : wide.size() - 1;
    while (start > 0) {
      bool gap_is_ones = true;
      for (int64_t a = wide[start - 1] + 1; a < wide[start]; ++a) gap_is_ones &= s[a] == 1;
      if (!gap_is_ones) break;
      --start;
    }
    if (start == 0) return Reduce(Op::kSum, x, axes, /*keepdims=*/true);
    const Shape inner(wide.begin() + start, wide.end()), outer(wide.begin(), wide.begin() + start);
    return Reduce(Op::kSum, Reduce(Op::kSum, x, inner, /*keepdims=*/true), outer, /*keepdims=*/true);
  }

  // `g` (a gradient contribution) as a gradient of a value of meta `m`.
  // `m` is copied: it may be a node's meta, which emitting nodes can move.
  NodeId Fit(NodeId g, TensorMeta m) { return Convert(SumTo(g, m.shape), m.dtype); }

 private:
  static Attrs Ints(absl::Span<const int64_t> v) {
    Attrs a;
    a.ints.assign(v.begin(), v.end());
    return a;
  }
  static absl::Status NotBroadcast(const Shape& from, absl::Span<const int64_t> to) {
    return absl::InternalError(absl::StrFormat("grad: cannot sum a gradient of shape %s to shape %s",
                                               ShapeToString(from), ShapeToString(to)));
  }

  Graph& g_;
  absl::Status status_;
};

// What a rule sees: the forward node (a copy: appending nodes moves the graph's storage),
// its id, the gradient of its output and which inputs need a gradient.
struct VjpArgs {
  const Node& n;
  NodeId y;
  NodeId dy;
  absl::Span<const bool> want;
  NodeId in(int k) const { return n.inputs[k]; }
};
// Per input, its gradient contribution (any shape it broadcasts to, any float dtype) or kNil.
using Grads = absl::InlinedVector<NodeId, 3>;
using VjpFn = Grads (*)(Builder& b, const VjpArgs& a);

// The axes a reduction node reduces over an input of rank `nd` (empty ints: all).
inline std::vector<bool> ReducedAxes(const Node& n, size_t nd) {
  std::vector<bool> r(nd, n.ints.empty());
  for (int64_t ax : n.ints) r[ax < 0 ? ax + static_cast<int64_t>(nd) : ax] = true;
  return r;
}
// `shape` with the reduced axes kept as size 1.
inline Shape KeptShape(const Shape& shape, const std::vector<bool>& reduced) {
  Shape k = shape;
  for (size_t i = 0; i < k.size(); ++i)
    if (reduced[i]) k[i] = 1;
  return k;
}
inline int64_t ReducedCount(const Shape& shape, const std::vector<bool>& reduced) {
  int64_t c = 1;
  for (size_t i = 0; i < shape.size(); ++i)
    if (reduced[i]) c *= shape[i];
  return c;
}

struct VjpRule {
  Op op;
  VjpFn fn;
};

// The rules of the normalisation layers (autodiff_nn.cc).
absl::Span<const VjpRule> NormVjpRules();

}  // namespace pijit::graph::vjp
