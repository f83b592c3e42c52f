// Loops on tensor values in the IR: a while loop is one node holding its body as a graph
// (Node::region), as XLA's while and JAX's lax.while_loop hold theirs.
//
//   %4: bool[] = while_loop(%3, %0, %1, carried=1) {
//     graph(%0: f32[4], %1: f32[]) {
//       %2: f32[4] = mul(%0, %1)
//       %3: f32[] = sum(%2, axes=[], keepdims=false)
//       %4: bool[] = less(%3, %1)
//       return (%2, %4)
//     }
//   }
//   %5: f32[4] = loop_result(%4, %0, index=0)
//
// while_loop(stay, c_1..c_k, v_1..v_m), attr = k: `while stay: (c, stay) = body(c, v)`. The
// body takes the carried values c (which it may change) then the invariants v (values from
// before the loop it reads) and returns the next carried values, each of its carried value's
// meta, then the next stay, a bool[]. The node's own value is the final stay (false);
// loop_result(loop, c_i, index=i-1) is c_i's final value (0 trips: c_i itself).
//
// while_grad(stay, c, v, s_1..s_k, z_1..z_m), attr = k, is while_loop's vector-Jacobian product
// for the seeds s (a seed per carried result) over the same inputs: it runs the loop again
// from its inputs, keeping each trip's carried values, then runs body_vjp over the trips last
// to first: body_vjp(c, v, dc', acc) -> (dc, acc + dv), starting from dc' = s and acc = z (zeros
// of the invariants' metas). loop_result(grad, like, index=j) is the gradient of c_{j+1} for
// j < k, of v_{j-k+1} after. Recomputing the trips costs a second forward run of the loop and
// keeps one set of carried values per trip while the backward runs.
#pragma once
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace pijit::graph {

// The number of carried values and of invariants of a while_loop or while_grad node.
inline int64_t LoopCarried(const Node& n) { return n.attr; }
int64_t LoopInvariants(const Node& n);

// Inference of while_loop, while_grad (bool[], after checking the region against the inputs)
// and loop_result (its `like` input's meta).
absl::StatusOr<TensorMeta> InferLoop(const Node& n, absl::Span<const TensorMeta* const> in);
// What Graph::Verify adds for a loop_result: its loop input is a loop node, its index is one of
// that loop's results, and `like` has that result's meta.
absl::Status VerifyLoopResult(const Graph& g, NodeId id);

// A while_loop node over `inputs` (stay, carried..., invariants...) with `body`, appended to
// `g`, and its results as loop_result nodes (one per carried value, in order).
absl::StatusOr<std::vector<NodeId>> AppendWhileLoop(Graph& g, absl::Span<const NodeId> inputs,
                                                    int64_t carried, Graph body);

// The body_vjp of a while_loop's body (see above).
absl::StatusOr<Graph> LoopBodyVjp(const Graph& body, int64_t carried);

}  // namespace pijit::graph
