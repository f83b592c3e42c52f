#include "graph/passes/simplify.h"

#include <cmath>
#include <cstring>

namespace pijit::graph::simplify {
namespace {

constexpr NodeId kNoMatch = -1;

bool SameMeta(const Graph& g, NodeId a, NodeId b) { return g.node(a).meta == g.node(b).meta; }

enum class Zero { kAny, kPositive, kNegative };

// Whether node `id` is a constant whose every element equals `v` (and, for floating zeros,
// has the sign `zero` asks for).
bool IsSplat(const Graph& g, NodeId id, double v, Zero zero = Zero::kAny) {
  const Node& n = g.node(id);
  if (n.op != Op::kConstant) return false;
  Tensor t = n.value.Contiguous();
  return DispatchDType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (static_cast<double>(p[i]) != v) return false;
      if constexpr (kIsFloat<T>) {
        if (v == 0 && zero == Zero::kPositive && std::signbit(p[i])) return false;
        if (v == 0 && zero == Zero::kNegative && !std::signbit(p[i])) return false;
      }
    }
    return true;
  });
}

// The additive identity for `id`'s dtype on the side of x: for floats only -0.0 (x + -0.0
// is x for every x), for integers 0.
bool IsAddIdentity(const Graph& g, NodeId c) {
  return IsSplat(g, c, 0, IsFloating(g.node(c).meta.dtype) ? Zero::kNegative : Zero::kAny);
}
// x - c == x for every x: c is +0.0 for floats (x - +0.0 keeps -0.0), 0 for integers.
bool IsSubIdentity(const Graph& g, NodeId c) { return IsSplat(g, c, 0, Zero::kPositive); }

// perm of a transpose node as explicit non-negative axes (empty means reversed).
Shape Perm(const Node& n, size_t nd) {
  Shape p(nd);
  for (size_t i = 0; i < nd; ++i) {
    int64_t a = n.ints.empty() ? static_cast<int64_t>(nd - 1 - i) : n.ints[i];
    p[i] = a < 0 ? a + static_cast<int64_t>(nd) : a;
  }
  return p;
}
bool IsIdentity(const Shape& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

NodeId In(const Graph& g, NodeId id, int k) { return g.node(id).inputs[k]; }

// Each rule returns the node replacing `id`, or `id` itself after rewriting it in place, or
// kNoMatch.
using RuleFn = NodeId (*)(Graph& g, NodeId id);
struct Rule {
  Op op;
  RuleFn apply;
};

// op(x, target) -> x where the result has x's shape and dtype (reshape, broadcast_to).
NodeId SameShapeIsInput(Graph& g, NodeId n) {
  const NodeId x = In(g, n, 0);
  return SameMeta(g, n, x) ? x : kNoMatch;
}
// op(op(x, s1), s2) -> op(x, s2) for ops whose target replaces their input's (reshape,
// broadcast_to).
NodeId SkipInnerOfSameOp(Graph& g, NodeId n) {
  const NodeId y = In(g, n, 0);
  if (g.node(y).op != g.node(n).op) return kNoMatch;
  g.mutable_node(n).inputs[0] = In(g, y, 0);
  return n;
}

// clang-format off
const Rule kRules[] = {
  // x*1 -> x
  {Op::kMul, [](Graph& g, NodeId n) { NodeId x = In(g, n, 0); return IsSplat(g, In(g, n, 1), 1) && SameMeta(g, n, x) ? x : kNoMatch; }},
  // 1*x -> x
  {Op::kMul, [](Graph& g, NodeId n) { NodeId x = In(g, n, 1); return IsSplat(g, In(g, n, 0), 1) && SameMeta(g, n, x) ? x : kNoMatch; }},
  // x/1 -> x
  {Op::kDiv, [](Graph& g, NodeId n) { NodeId x = In(g, n, 0); return IsSplat(g, In(g, n, 1), 1) && SameMeta(g, n, x) ? x : kNoMatch; }},
  // x+0 -> x   (integers; floats only x+(-0.0))
  {Op::kAdd, [](Graph& g, NodeId n) { NodeId x = In(g, n, 0); return IsAddIdentity(g, In(g, n, 1)) && SameMeta(g, n, x) ? x : kNoMatch; }},
  // 0+x -> x   (integers; floats only (-0.0)+x)
  {Op::kAdd, [](Graph& g, NodeId n) { NodeId x = In(g, n, 1); return IsAddIdentity(g, In(g, n, 0)) && SameMeta(g, n, x) ? x : kNoMatch; }},
  // x-0 -> x   (integers; floats only x-(+0.0))
  {Op::kSub, [](Graph& g, NodeId n) { NodeId x = In(g, n, 0); return IsSubIdentity(g, In(g, n, 1)) && SameMeta(g, n, x) ? x : kNoMatch; }},
  // neg(neg(x)) -> x
  {Op::kNeg, [](Graph& g, NodeId n) { NodeId y = In(g, n, 0); return g.node(y).op == Op::kNeg ? In(g, y, 0) : kNoMatch; }},
  // reshape(x, shape(x)) -> x
  {Op::kReshape, SameShapeIsInput},
  // reshape(reshape(x, s1), s2) -> reshape(x, s2)
  {Op::kReshape, SkipInnerOfSameOp},
  // broadcast_to(x, shape(x)) -> x
  {Op::kBroadcastTo, SameShapeIsInput},
  // broadcast_to(broadcast_to(x, s1), s2) -> broadcast_to(x, s2)
  {Op::kBroadcastTo, SkipInnerOfSameOp},
  // transpose(x, identity) -> x
  {Op::kTranspose, [](Graph& g, NodeId n) {
    NodeId x = In(g, n, 0);
    return IsIdentity(Perm(g.node(n), g.node(x).meta.shape.size())) ? x : kNoMatch;
  }},
  // transpose(transpose(x, p), q) -> transpose(x, r) with r[i] = p[q[i]]; x when r is identity
  {Op::kTranspose, [](Graph& g, NodeId n) {
    NodeId y = In(g, n, 0);
    if (g.node(y).op != Op::kTranspose) return kNoMatch;
    NodeId x = In(g, y, 0);
    const size_t nd = g.node(x).meta.shape.size();
    Shape p = Perm(g.node(y), nd), q = Perm(g.node(n), nd), r(nd);
    for (size_t i = 0; i < nd; ++i) r[i] = p[q[i]];
    if (IsIdentity(r)) return x;
    Node& node = g.mutable_node(n);
    node.inputs[0] = x;
    node.ints = r;
    return n;
  }},
  // full_like(x, v) -> full(x's shape, v): it reads only x's meta (the sizes are fixed here),
  // so x is no longer kept alive by it (a loss computed only to seed its own gradient, in a
  // graph that returns the gradients, then goes)
  {Op::kFullLike, [](Graph& g, NodeId n) {
    Node& node = g.mutable_node(n);
    node.op = Op::kFull;
    node.ints = node.meta.shape;
    node.dtype = node.meta.dtype;
    node.inputs.clear();
    return n;
  }},
};
// clang-format on

// op(..., broadcast_to(x, s), ...) -> op(..., x, ...) for an elementwise op of several
// operands that broadcasts x to the same result by itself (same dtype and shape). Returns
// whether an input was replaced.
bool DropBroadcastInputs(Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if (!IsElementwise(n.op) || n.inputs.size() < 2) return false;
  bool changed = false;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const NodeId b = g.node(id).inputs[k];
    if (g.node(b).op != Op::kBroadcastTo) continue;
    Node trial = g.node(id);
    trial.inputs[k] = In(g, b, 0);
    absl::InlinedVector<const TensorMeta*, 3> metas;
    for (NodeId i : trial.inputs) metas.push_back(&g.node(i).meta);
    absl::StatusOr<TensorMeta> meta = InferNode(trial, metas);
    if (!meta.ok() || !(*meta == g.node(id).meta)) continue;
    g.mutable_node(id).inputs[k] = trial.inputs[k];
    changed = true;
  }
  return changed;
}

}  // namespace

