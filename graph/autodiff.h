// Reverse-mode automatic differentiation over the graph IR.
//
// AppendBackward extends a graph with the nodes of its vector-Jacobian product: for each node
// w in `wrt` it appends nodes computing
//
//     grad(w) = sum_i  seeds[i]ᵀ · ∂outputs[i] / ∂w
//
// where `seeds[i]` is a node of the same dtype and shape as `outputs[i]` (the sensitivity,
// dL/d outputs[i]). The backward nodes are built from ordinary IR ops, so the result is a
// graph like any other: it verifies, optimises and runs on the executor. The forward nodes
// are left in place; the backward nodes refer to them (values such as exp(x) are reused).
//
// Gradients flow through floating-point nodes and, as MindSpore differentiates them, through
// integer nodes computed from integer nodes on the path (x * 2 for an int32 x has the int32
// gradient 2; a gradient reaching an integer node is cast to its dtype, truncating: x * 0.5
// gives 0). An integer computed from floats (argmax, a cast to int) and every Bool node (a
// comparison) cut the path, as does an integer op without a VJP rule (bitwise ops). A wrt
// node that no output depends on gets zeros of its shape and dtype; a Bool wrt node gets no
// gradient (kNoGradient).
//
// Each op family has one VJP rule (autodiff.cc, kVjpRules; the normalisation layers'
// in autodiff_nn.cc). A rule may return a gradient of
// the broadcast shape or a wider dtype; accumulation sums it to the input's shape and casts
// it to the input's dtype, so broadcasting and type promotion are handled in one place.
// Requesting a gradient through an op without a rule is an Unimplemented error naming it.
#pragma once
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/graph.h"

namespace pijit::graph {

inline constexpr NodeId kNoGradient = -1;

// Whether values of dtype `d` carry gradients (see above): floats and integers, not Bool.
inline bool CarriesGradient(DType d) { return IsFloating(d) || IsInteger(d); }

// A gradient given by a Cell's bprop: `node` is a custom_grad node (its inputs: the Cell's
// forward output, then its tensor arguments), whose output the rest of the graph uses. The
// bprop was traced into nodes [bprop_begin, bprop_end) reading `dout`, zeros like the output,
// as the output's gradient; `grads[k]` is its gradient for input k + 1 (kNoGradient: none).
// The backward clones the nodes that read `dout` with the output's actual gradient instead.
// The forward's own nodes [forward_begin, node) get no gradient: they must not be used
// elsewhere.
struct CustomVjp {
  NodeId node = -1;
  NodeId dout = -1;
  NodeId forward_begin = -1;
  NodeId bprop_begin = -1, bprop_end = -1;
  std::vector<NodeId> grads;
};

// Appends the backward computation to `g` and returns, per `wrt` node in order, the node
// holding its gradient (or kNoGradient). Does not change g's outputs. Gradients flow only
// through nodes numbered `first` or above (and the wrt nodes): what was computed before a
// gradient transform began is a constant to it, as it is to the eager tape.
absl::StatusOr<std::vector<NodeId>> AppendBackward(Graph& g, absl::Span<const NodeId> outputs,
                                                   absl::Span<const NodeId> seeds,
                                                   absl::Span<const NodeId> wrt,
                                                   NodeId first = 0,
                                                   absl::Span<const CustomVjp> customs = {});

// Whether `op` has a VJP rule (params and constants need none).
bool HasVjpRule(Op op);

// Appends a node of zeros of `meta` (a gradient where none flows).
absl::StatusOr<NodeId> AppendZeros(Graph& g, const TensorMeta& meta);

// Appends nodes reducing `x` (by summation) to `shape`, which `x`'s shape broadcasts from:
// the adjoint of broadcasting. Returns `x` itself when the shapes are equal.
absl::StatusOr<NodeId> AppendSumTo(Graph& g, NodeId x, absl::Span<const int64_t> shape);

}  // namespace pijit::graph
