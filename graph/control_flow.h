// Control flow on tensor values in the IR: a conditional or a while loop is one node holding
// its branches or its body as graphs (Node::region), as XLA's conditional and while, and JAX's
// lax.cond and lax.while_loop, hold theirs. Such a node's own value is a bool[] (a loop's final
// condition, a conditional's predicate); each of its results is a `result` node.
//
//   %4: bool[] = while_loop(%3, %0, %1, carried=1) {
//     graph(%0: f32[4], %1: f32[]) {
//       %2: f32[4] = mul(%0, %1)
//       %3: f32[] = sum(%2, axes=[], keepdims=false)
//       %4: bool[] = less(%3, %1)
//       return (%2, %4)
//     }
//   }
//   %5: f32[4] = result(%4, index=0)
//
// while_loop(stay, c_1..c_k, v_1..v_m), attr = k, graphs {body}: `while stay: (c, stay) =
// body(c, v)`. The body takes the carried values c (which it may change) then the invariants v
// (values from before the loop it reads) and returns the next carried values, each of its
// carried value's meta, then the next stay, a bool[], then (once the loop is differentiated)
// its residuals r: the values of the trip its backward reads. Result i is c_{i+1}'s final
// value (0 trips: c_{i+1} itself).
//
// while_grad(loop, c, v, s_1..s_k, z_1..z_m), attr = k, graphs {body, body_bwd}: the
// vector-Jacobian product of a while_loop for the seeds s (one per carried result) over the
// same inputs. `loop` is that while_loop node, which then keeps each trip's carried values and
// residuals for it (the loop saves what its backward needs, and runs once); where `loop` is
// another bool[] (a stay condition), while_grad runs the trips again with `body` (the loop's
// body with its residuals). Then body_bwd runs over the trips last to first: body_bwd(c, v, r,
// dc', acc) -> (dc, acc + dv), starting from dc' = s and acc = z (zeros of the invariants'
// metas). Result j is the gradient of c_{j+1} for j < k, of v_{j-k+1} after.
//
// cond(pred, x_1..x_n), graphs {if_true, if_false}: the branch the predicate (a bool[]) picks,
// run on the operands x; both branches take the operands and give results of the same metas.
// Only that branch runs, and only its gradient: cond_grad(pred, x, s_1..s_r), graphs
// {if_true_vjp, if_false_vjp}, each (x, s) -> (dx): result j is the gradient of x_{j+1}.
#pragma once
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace pijit::graph {

// The number of carried values and of invariants of a while_loop or while_grad node.
inline int64_t LoopCarried(const Node& n) { return n.attr; }
int64_t LoopInvariants(const Node& n);
// How many graphs a region op holds: while_loop one, the others two.
inline size_t RegionGraphs(Op op) { return op == Op::kWhileLoop ? 1 : 2; }
// How many results a region node has.
int64_t RegionResults(const Node& n);
// The meta of result `index` of region node `id`.
absl::StatusOr<TensorMeta> RegionResultMeta(const Graph& g, NodeId id, int64_t index);

// Inference of the region nodes (bool[], after checking their graphs against their inputs)
// and of result (the meta its attributes hold: ints = shape, dtype).
absl::StatusOr<TensorMeta> InferRegion(const Node& n, absl::Span<const TensorMeta* const> in);
// What Graph::Verify adds for a result: it reads a region node, its index is one of that
// node's results, and its meta is that result's.
absl::Status VerifyResult(const Graph& g, NodeId id);

// A region node `op` over `inputs` with `graphs` (and attr), appended to `g`, and its results
// as result nodes, in order.
absl::StatusOr<std::vector<NodeId>> AppendRegion(Graph& g, Op op, absl::Span<const NodeId> inputs,
                                                 std::vector<Graph> graphs, int64_t attr = 0);

// The vector-Jacobian product of `body`'s first `seeded` outputs: a copy of it taking one seed
// per such output after its own parameters, giving the gradient of each parameter (zeros where
// none flows).
absl::StatusOr<Graph> BodyVjp(const Graph& body, int64_t seeded);
// A while_loop body with `carried` carried values split for its gradient (see above): the body
// with its residuals as extra outputs, and body_bwd.
struct LoopVjpBodies {
  Graph body;
  Graph body_bwd;
};
absl::StatusOr<LoopVjpBodies> LoopBodyVjp(const Graph& body, int64_t carried);
// The number of residuals a while_loop or while_grad body gives (outputs after the stay).
int64_t LoopResiduals(const Node& n);

}  // namespace pijit::graph
