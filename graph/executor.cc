#include "graph/executor.h"

#include "kernels/errors.h"

namespace pijit::graph {
namespace {

// Per output: whether its storage may be shared with a param, a constant or an earlier
// output. Views (reshape, transpose) share their input's storage, so they are looked through.
std::vector<bool> SharedOutputs(const Graph& g) {
  auto base = [&g](NodeId id) {
    while (HasTrait(g.node(id).op, kShape)) id = g.node(id).inputs[0];
    return id;
  };
  std::vector<bool> shared;
  std::vector<NodeId> bases;
  for (NodeId o : g.outputs()) {
    NodeId b = base(o);
    bool s = HasTrait(g.node(b).op, kSource);
    for (NodeId earlier : bases) s |= earlier == b;
    bases.push_back(b);
    shared.push_back(s);
  }
  return shared;
}

}  // namespace

absl::StatusOr<CompiledGraph> CompiledGraph::Compile(Graph g, const CompileOptions& options) {
  PIJIT_RETURN_IF_ERROR(g.Verify());
  CompiledGraph c;
  const std::vector<bool> shared_before = SharedOutputs(g);
  if (options.optimize) PIJIT_RETURN_IF_ERROR(RunPipeline(g, options.pipeline));
  const std::vector<bool> shared_after = SharedOutputs(g);
  for (size_t i = 0; i < shared_after.size(); ++i)
    c.copy_output_.push_back(shared_after[i] && !shared_before[i]);
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
  const auto& outs = graph_.outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& v = values[outs[i]];
    if (!copy_output_[i]) {
      outputs->push_back(v);
      continue;
    }
    Tensor fresh = Tensor::Empty(v.shape(), v.dtype());
    CopyInto(v, fresh);
    outputs->push_back(std::move(fresh));
  }
  return absl::OkStatus();
}

}  // namespace pijit::graph
