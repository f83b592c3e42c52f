#include "graph/passes/conv_epilogue.h"

#include <optional>
#include <vector>

namespace pijit::graph::conv_epilogue {
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

// [C, 1, 1] or [1, C, 1, 1]: a bias along the channels of an NCHW result.
bool IsChannelVector(const TensorMeta& m, int64_t c) {
  const Shape& s = m.shape;
  if (s.size() == 3) return s[0] == c && s[1] == 1 && s[2] == 1;
  return s.size() == 4 && s[0] == 1 && s[1] == c && s[2] == 1 && s[3] == 1;
}

struct Chain {
  Shape post;                    // MatMulPost codes
  std::vector<NodeId> operands;  // read by bias/add, in order
  NodeId last = -1;              // the op the fused node replaces
};

// The longest chain after conv2d `cv` that one kernel runs (last == -1 when none).
Chain Grow(const Graph& g, NodeId cv, const Window2D& win, const std::vector<int>& readers,
           const std::vector<NodeId>& reader) {
  const Node& c = g.node(cv);
  const TensorMeta& x = g.node(c.inputs[0]).meta;
  const TensorMeta& w = g.node(c.inputs[1]).meta;
  const TensorMeta* bias = c.inputs.size() > 2 ? &g.node(c.inputs[2]).meta : nullptr;
  Chain best;
  Chain cur;
  NodeId at = cv;
  while (readers[at] == 1) {
    const NodeId next = reader[at];
    const Node& n = g.node(next);
    if (!(n.meta == c.meta)) break;
    MatMulPost act;
    Chain grown = cur;
    if (ActivationOf(n.op, &act)) {
      grown.post.push_back(static_cast<int64_t>(act));
    } else if (n.op == Op::kAdd && n.inputs[0] != n.inputs[1]) {
      const NodeId other = n.inputs[0] == at ? n.inputs[1] : n.inputs[0];
      const bool is_bias = cur.post.empty() && bias == nullptr &&
                           IsChannelVector(g.node(other).meta, c.meta.shape[1]);
      grown.post.push_back(static_cast<int64_t>(is_bias ? MatMulPost::kBias : MatMulPost::kAdd));
      grown.operands.push_back(other);
    } else {
      break;
    }
    std::vector<const TensorMeta*> metas;
    for (NodeId o : grown.operands) metas.push_back(&g.node(o).meta);
    if (!Conv2DEpilogueIsOnePrimitive(x, w, bias, win, grown.post, metas)) break;
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
    const Node& cv = g.node(static_cast<NodeId>(id));
    // A convolution with a relu epilogue already (graph/passes/epilogue.h) stays as it is.
    if (cv.op != Op::kConv2D || cv.attr != 0 || cv.inputs.size() < 2) continue;
    auto win = DecodeWindow("conv2d", cv.ints);
    if (!win.ok()) continue;
    Chain c = Grow(g, static_cast<NodeId>(id), *win, readers, reader);
    if (c.last < 0) continue;
    const Node& conv = g.node(static_cast<NodeId>(id));
    Node& last = g.mutable_node(c.last);
    last.op = Op::kFusedConv2D;
    last.inputs = conv.inputs;  // x, w and the convolution's own bias, if any
    for (NodeId o : c.operands) last.inputs.push_back(o);
    last.ints = conv.ints;
    last.ints.insert(last.ints.end(), c.post.begin(), c.post.end());
    last.attr = 0;
    changed = true;
  }
  return changed;
}

}  // namespace pijit::graph::conv_epilogue
