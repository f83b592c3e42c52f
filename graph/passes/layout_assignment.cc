#include "graph/passes/layout_assignment.h"

#include <vector>

#include "kernels/blocked_layout.h"
#include "kernels/errors.h"

namespace pijit::graph::layout_assignment {
namespace {

// A convolution's epilogue as Conv2DBlockedLayouts and fused_conv2d take it: the window's
// ints, the post-ops, and which inputs are the convolution's own bias and its operands.
struct ConvParts {
  Window2D win;
  Shape window_ints;
  Shape post;
  bool has_bias = false;
  size_t first_operand = 2;
};

// The parts of a float32 conv2d or NCHW fused_conv2d; none for other nodes.
std::optional<ConvParts> ConvPartsOf(const Node& n) {
  if ((n.op != Op::kConv2D && n.op != Op::kFusedConv2D) || (n.attr != 0 && n.op != Op::kConv2D) ||
      n.ints.size() < kWindowInts || n.meta.dtype != DType::kFloat32) {
    return std::nullopt;
  }
  ConvParts p;
  p.window_ints.assign(n.ints.begin(), n.ints.begin() + kWindowInts);
  auto win = DecodeWindow("conv2d", p.window_ints);
  if (!win.ok()) return std::nullopt;
  p.win = *win;
  size_t reads = 0;
  if (n.op == Op::kConv2D) {
    if (n.attr == kConvReluEpilogue) p.post.push_back(static_cast<int64_t>(MatMulPost::kRelu));
    else if (n.attr != 0) return std::nullopt;
  } else {
    p.post.assign(n.ints.begin() + kWindowInts, n.ints.end());
    for (int64_t q : p.post) reads += MatMulPostTakesOperand(q);
  }
  const size_t rest = n.inputs.size() - 2;
  if (rest != reads && rest != reads + 1) return std::nullopt;
  p.has_bias = rest == reads + 1;
  p.first_operand = 2 + p.has_bias;
  return p;
}

// Whether `m` broadcasts against an NCHW result with `c` channels as a channel vector
// ([C, 1, 1] or [1, C, 1, 1], rank 4 at most) or as a single value.
bool IsChannelVectorOrSingle(const TensorMeta& m, int64_t c) {
  const Shape& s = m.shape;
  if (s.size() > 4) return false;
  if (NumElements(s) == 1) return true;
  Shape padded(4 - s.size(), 1);
  padded.insert(padded.end(), s.begin(), s.end());
  return padded[0] == 1 && padded[1] == c && padded[2] == 1 && padded[3] == 1;
}

// Ops that may read a blocked value: a reader of any other kind (or the graph's outputs) needs
// it in NCHW.
bool MayReadBlocked(const Node& n) {
  return n.op == Op::kConv2D || n.op == Op::kFusedConv2D || n.op == Op::kMaxPool2D ||
         n.op == Op::kAvgPool2D || n.op == Op::kFused ||
         (IsElementwise(n.op) && !HasTrait(n.op, kStateful));
}

class Rewriter {
 public:
  explicit Rewriter(const Graph& old)
      : old_(old), plain_(old.nodes().size(), -1), blocked_(old.nodes().size(), -1),
        block_(old.nodes().size(), 0), channel_view_(old.nodes().size(), -1),
        plain_reader_(old.nodes().size(), false) {
    for (const Node& n : old.nodes())
      if (!MayReadBlocked(n))
        for (NodeId i : n.inputs) plain_reader_[i] = true;
    for (NodeId o : old.outputs()) plain_reader_[o] = true;
  }

  // Builds the rewritten graph; false when no convolution went blocked (then it is not used).
  absl::StatusOr<bool> Build() {
    for (NodeId i = 0; i < static_cast<NodeId>(old_.nodes().size()); ++i) {
      PIJIT_ASSIGN_OR_RETURN(bool done, TryConv(i));
      if (done) {
        any_ = true;
        continue;
      }
      PIJIT_ASSIGN_OR_RETURN(done, TryPool(i));
      if (!done) { PIJIT_ASSIGN_OR_RETURN(done, TryElementwise(i)); }
      if (!done) PIJIT_RETURN_IF_ERROR(Copy(i));
    }
    if (!any_) return false;
    std::vector<NodeId> outputs;
    for (NodeId o : old_.outputs()) {
      PIJIT_ASSIGN_OR_RETURN(NodeId p, Plain(o));
      outputs.push_back(p);
    }
    out_.SetOutputs(std::move(outputs));
    return true;
  }

  Graph& result() { return out_; }

 private:
  // Old node `i` in NCHW in the new graph (a from_blocked, made once, when it is blocked).
  absl::StatusOr<NodeId> Plain(NodeId i) {
    if (plain_[i] >= 0) return plain_[i];
    Attrs none;
    PIJIT_ASSIGN_OR_RETURN(plain_[i], out_.AddOp(Op::kFromBlocked, {blocked_[i]}, none));
    return plain_[i];
  }
  // Old node `i` in the layout of block `b` (a to_blocked, made once, when it is NCHW).
  absl::StatusOr<NodeId> Blocked(NodeId i, int64_t b) {
    if (blocked_[i] >= 0 && block_[i] == b) return blocked_[i];
    if (blocked_[i] >= 0) {
      return absl::InternalError("layout_assignment: a value in two blocked layouts");
    }
    Attrs a;
    a.attr = b;
    PIJIT_ASSIGN_OR_RETURN(blocked_[i], out_.AddOp(Op::kToBlocked, {plain_[i]}, a));
    block_[i] = b;
    return blocked_[i];
  }
  // Old node `i`, a channel vector or single value, as it broadcasts against blocked tensors.
  absl::StatusOr<NodeId> ChannelView(NodeId i, int64_t c, int64_t b) {
    const TensorMeta& m = old_.node(i).meta;
    if (NumElements(m.shape) == 1) return Plain(i);
    if (channel_view_[i] >= 0) return channel_view_[i];
    PIJIT_ASSIGN_OR_RETURN(NodeId p, Plain(i));
    PIJIT_ASSIGN_OR_RETURN(channel_view_[i],
                           out_.AddOp(Op::kReshape, {p}, Shape{1, c / b, 1, 1, b}));
    return channel_view_[i];
  }
  bool IsBlocked(NodeId i) const { return blocked_[i] >= 0; }

