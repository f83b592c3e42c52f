#include "graph/passes/matmul_epilogue.h"

#include "graph/passes/post_op_chain.h"

namespace pijit::graph::matmul_epilogue {
namespace {

bool IsRowOf(const TensorMeta& m, int64_t n) {
  if (m.shape.empty() || m.shape.back() != n) return false;
  for (size_t i = 0; i + 1 < m.shape.size(); ++i)
    if (m.shape[i] != 1) return false;
  return true;
}

}  // namespace

absl::StatusOr<bool> Run(Graph& g) {
  post_ops::Readers readers = post_ops::CountReaders(g);
  bool changed = false;
  for (size_t id = 0; id < g.nodes().size(); ++id) {
    if (g.node(static_cast<NodeId>(id)).op != Op::kMatMul) continue;
    const Node& m = g.node(static_cast<NodeId>(id));
    const TensorMeta& a = g.node(m.inputs[0]).meta;
    const TensorMeta& b = g.node(m.inputs[1]).meta;
    post_ops::Chain c = post_ops::Grow(
        g, static_cast<NodeId>(id), readers,
        [&](const TensorMeta& other, bool first) {
          return first && !b.shape.empty() && IsRowOf(other, b.shape.back());
        },
        [&](absl::Span<const int64_t> post, absl::Span<const TensorMeta* const> operands) {
          return MatMulEpilogueIsOnePrimitive(a, b, post, operands);
        });
    if (c.last < 0) continue;
    Node& last = g.mutable_node(c.last);
    last.op = Op::kFusedMatMul;
    last.inputs = {m.inputs[0], m.inputs[1]};
    for (NodeId o : c.operands) last.inputs.push_back(o);
    last.ints = std::move(c.post);
    post_ops::Absorb(readers, c);
    changed = true;
  }
  return changed;
}

}  // namespace pijit::graph::matmul_epilogue
