#include "graph/passes/epilogue.h"

#include <vector>

namespace pijit::graph::epilogue {
namespace {

bool IsZeroScalar(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if (n.op != Op::kConstant || !n.meta.shape.empty() || !IsFloating(n.meta.dtype)) return false;
  bool zero = false;
  DispatchDType(n.meta.dtype, [&](auto tag) {
    using T = decltype(tag);
    zero = static_cast<double>(n.value.template data<T>()[0]) == 0.0;
  });
  return zero;
}

// greater(of, 0) with a floating zero scalar.
bool IsPositiveMask(const Graph& g, NodeId id, NodeId of) {
  const Node& n = g.node(id);
  return n.op == Op::kGreater && n.inputs.size() == 2 && n.inputs[0] == of &&
         IsZeroScalar(g, n.inputs[1]);
}

bool IsOutput(const Graph& g, NodeId id) {
  for (NodeId o : g.outputs())
    if (o == id) return true;
  return false;
}

}  // namespace

absl::StatusOr<bool> Run(Graph& g) {
  const size_t count = g.nodes().size();
  std::vector<std::vector<NodeId>> users(count);
  for (size_t id = 0; id < count; ++id)
    for (NodeId i : g.node(id).inputs) users[i].push_back(static_cast<NodeId>(id));
  bool changed = false;

  for (size_t r = 0; r < count; ++r) {
    const Node& relu = g.node(r);
    if (relu.op != Op::kRelu) continue;
    const NodeId c = relu.inputs[0];
    const Node& conv = g.node(c);
    if (conv.op != Op::kConv2D || conv.attr != 0 || !IsFloating(conv.meta.dtype) ||
        IsOutput(g, c)) {
      continue;
    }
    bool only_masks = true;
    for (NodeId u : users[c]) only_masks &= u == static_cast<NodeId>(r) || IsPositiveMask(g, u, c);
    if (!only_masks) continue;
    g.mutable_node(c).attr = kConvReluEpilogue;
    g.ReplaceAllUsesWith(static_cast<NodeId>(r), c);
    for (NodeId u : users[r]) users[c].push_back(u);
    users[r].clear();
    changed = true;
  }

  for (size_t w = 0; w < count; ++w) {
    const Node& where = g.node(w);
    if (where.op != Op::kWhere || !IsZeroScalar(g, where.inputs[2])) continue;
    const NodeId p = where.inputs[1];
    const Node& grad = g.node(p);
    if (grad.op != Op::kMaxPool2DGrad || grad.attr != 0 || !IsFloating(grad.meta.dtype) ||
        !(grad.meta == where.meta) || users[p].size() != 1 || IsOutput(g, p) ||
        !IsPositiveMask(g, where.inputs[0], grad.inputs[0])) {
      continue;
    }
    g.mutable_node(p).attr = kPoolGradPositiveOnly;
    g.ReplaceAllUsesWith(static_cast<NodeId>(w), p);
    changed = true;
  }
  return changed;
}

}  // namespace pijit::graph::epilogue
