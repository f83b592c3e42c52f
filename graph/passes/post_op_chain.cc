#include "graph/passes/post_op_chain.h"

#include "kernels/ops.h"

namespace pijit::graph::post_ops {
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

}  // namespace

Readers CountReaders(const Graph& g) {
  const size_t n = g.nodes().size();
  Readers r{std::vector<int>(n, 0), std::vector<NodeId>(n, -1)};
  for (size_t id = 0; id < n; ++id) {
    for (NodeId i : g.node(static_cast<NodeId>(id)).inputs) {
      ++r.count[i];
      r.only[i] = static_cast<NodeId>(id);
    }
  }
  for (NodeId o : g.outputs()) r.count[o] += 2;
  return r;
}

void Absorb(Readers& readers, const Chain& c) {
  for (NodeId o : c.operands)
    if (readers.count[o] == 1) readers.only[o] = c.last;
}

Chain Grow(const Graph& g, NodeId producer, const Readers& readers,
           absl::FunctionRef<bool(const TensorMeta& other, bool first)> is_bias,
           absl::FunctionRef<bool(absl::Span<const int64_t> post,
                                  absl::Span<const TensorMeta* const> operands)>
               one_primitive) {
  const TensorMeta& meta = g.node(producer).meta;
  Chain best;
  Chain cur;
  NodeId at = producer;
  while (readers.count[at] == 1) {
    const NodeId next = readers.only[at];
    const Node& n = g.node(next);
    if (!(n.meta == meta)) break;
    MatMulPost act;
    Chain grown = cur;
    if (ActivationOf(n.op, &act)) {
      grown.post.push_back(static_cast<int64_t>(act));
    } else if (n.op == Op::kAdd && n.inputs[0] != n.inputs[1]) {
      const NodeId other = n.inputs[0] == at ? n.inputs[1] : n.inputs[0];
      const bool bias = is_bias(g.node(other).meta, cur.post.empty());
      grown.post.push_back(static_cast<int64_t>(bias ? MatMulPost::kBias : MatMulPost::kAdd));
      grown.operands.push_back(other);
    } else if (n.op == Op::kMul && n.inputs[0] != n.inputs[1]) {
      grown.post.push_back(static_cast<int64_t>(MatMulPost::kMul));
      grown.operands.push_back(n.inputs[0] == at ? n.inputs[1] : n.inputs[0]);
    } else {
      break;
    }
    std::vector<const TensorMeta*> metas;
    for (NodeId o : grown.operands) metas.push_back(&g.node(o).meta);
    if (!one_primitive(grown.post, metas)) break;
    grown.last = next;
    cur = std::move(grown);
    best = cur;
    at = next;
  }
  return best;
}

}  // namespace pijit::graph::post_ops
