#include "graph/passes/layout_assignment.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_format.h"

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
// ([C, 1, 1] or [1, C, 1, 1]) or as a single value (rank 4 at most).
bool IsChannelVectorOrSingle(const TensorMeta& m, int64_t c) {
  return IsConvChannelVector(m, c) || (m.shape.size() <= 4 && NumElements(m.shape) == 1);
}

// The window and the NCHW shape of a convolution gradient's result (conv2d_grad_input: x,
// conv2d_grad_weight: w), as the ints hold them; none for other nodes.
std::optional<std::pair<Window2D, Shape>> GradWindowOf(const Node& n) {
  if ((n.op != Op::kConv2DGradInput && n.op != Op::kConv2DGradWeight) ||
      n.ints.size() != kWindowInts + 4) {
    return std::nullopt;
  }
  absl::Span<const int64_t> ints(n.ints);
  auto win = DecodeWindow(OpName(n.op), ints.subspan(0, kWindowInts));
  if (!win.ok()) return std::nullopt;
  return std::make_pair(*win, Shape(ints.begin() + kWindowInts, ints.end()));
}

// Whether a convolution of `win` over x of shape `x` is depthwise (a group per channel).
bool IsDepthwise(const Window2D& win, const Shape& x) {
  return x.size() == 4 && win.groups > 1 && win.groups == x[1];
}

// Counts the blocks of operands: Winner() is the most common (the first of equals), 0 for none.
class BlockVotes {
 public:
  void Add(int64_t block) {
    auto it = std::find_if(votes_.begin(), votes_.end(),
                           [&](const auto& v) { return v.first == block; });
    if (it == votes_.end()) votes_.push_back({block, 1});
    else ++it->second;
  }
  int64_t Winner() const {
    int64_t best = 0;
    int most = 0;
    for (const auto& [block, count] : votes_) {
      if (count > most) {
        best = block;
        most = count;
      }
    }
    return best;
  }

 private:
  absl::InlinedVector<std::pair<int64_t, int>, 4> votes_;
};

// What a node becomes: a blocked convolution, pooling or elementwise op, a convolution
// gradient or training batch norm (or one of its gradients) over blocked activations, or
// itself (NCHW).
enum class Role : uint8_t {
  kNone, kConv, kPool, kElementwise, kConvGradInput, kConvGradWeight, kBatchNormTrain,
  kBatchNormGrad
};

// Which nodes give blocked results, decided before the graph is rebuilt: convolutions that
// run blocked always (their reorders move out of them: never more than before); pooling when
// its input is blocked; an elementwise op when an operand of its result's shape is blocked
// (the others are taken into its block: a reorder of one operand instead of the blocked ones'
// and of the result's) and no reader needs its result in NCHW; in training graphs,
// convolution gradients and batch norm (ProposeTraining), so that the backward reads the
// forward's values in the layouts they were made in.
class Plan {
 public:
  explicit Plan(const Graph& g)
      : g_(g), role_(g.nodes().size(), Role::kNone), conv_(g.nodes().size()),
        first_operand_(g.nodes().size(), 0), block_(g.nodes().size(), 0),
        operand_block_(g.nodes().size(), 0), readers_(g.nodes().size()),
        relu_of_(g.nodes().size(), -1), fuses_relu_(g.nodes().size(), false) {
    for (NodeId i = 0; i < static_cast<NodeId>(g.nodes().size()); ++i) {
      for (NodeId in : g.node(i).inputs) readers_[in].push_back(i);
    }
    for (NodeId i = 0; i < static_cast<NodeId>(g.nodes().size()); ++i) Propose(i);
    if (!any_conv_) return;  // nothing is blocked, nor can be
    // Elementwise ops leave the blocked set until what remains is consistent (each removal
    // can only add NCHW readers, so this ends).
    for (bool changed = true; changed;) {
      changed = false;
      std::vector<bool> plain, blocked;
      Readers(plain, blocked);
      for (NodeId i = 0; i < static_cast<NodeId>(g.nodes().size()); ++i) {
        const Node& n = g.node(i);
        bool keep = true;
        if (role_[i] == Role::kElementwise) {
          bool any_in_block = false;
          for (NodeId in : n.inputs) any_in_block |= IsFull(n, in) && block_[in] == block_[i];
          keep = (!plain[i] || blocked[i]) && any_in_block;
        } else if (role_[i] == Role::kPool || role_[i] == Role::kBatchNormTrain ||
                   role_[i] == Role::kBatchNormGrad) {
          keep = block_[n.inputs[0]] == operand_block_[i];
        }
        if (!keep) {
          role_[i] = Role::kNone;
          block_[i] = 0;
          operand_block_[i] = 0;
          changed = true;
        }
      }
    }
    FuseRelus();
  }

