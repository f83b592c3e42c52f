#include "graph/passes/conv_epilogue.h"

#include "graph/passes/post_op_chain.h"

namespace pijit::graph::conv_epilogue {

absl::StatusOr<bool> Run(Graph& g) {
  post_ops::Readers readers = post_ops::CountReaders(g);
  bool changed = false;
  for (size_t id = 0; id < g.nodes().size(); ++id) {
    const Node& cv = g.node(static_cast<NodeId>(id));
    // A convolution with a relu epilogue already (graph/passes/epilogue.h) stays as it is.
    if (cv.op != Op::kConv2D || cv.attr != 0 || cv.inputs.size() < 2) continue;
    auto win = DecodeWindow("conv2d", cv.ints);
    if (!win.ok()) continue;
    const TensorMeta& x = g.node(cv.inputs[0]).meta;
    const TensorMeta& w = g.node(cv.inputs[1]).meta;
    const TensorMeta* bias = cv.inputs.size() > 2 ? &g.node(cv.inputs[2]).meta : nullptr;
    const int64_t channels = cv.meta.shape[1];
    post_ops::Chain c = post_ops::Grow(
        g, static_cast<NodeId>(id), readers,
        [&](const TensorMeta& other, bool first) {
          return first && bias == nullptr && IsConvChannelVector(other, channels);
        },
        [&](absl::Span<const int64_t> post, absl::Span<const TensorMeta* const> operands) {
          return Conv2DEpilogueIsOnePrimitive(x, w, bias, *win, post, operands);
        });
    if (c.last < 0) continue;
    Node& last = g.mutable_node(c.last);
    last.op = Op::kFusedConv2D;
    last.inputs = cv.inputs;  // x, w and the convolution's own bias, if any
    for (NodeId o : c.operands) last.inputs.push_back(o);
    last.ints = cv.ints;
    last.ints.insert(last.ints.end(), c.post.begin(), c.post.end());
    last.attr = 0;
    post_ops::Absorb(readers, c);
    changed = true;
  }
  return changed;
}

}  // namespace pijit::graph::conv_epilogue