absl::StatusOr<bool> Run(Graph& g) {
  const size_t count = g.nodes().size();
  // Variables written in place (assign's target, training batch norm's running statistics):
  // a value computed from one (p * 1.0) must stay a value of its own, not become the variable,
  // which would then read as the write left it.
  std::vector<bool> written(count, false);
  for (const Node& n : g.nodes()) {
    if (n.op == Op::kAssign && !n.inputs.empty()) written[n.inputs[0]] = true;
    if (n.op == Op::kBatchNormTrain && n.inputs.size() >= 3) {
      written[n.inputs[1]] = true;
      written[n.inputs[2]] = true;
    }
  }
  std::vector<NodeId> repl(count);
  bool changed = false;
  for (size_t i = 0; i < count; ++i) {
    const NodeId id = static_cast<NodeId>(i);
    repl[i] = id;
    for (NodeId& in : g.mutable_node(id).inputs) {
      changed |= repl[in] != in;
      in = repl[in];
    }
    changed |= DropBroadcastInputs(g, id);
    // After an in-place rewrite the node may match other rules: start over (each rewrite
    // shortens a chain, so this ends).
    for (size_t k = 0; k < std::size(kRules); ++k) {
      const Rule& rule = kRules[k];
      if (g.node(id).op != rule.op) continue;
      NodeId r = rule.apply(g, id);
      if (r == kNoMatch) continue;
      if (r != id && written[r]) continue;
      if (r != id) {
        repl[i] = r;
        break;
      }
      changed = true;  // rewritten in place
      k = static_cast<size_t>(-1);
    }
  }
  std::vector<NodeId> outputs = g.outputs();
  for (NodeId& o : outputs) {
    changed |= repl[o] != o;
    o = repl[o];
  }
  g.SetOutputs(std::move(outputs));
  return changed;
}

}  // namespace pijit::graph::simplify