  // The training batch norm whose relu (`i`, its only reader) it applies itself, or -1.
  NodeId ReluFusedInto(NodeId i) const { return relu_of_[i]; }
  bool FusesRelu(NodeId bn) const { return fuses_relu_[bn]; }

  // Whether some convolution runs blocked (without one, nothing does).
  bool any_conv() const { return any_conv_; }
  Role role(NodeId i) const { return role_[i]; }
  int64_t block(NodeId i) const { return block_[i]; }
  const ConvBlocks& conv(NodeId i) const { return conv_[i]; }
  // The block of the activations a pooling or batch norm node reads.
  int64_t operand_block(NodeId i) const { return operand_block_[i]; }
  // Whether elementwise node `n` reads `in` as an operand of its result's shape (blocked when
  // it runs blocked), not as a channel vector or a single value.
  bool IsFull(const Node& n, NodeId in) const { return g_.node(in).meta.shape == n.meta.shape; }

 private:
  void Propose(NodeId i) {
    const Node& n = g_.node(i);
    if (const std::optional<ConvParts> parts = ConvPartsOf(n)) {
      auto meta = [&](size_t k) { return &g_.node(n.inputs[k]).meta; };
      // A depthwise convolution, whose NCHW kernels are faster than oneDNN's blocked ones with
      // the reorders around them, runs blocked only on a blocked input.
      if (IsDepthwise(parts->win, meta(0)->shape) && block_[n.inputs[0]] == 0) return;
      std::vector<const TensorMeta*> operands;
      for (size_t k = parts->first_operand; k < n.inputs.size(); ++k) operands.push_back(meta(k));
      if (const std::optional<ConvBlocks> blocks =
              Conv2DBlockedLayouts(*meta(0), *meta(1), parts->has_bias ? meta(2) : nullptr,
                                   parts->win, parts->post, operands)) {
        role_[i] = Role::kConv;
        conv_[i] = *blocks;
        first_operand_[i] = parts->first_operand;
        block_[i] = blocks->result;
        any_conv_ = true;
      }
      return;
    }
    if (n.op == Op::kMaxPool2D || n.op == Op::kAvgPool2D) {
      const NodeId x = n.inputs[0];
      auto win = DecodeWindow(OpName(n.op), n.ints);
      const PoolKind kind = n.op == Op::kMaxPool2D ? PoolKind::kMax : PoolKind::kAvg;
      if (block_[x] != 0 && win.ok() && Pool2DRunsBlocked(kind, g_.node(x).meta, *win, block_[x])) {
        role_[i] = Role::kPool;
        block_[i] = operand_block_[i] = block_[x];
      }
      return;
    }
    if (ProposeTraining(i)) return;
    if (n.op != Op::kFused && !(IsElementwise(n.op) && !HasTrait(n.op, kStateful))) return;
    const Shape& s = n.meta.shape;
    if (n.meta.dtype != DType::kFloat32 || s.size() != 4) return;
    // The block most of its blocked operands have (the first of equals): the fewest taken
    // into it.
    BlockVotes votes;
    for (NodeId in : n.inputs) {
      if (IsFull(n, in)) {
        if (block_[in] != 0) votes.Add(block_[in]);
      } else if (!IsChannelVectorOrSingle(g_.node(in).meta, s[1])) {
        return;
      }
    }
    const int64_t b = votes.Winner();
    if (b == 0) return;
    role_[i] = Role::kElementwise;
    block_[i] = b;
  }

