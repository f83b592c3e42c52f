// The chain of single-use elementwise ops after a matmul or a convolution that one oneDNN
// primitive can apply as post-ops (graph/passes/matmul_epilogue.h, conv_epilogue.h).
//
// A link joins when the value before it has one reader and is not a graph output, and it
// keeps the producer's meta: an activation (relu, gelu, tanh, sigmoid), an add of another
// node (a bias when `is_bias` says so, otherwise an add such as a residual) or a product with
// another node (a per-channel scale such as an inference batch norm's). The chain grows
// while `one_primitive` accepts it; the longest accepted chain is the result.
#pragma once
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "graph/graph.h"

namespace pijit::graph::post_ops {

// How many nodes read each node (a graph output counts as two: never an inner link), and
// the reader of nodes that have one.
struct Readers {
  std::vector<int> count;
  std::vector<NodeId> only;
};
Readers CountReaders(const Graph& g);

struct Chain {
  Shape post;                    // MatMulPost codes
  std::vector<NodeId> operands;  // read by bias/add/mul, in order
  NodeId last = -1;              // the op the fused node replaces; -1: no chain
};

// After the chain `c` became one node (its last): the operands it reads are read by that
// node, no longer by the links left for dce, so that no later chain grows into those links.
void Absorb(Readers& readers, const Chain& c);

// `is_bias(other, first)`: whether adding `other` is a bias (`first`: no link before it).
// `one_primitive(post, operand metas)`: whether one primitive runs the chain so far.
Chain Grow(const Graph& g, NodeId producer, const Readers& readers,
           absl::FunctionRef<bool(const TensorMeta& other, bool first)> is_bias,
           absl::FunctionRef<bool(absl::Span<const int64_t> post,
                                  absl::Span<const TensorMeta* const> operands)>
               one_primitive);

}  // namespace pijit::graph::post_ops
