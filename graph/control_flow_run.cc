#include "graph/control_flow_run.h"

#include "absl/container/inlined_vector.h"
#include "graph/control_flow.h"
#include "graph/executor.h"
#include "kernels/errors.h"

namespace pijit::graph {
namespace {

// A bool[] predicate's value (on the host: control flow runs on the CPU).
bool Holds(const Tensor& pred) { return *pred.Contiguous().data<bool>(); }

absl::StatusOr<std::vector<Tensor>> RunLoop(const Node& n, const RegionPrograms& programs,
                                            absl::Span<const Tensor* const> inputs) {
  const size_t k = static_cast<size_t>(LoopCarried(n));
  const size_t m = static_cast<size_t>(LoopInvariants(n));
  const bool grad = n.op == Op::kWhileGrad;
  const CompiledGraph& body = *programs.graphs[0];
  std::vector<Tensor> carried;
  for (size_t i = 0; i < k; ++i) carried.push_back(*inputs[1 + i]);
  // The carried values at the start of each trip, for the backward pass.
  std::vector<std::vector<Tensor>> trips;
  absl::InlinedVector<const Tensor*, 8> args(k + m);
  for (size_t j = 0; j < m; ++j) args[k + j] = inputs[1 + k + j];
  std::vector<Tensor> next;
  for (bool stay = Holds(*inputs[0]); stay;) {
    for (size_t i = 0; i < k; ++i) args[i] = &carried[i];
    PIJIT_RETURN_IF_ERROR(body.Run(args, &next));
    stay = Holds(next[k]);
    next.resize(k);
    if (grad) trips.push_back(std::move(carried));
    carried = std::move(next);
    next = {};
  }
  if (!grad) return carried;
  // Backward over the trips, last first: (dc, acc) = body_vjp(c_t, v, dc, acc).
  const CompiledGraph& body_vjp = *programs.graphs[1];
  std::vector<Tensor> state;  // dc (k), then acc (m)
  for (size_t i = 0; i < k + m; ++i) state.push_back(*inputs[1 + k + m + i]);
  absl::InlinedVector<const Tensor*, 16> vjp_args(2 * (k + m));
  for (size_t j = 0; j < m; ++j) vjp_args[k + j] = inputs[1 + k + j];
  for (size_t t = trips.size(); t-- > 0;) {
    for (size_t i = 0; i < k; ++i) vjp_args[i] = &trips[t][i];
    for (size_t i = 0; i < k + m; ++i) vjp_args[k + m + i] = &state[i];
    PIJIT_RETURN_IF_ERROR(body_vjp.Run(vjp_args, &next));
    state = std::move(next);
    next = {};
    trips[t].clear();  // its memory goes as soon as its trip is done
  }
  return state;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> RunRegionNode(const Node& n, const RegionPrograms& programs,
                                                  absl::Span<const Tensor* const> inputs) {
  if (n.op == Op::kWhileLoop || n.op == Op::kWhileGrad) return RunLoop(n, programs, inputs);
  // cond, cond_grad: only the branch the predicate picks runs.
  const CompiledGraph& branch = *programs.graphs[Holds(*inputs[0]) ? 0 : 1];
  std::vector<Tensor> results;
  PIJIT_RETURN_IF_ERROR(branch.Run(inputs.subspan(1), &results));
  return results;
}

}  // namespace pijit::graph