  // Training graphs: convolution gradients on oneDNN's blocked kernels always take their
  // activations in the layout they come in (the input gradient gives its result in the layout
  // the forward convolution reads x in); training batch norm and its gradients run blocked
  // where x is blocked (the gradients take dy into x's layout). Whether `i` takes such a role.
  bool ProposeTraining(NodeId i) {
    const Node& n = g_.node(i);
    if (n.meta.dtype != DType::kFloat32 || n.attr != 0) return false;
    if (const auto grad = GradWindowOf(n)) {
      const TensorMeta& a = g_.node(n.inputs[0]).meta;
      const TensorMeta& b = g_.node(n.inputs[1]).meta;
      if (a.shape.size() != 4 || b.shape.size() != 4) return false;
      // Depthwise ones only where an activation they read (dout; x or dout) is blocked, as
      // their forward.
      const bool input_grad = n.op == Op::kConv2DGradInput;
      const bool reads_blocked =
          block_[n.inputs[0]] != 0 || (!input_grad && block_[n.inputs[1]] != 0);
      if (IsDepthwise(grad->first, input_grad ? n.meta.shape : a.shape) && !reads_blocked) {
        return false;
      }
      if (input_grad) {
        const int64_t own = Conv2DGradBlock(n.meta, b, grad->first);
        if (own == 0) return false;
        role_[i] = Role::kConvGradInput;
        block_[i] = GradInputBlock(i, own);
      } else {
        if (Conv2DGradBlock(a, n.meta, grad->first) == 0) return false;
        role_[i] = Role::kConvGradWeight;
      }
      return true;
    }
    if (n.op != Op::kBatchNormTrain && n.op != Op::kBatchNormGradSums &&
        n.op != Op::kBatchNormGradInput) {
      return false;
    }
    const NodeId x = n.inputs[0];
    if (block_[x] == 0 || g_.node(x).meta.shape.size() != 4) return false;
    role_[i] = n.op == Op::kBatchNormTrain ? Role::kBatchNormTrain : Role::kBatchNormGrad;
    operand_block_[i] = block_[x];
    if (n.op != Op::kBatchNormGradSums) block_[i] = block_[x];
    return true;
  }

  // The block for input gradient `i`: the one its elementwise readers' other operands have
  // most (the forward's values of x's shape: the relu mask; x's own block, which the gradient
  // primitive's result is reordered into directly, where through NCHW the elementwise op
  // would take it), else `own`, the layout the forward convolution reads x in.
  int64_t GradInputBlock(NodeId i, int64_t own) const {
    const Node& n = g_.node(i);
    BlockVotes votes;
    for (NodeId r : readers_[i]) {
      const Node& reader = g_.node(r);
      if (reader.op != Op::kFused && !IsElementwise(reader.op)) continue;
      for (NodeId in : reader.inputs) {
        if (in != i && IsFull(reader, in) && IsChannelBlock(n.meta.shape[1], block_[in])) {
          votes.Add(block_[in]);
        }
      }
    }
    const int64_t best = votes.Winner();
    return best != 0 ? best : own;
  }

  // A blocked relu of a blocked training batch norm that nothing else reads runs inside it
  // (one pass over the activation less).
  void FuseRelus() {
    std::vector<bool> output(g_.nodes().size(), false);
    for (NodeId o : g_.outputs()) output[o] = true;
    for (NodeId r = 0; r < static_cast<NodeId>(g_.nodes().size()); ++r) {
      const Node& n = g_.node(r);
      if (n.op != Op::kRelu || role_[r] != Role::kElementwise) continue;
      const NodeId bn = n.inputs[0];
      if (role_[bn] != Role::kBatchNormTrain || output[bn] || readers_[bn].size() != 1 ||
          block_[bn] != block_[r]) {
        continue;
      }
      relu_of_[r] = bn;
      fuses_relu_[bn] = true;
    }
  }

  // Whether node `r` reads its input number `k` blocked, as the roles stand.
  bool ReadsBlocked(const Node& r, NodeId self, size_t k) const {
    switch (role_[self]) {
      case Role::kConv: {
        if (k == 0) return conv_[self].input != 0 || block_[r.inputs[0]] != 0;
        return k >= first_operand_[self] && g_.node(r.inputs[k]).meta.shape == r.meta.shape;
      }
      case Role::kPool: return k == 0;
      case Role::kElementwise: return IsFull(r, r.inputs[k]);
      case Role::kConvGradInput: return k == 0 && block_[r.inputs[0]] != 0;
      case Role::kConvGradWeight: return k < 2 && block_[r.inputs[k]] != 0;
      case Role::kBatchNormTrain: return k == 0;
      case Role::kBatchNormGrad: return k < 2;
      case Role::kNone: return false;
    }
    return false;
  }