  absl::Status Copy(NodeId i) {
    Node n = old_.node(i);
    for (NodeId& in : n.inputs) { PIJIT_ASSIGN_OR_RETURN(in, Plain(in)); }
    PIJIT_ASSIGN_OR_RETURN(plain_[i], out_.AddNode(std::move(n)));
    return absl::OkStatus();
  }

  absl::StatusOr<bool> TryConv(NodeId i) {
    const Node& n = old_.node(i);
    const std::optional<ConvParts> parts = ConvPartsOf(n);
    if (!parts) return false;
    auto meta = [&](size_t k) { return &old_.node(n.inputs[k]).meta; };
    std::vector<const TensorMeta*> operands;
    for (size_t k = parts->first_operand; k < n.inputs.size(); ++k) operands.push_back(meta(k));
    const std::optional<ConvBlocks> blocks =
        Conv2DBlockedLayouts(*meta(0), *meta(1), parts->has_bias ? meta(2) : nullptr,
                             parts->win, parts->post, operands);
    if (!blocks) return false;
    Node c;
    c.op = Op::kFusedConv2D;
    c.ints = parts->window_ints;
    c.ints.insert(c.ints.end(), parts->post.begin(), parts->post.end());
    c.attr = blocks->result;
    const NodeId x = n.inputs[0];
    if (blocks->input != 0 && (!IsBlocked(x) || block_[x] == blocks->input)) {
      PIJIT_ASSIGN_OR_RETURN(NodeId bx, Blocked(x, blocks->input));
      c.inputs.push_back(bx);
    } else {
      PIJIT_ASSIGN_OR_RETURN(NodeId px, Plain(x));
      c.inputs.push_back(px);
    }
    for (size_t k = 1; k < n.inputs.size(); ++k) {
      const NodeId in = n.inputs[k];
      // Operands of the result's shape are read in the result's layout.
      const bool full = k >= parts->first_operand && old_.node(in).meta.shape == n.meta.shape;
      PIJIT_ASSIGN_OR_RETURN(NodeId v, full ? Blocked(in, blocks->result) : Plain(in));
      c.inputs.push_back(v);
    }
    PIJIT_ASSIGN_OR_RETURN(blocked_[i], out_.AddNode(std::move(c)));
    block_[i] = blocks->result;
    return true;
  }

  absl::StatusOr<bool> TryPool(NodeId i) {
    const Node& n = old_.node(i);
    if (n.op != Op::kMaxPool2D && n.op != Op::kAvgPool2D) return false;
    const NodeId x = n.inputs[0];
    if (!IsBlocked(x)) return false;
    auto win = DecodeWindow(OpName(n.op), n.ints);
    const PoolKind kind = n.op == Op::kMaxPool2D ? PoolKind::kMax : PoolKind::kAvg;
    if (!win.ok() || Pool2DBlock(kind, old_.node(x).meta, *win) != block_[x]) return false;
    Node p = n;
    p.inputs = {blocked_[x]};
    PIJIT_ASSIGN_OR_RETURN(blocked_[i], out_.AddNode(std::move(p)));
    block_[i] = block_[x];
    return true;
  }

  // An elementwise op on blocked operands (see the header's rules); an operand that other
  // readers need in NCHW keeps the op in NCHW too (it would otherwise add a reorder).
  absl::StatusOr<bool> TryElementwise(NodeId i) {
    const Node& n = old_.node(i);
    if (n.op != Op::kFused && !(IsElementwise(n.op) && !HasTrait(n.op, kStateful))) return false;
    const Shape& s = n.meta.shape;
    if (n.meta.dtype != DType::kFloat32 || s.size() != 4) return false;
    int64_t b = 0;
    for (NodeId in : n.inputs) {
      const TensorMeta& m = old_.node(in).meta;
      if (m.shape == s) {
        if (!IsBlocked(in) || (b != 0 && block_[in] != b) || plain_reader_[in]) return false;
        b = block_[in];
      } else if (!IsChannelVectorOrSingle(m, s[1])) {
        return false;
      }
    }
    if (b == 0) return false;
    Node e = n;
    for (NodeId& in : e.inputs) {
      if (old_.node(in).meta.shape == s) {
        in = blocked_[in];
      } else {
        PIJIT_ASSIGN_OR_RETURN(in, ChannelView(in, s[1], b));
      }
    }
    PIJIT_ASSIGN_OR_RETURN(blocked_[i], out_.AddNode(std::move(e)));
    block_[i] = b;
    return true;
  }

  const Graph& old_;
  Graph out_;
  std::vector<NodeId> plain_, blocked_;   // the node's value in the new graph, per layout
  std::vector<int64_t> block_;            // the block of blocked_[i]
  std::vector<NodeId> channel_view_;      // a channel vector's [1, C/b, 1, 1, b] view
  std::vector<bool> plain_reader_;        // whether some reader needs the value in NCHW
  bool any_ = false;
};

}  // namespace

absl::StatusOr<bool> Run(Graph& g) {
  Rewriter r(g);
  PIJIT_ASSIGN_OR_RETURN(bool changed, r.Build());
  if (changed) g = std::move(r.result());
  return changed;
}

}  // namespace pijit::graph::layout_assignment
