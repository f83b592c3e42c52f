#include "graph/passes/matmul_epilogue.h"

#include <vector>

namespace pijit::graph::matmul_epilogue {
namespace {

// The post-op an activation node applies, or false.
bool ActivationOf(Op op, MatMulPost* out) {
  switch (op) {
    case Op::kRelu: *out = MatMulPost::kRelu; return true;
    case Op::kGelu: *out = MatMulPost::kGelu; return true;
    case Op::kTanh: *out = MatMulPost::kTanh; return true;
    case Op::kSigmoid: *out = MatMulPost::kSigmoid; return true;
    default: return false;
  }
}

bool IsRowOf(const TensorMeta& m, int64_t n) {
  if (m.shape.empty() || m.shape.back() != n) return false;
  for (size_t i = 0; i + 1 < m.shape.size(); ++i)
    if (m.shape[i] != 1) return false;
  return true;
}

struct Chain {
  Shape post;                    // MatMulPost codes
  std::vector<NodeId> operands;  // read by bias/add, in order
  NodeId last = -1;              // the op the fused node replaces
};

// The longest chain after matmul `mm` that one primitive runs (last == -1 when none).
Chain Grow(const Graph& g, NodeId mm, const std::vector<int>& readers,
           const std::vector<NodeId>& reader) {
  const Node& m = g.node(mm);
  const TensorMeta& a = g.node(m.inputs[0]).meta;
  const TensorMeta& b = g.node(m.inputs[1]).meta;
  Chain best;
  Chain cur;
  NodeId at = mm;
  while (readers[at] == 1) {
    const NodeId next = reader[at];
    const Node& n = g.node(next);
    if (!(n.meta == m.meta)) break;
    MatMulPost act;
    Chain grown = cur;
    if (ActivationOf(n.op, &act)) {
      grown.post.push_back(static_cast<int64_t>(act));
    } else if (n.op == Op::kAdd && n.inputs[0] != n.inputs[1]) {
      const NodeId other = n.inputs[0] == at ? n.inputs[1] : n.inputs[0];
      const bool bias = cur.post.empty() && !b.shape.empty() &&
                        IsRowOf(g.node(other).meta, b.shape.back());
      grown.post.push_back(static_cast<int64_t>(bias ? MatMulPost::kBias : MatMulPost::kAdd));
      grown.operands.push_back(other);
    } else {
      break;
    }
    std::vector<const TensorMeta*> metas;
    for (NodeId o : grown.operands) metas.push_back(&g.node(o).meta);
    if (!MatMulEpilogueIsOnePrimitive(a, b, grown.post, metas)) break;
    grown.last = next;
    cur = std::move(grown);
    best = cur;
    at = next;
  }
  return best;
}

}  // namespace

absl::StatusOr<bool> Run(Graph& g) {
  const size_t n = g.nodes().size();
  // Readers of each node (graph outputs count), and the one reader when there is one.
  std::vector<int> readers(n, 0);
  std::vector<NodeId> reader(n, -1);
  for (size_t id = 0; id < n; ++id)
    for (NodeId i : g.node(static_cast<NodeId>(id)).inputs) {
      ++readers[i];
      reader[i] = static_cast<NodeId>(id);
    }
  for (NodeId o : g.outputs()) readers[o] += 2;  // never an inner link
  bool changed = false;
  for (size_t id = 0; id < n; ++id) {
    if (g.node(static_cast<NodeId>(id)).op != Op::kMatMul) continue;
    Chain c = Grow(g, static_cast<NodeId>(id), readers, reader);
    if (c.last < 0) continue;
    const Node& mm = g.node(static_cast<NodeId>(id));
    Node& last = g.mutable_node(c.last);
    last.op = Op::kFusedMatMul;
    last.inputs = {mm.inputs[0], mm.inputs[1]};
    for (NodeId o : c.operands) last.inputs.push_back(o);
    last.ints = std::move(c.post);
    changed = true;
  }
  return changed;
}

}  // namespace pijit::graph::matmul_epilogue