  // For each node, whether some reader (or the graph's outputs) needs its value in NCHW, and
  // whether some reader takes it blocked.
  void Readers(std::vector<bool>& plain, std::vector<bool>& blocked) const {
    plain.assign(g_.nodes().size(), false);
    blocked.assign(g_.nodes().size(), false);
    for (NodeId r = 0; r < static_cast<NodeId>(g_.nodes().size()); ++r) {
      const Node& n = g_.node(r);
      for (size_t k = 0; k < n.inputs.size(); ++k)
        (ReadsBlocked(n, r, k) ? blocked : plain)[n.inputs[k]] = true;
    }
    for (NodeId o : g_.outputs()) plain[o] = true;
  }

  const Graph& g_;
  std::vector<Role> role_;
  std::vector<ConvBlocks> conv_;
  std::vector<size_t> first_operand_;  // a blocked convolution's first epilogue operand
  std::vector<int64_t> block_;  // the block of a blocked result, 0 for NCHW
  std::vector<int64_t> operand_block_;  // pooling's and batch norm's: the block of x
  std::vector<std::vector<NodeId>> readers_;
  std::vector<NodeId> relu_of_;
  std::vector<bool> fuses_relu_;
  bool any_conv_ = false;
};

class Rewriter {
 public:
  Rewriter(const Graph& old, const Plan& plan)
      : old_(old), plan_(plan), plain_(old.nodes().size(), -1),
        blocked_(old.nodes().size(), -1), block_(old.nodes().size(), 0),
        channel_view_(old.nodes().size(), -1) {}

