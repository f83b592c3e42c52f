#include "graph/passes/constant_folding.h"

namespace pijit::graph::constant_folding {

absl::StatusOr<bool> Run(Graph& g) {
  bool changed = false;
  for (size_t id = 0; id < g.nodes().size(); ++id) {
    const Node& n = g.node(static_cast<NodeId>(id));
    if (HasTrait(n.op, kSource) || HasTrait(n.op, kStateful) || HasTrait(n.op, kRegion) ||
        n.op == Op::kResult ||
        NumElements(n.meta.shape) > kMaxFoldedElements) {
      continue;
    }
    absl::InlinedVector<const Tensor*, 2> args;
    bool all_constant = true;
    for (NodeId i : n.inputs) {
      const Node& in = g.node(i);
      all_constant &= in.op == Op::kConstant;
      args.push_back(&in.value);
    }
    if (!all_constant) continue;
    auto value = RunNode(n, args);
    if (!value.ok() || !(MetaOf(*value) == n.meta)) continue;
    // A private contiguous copy: kernels may return views of their inputs (reshape).
    Tensor owned = Tensor::Empty(value->shape(), value->dtype());
    CopyInto(*value, owned);
    g.ReplaceWithConstant(static_cast<NodeId>(id), std::move(owned));
    changed = true;
  }
  return changed;
}

}  // namespace pijit::graph::constant_folding
