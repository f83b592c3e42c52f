#include "graph/executor.h"

#include "kernels/errors.h"

namespace pijit::graph {

absl::StatusOr<CompiledGraph> CompiledGraph::Compile(Graph g) {
  PIJIT_RETURN_IF_ERROR(g.Verify());
  CompiledGraph c;
  const auto& nodes = g.nodes();
  c.last_use_.assign(nodes.size(), -1);
  for (size_t id = 0; id < nodes.size(); ++id)
    for (NodeId i : nodes[id].inputs) c.last_use_[i] = static_cast<int32_t>(id);
  for (NodeId o : g.outputs()) c.last_use_[o] = static_cast<int32_t>(nodes.size());
  c.graph_ = std::move(g);
  return c;
}

absl::Status CompiledGraph::Run(absl::Span<const Tensor* const> inputs,
                                std::vector<Tensor>* outputs) const {
  const auto& nodes = graph_.nodes();
  absl::InlinedVector<Tensor, 16> values(nodes.size());
  absl::InlinedVector<const Tensor*, 2> args;
  for (size_t id = 0; id < nodes.size(); ++id) {
    const Node& n = nodes[id];
    if (n.op == Op::kParam) {
      values[id] = *inputs[n.param_index];
      continue;
    }
    args.clear();
    for (NodeId i : n.inputs) args.push_back(&values[i]);
    PIJIT_ASSIGN_OR_RETURN(values[id], RunNode(n, args));
    // Release inputs whose last reader this was, so their buffers can be reused.
    for (NodeId i : n.inputs)
      if (last_use_[i] == static_cast<int32_t>(id)) values[i] = Tensor();
  }
  outputs->clear();
  for (NodeId o : graph_.outputs()) outputs->push_back(values[o]);
  return absl::OkStatus();
}

}  // namespace pijit::graph