  // Builds the rewritten graph the plan describes.
  absl::Status Build() {
    for (NodeId i = 0; i < static_cast<NodeId>(old_.nodes().size()); ++i) {
      if (const NodeId bn = plan_.ReluFusedInto(i); bn >= 0) {  // the batch norm's value
        blocked_[i] = blocked_[bn];
        block_[i] = block_[bn];
        continue;
      }
      PIJIT_ASSIGN_OR_RETURN(bool done, TryConv(i));
      if (!done) { PIJIT_ASSIGN_OR_RETURN(done, TryPool(i)); }
      if (!done) { PIJIT_ASSIGN_OR_RETURN(done, TryElementwise(i)); }
      if (!done) { PIJIT_ASSIGN_OR_RETURN(done, TryTraining(i)); }
      if (!done) PIJIT_RETURN_IF_ERROR(Copy(i));
    }
    std::vector<NodeId> outputs;
    for (NodeId o : old_.outputs()) {
      PIJIT_ASSIGN_OR_RETURN(NodeId p, Plain(o));
      outputs.push_back(p);
    }
    out_.SetOutputs(std::move(outputs));
    return absl::OkStatus();
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
  // A value blocked in another layout (one convolution's result read by an op that computes
  // in a different one) is reordered straight into it, once per layout.
  absl::StatusOr<NodeId> Blocked(NodeId i, int64_t b) {
    if (blocked_[i] >= 0 && block_[i] == b) return blocked_[i];
    if (blocked_[i] >= 0) {
      auto it = other_layouts_.find({i, b});
      if (it != other_layouts_.end()) return it->second;
    }
    Attrs a;
    a.attr = b;
    NodeId p = blocked_[i];
    if (p < 0) { PIJIT_ASSIGN_OR_RETURN(p, Plain(i)); }
    PIJIT_ASSIGN_OR_RETURN(NodeId r, out_.AddOp(Op::kToBlocked, {p}, a));
    if (blocked_[i] >= 0) return other_layouts_[{i, b}] = r;
    blocked_[i] = r;
    block_[i] = b;
    return r;
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
  absl::Status NotAsPlanned(NodeId i) const {
    return absl::InternalError(absl::StrFormat(
        "layout_assignment: %%%d (%s) was planned blocked but an operand is not", i,
        OpName(old_.node(i).op)));
  }

  absl::Status Copy(NodeId i) {
    Node n = old_.node(i);
    for (NodeId& in : n.inputs) { PIJIT_ASSIGN_OR_RETURN(in, Plain(in)); }
    PIJIT_ASSIGN_OR_RETURN(plain_[i], out_.AddNode(std::move(n)));
    return absl::OkStatus();
  }

  absl::StatusOr<bool> TryConv(NodeId i) {
    if (plan_.role(i) != Role::kConv) return false;
    const Node& n = old_.node(i);
    const std::optional<ConvParts> parts = ConvPartsOf(n);
    const ConvBlocks* blocks = &plan_.conv(i);
    Node c;
    c.op = Op::kFusedConv2D;
    c.ints = parts->window_ints;
    c.ints.insert(c.ints.end(), parts->post.begin(), parts->post.end());
    c.attr = blocks->result;
    const NodeId x = n.inputs[0];
    // A blocked input is read as it is, in whatever layout (the convolution reorders it
    // straight into its own when they differ).
    if (IsBlocked(x)) {
      c.inputs.push_back(blocked_[x]);
    } else if (blocks->input != 0) {
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
    if (plan_.role(i) != Role::kPool) return false;
    const Node& n = old_.node(i);
    const NodeId x = n.inputs[0];
    if (!IsBlocked(x) || block_[x] != plan_.block(i)) return NotAsPlanned(i);
    Node p = n;
    p.inputs = {blocked_[x]};
    PIJIT_ASSIGN_OR_RETURN(blocked_[i], out_.AddNode(std::move(p)));
    block_[i] = block_[x];
    return true;
  }

  // An elementwise op on blocked operands, channel vectors viewed as [1, C/b, 1, 1, b].
  absl::StatusOr<bool> TryElementwise(NodeId i) {
    if (plan_.role(i) != Role::kElementwise) return false;
    const Node& n = old_.node(i);
    const Shape& s = n.meta.shape;
    const int64_t b = plan_.block(i);
    Node e = n;
    for (NodeId& in : e.inputs) {
      if (plan_.IsFull(n, in)) {
        PIJIT_ASSIGN_OR_RETURN(in, Blocked(in, b));
      } else {
        PIJIT_ASSIGN_OR_RETURN(in, ChannelView(in, s[1], b));
      }
    }
    PIJIT_ASSIGN_OR_RETURN(blocked_[i], out_.AddNode(std::move(e)));
    block_[i] = b;
    return true;
  }

  // Old node `i` as it is in the new graph: blocked (in whichever layout) where it is so,
  // else NCHW.
  absl::StatusOr<NodeId> AsItIs(NodeId i) {
    if (IsBlocked(i)) return blocked_[i];
    return Plain(i);
  }

  // A convolution gradient over activations in the layouts they come in, or training batch
  // norm (or a gradient) over x's block, dy taken into it.
  absl::StatusOr<bool> TryTraining(NodeId i) {
    const Role role = plan_.role(i);
    if (role != Role::kConvGradInput && role != Role::kConvGradWeight &&
        role != Role::kBatchNormTrain && role != Role::kBatchNormGrad) {
      return false;
    }
    Node n = old_.node(i);
    const int64_t b = role == Role::kConvGradInput ? plan_.block(i) : plan_.operand_block(i);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      NodeId& in = n.inputs[k];
      if (role == Role::kConvGradInput || role == Role::kConvGradWeight) {
        PIJIT_ASSIGN_OR_RETURN(in, k < 2 ? AsItIs(in) : Plain(in));
      } else if (k == 0 && (!IsBlocked(in) || block_[in] != b)) {
        return NotAsPlanned(i);
      } else if (k == 0 || (k == 1 && role == Role::kBatchNormGrad)) {
        PIJIT_ASSIGN_OR_RETURN(in, Blocked(in, b));
      } else {
        PIJIT_ASSIGN_OR_RETURN(in, Plain(in));
      }
    }
    n.attr = role == Role::kConvGradWeight ? 0 : b;
    if (plan_.FusesRelu(i)) n.ints = {1};
    const bool blocked_result = role != Role::kConvGradWeight && n.op != Op::kBatchNormGradSums;
    PIJIT_ASSIGN_OR_RETURN(NodeId r, out_.AddNode(std::move(n)));
    if (blocked_result) {
      blocked_[i] = r;
      block_[i] = b;
    } else {
      plain_[i] = r;
    }
    return true;
  }

  const Graph& old_;
  const Plan& plan_;
  Graph out_;
  std::vector<NodeId> plain_, blocked_;   // the node's value in the new graph, per layout
  std::vector<int64_t> block_;            // the block of blocked_[i]
  std::vector<NodeId> channel_view_;      // a channel vector's [1, C/b, 1, 1, b] view
  absl::flat_hash_map<std::pair<NodeId, int64_t>, NodeId> other_layouts_;
};

}  // namespace

absl::StatusOr<bool> Run(Graph& g) {
  const Plan plan(g);
  if (!plan.any_conv()) return false;  // the graph stays as it is: no rebuild
  Rewriter r(g, plan);
  PIJIT_RETURN_IF_ERROR(r.Build());
  g = std::move(r.result());
  return true;
}

}  // namespace pijit::graph::layout_assignment
