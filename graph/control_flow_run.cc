#include "graph/control_flow_run.h"

#include <atomic>

#include "absl/container/inlined_vector.h"
#include "graph/control_flow.h"
#include "graph/executor.h"
#include "kernels/errors.h"

namespace pijit::graph {
namespace {

std::atomic<bool (*)()> g_interrupt_check{nullptr};

// A bool[] predicate's value (on the host: control flow runs on the CPU).
bool Holds(const Tensor& pred) { return *pred.Contiguous().data<bool>(); }

// Runs the loop from its inputs with `body`; its final carried values, and its trips in `keep`.
absl::StatusOr<std::vector<Tensor>> RunTrips(const CompiledGraph& body, size_t k, size_t m,
                                             absl::Span<const Tensor* const> inputs, LoopTrips* keep) {
  std::vector<Tensor> carried;
  for (size_t i = 0; i < k; ++i) carried.push_back(*inputs[1 + i]);
  absl::InlinedVector<const Tensor*, 8> args(k + m);
  for (size_t j = 0; j < m; ++j) args[k + j] = inputs[1 + k + j];
  std::vector<Tensor> next;
  int64_t trip = 0;
  for (bool stay = Holds(*inputs[0]); stay; ++trip) {
    if ((trip & 63) == 63) {
      bool (*check)() = g_interrupt_check.load(std::memory_order_relaxed);
      if (check && check()) return absl::CancelledError("a while loop was interrupted");
    }
    for (size_t i = 0; i < k; ++i) args[i] = &carried[i];
    PIJIT_RETURN_IF_ERROR(body.Run(args, &next));
    stay = Holds(next[k]);
    if (keep) {
      // The trip's carried values, then its residuals (the body's outputs after the stay).
      std::vector<Tensor> trip = std::move(carried);
      for (size_t r = k + 1; r < next.size(); ++r) trip.push_back(std::move(next[r]));
      keep->trips.push_back(std::move(trip));
    }
    next.resize(k);
    carried = std::move(next);
    next = {};
  }
  return carried;
}

// while_grad: body_bwd over the trips, last first: (dc, acc) = body_bwd(c_t, v, r_t, dc, acc).
absl::StatusOr<std::vector<Tensor>> RunLoopBackward(const Node& n, const RegionPrograms& programs,
                                                    absl::Span<const Tensor* const> inputs, const LoopTrips* kept) {
  const size_t k = static_cast<size_t>(LoopCarried(n));
  const size_t m = static_cast<size_t>(LoopInvariants(n));
  LoopTrips replayed;
  if (!kept) {
    PIJIT_RETURN_IF_ERROR(RunTrips(*programs.graphs[0], k, m, inputs, &replayed).status());
    kept = &replayed;
  }
  const size_t residuals = static_cast<size_t>(LoopResiduals(n));
  std::vector<Tensor> state;  // dc (k), then acc (m)
  for (size_t i = 0; i < k + m; ++i) state.push_back(*inputs[1 + k + m + i]);
  absl::InlinedVector<const Tensor*, 16> args(2 * (k + m) + residuals);
  for (size_t j = 0; j < m; ++j) args[k + j] = inputs[1 + k + j];
  std::vector<Tensor> next;
  for (size_t t = kept->trips.size(); t-- > 0;) {
    const std::vector<Tensor>& trip = kept->trips[t];
    for (size_t i = 0; i < k; ++i) args[i] = &trip[i];
    for (size_t r = 0; r < residuals; ++r) args[k + m + r] = &trip[k + r];
    for (size_t i = 0; i < k + m; ++i) args[k + m + residuals + i] = &state[i];
    PIJIT_RETURN_IF_ERROR(programs.graphs[1]->Run(args, &next));
    state = std::move(next);
    next = {};
    if (kept == &replayed) replayed.trips[t].clear();  // its memory goes as soon as its trip is done
  }
  return state;
}

}  // namespace

void SetLoopInterruptCheck(bool (*check)()) { g_interrupt_check.store(check, std::memory_order_relaxed); }

absl::StatusOr<std::vector<Tensor>> RunRegionNode(const Node& n, const RegionPrograms& programs,
                                                  absl::Span<const Tensor* const> inputs, LoopTrips* keep,
                                                  const LoopTrips* kept) {
  if (n.op == Op::kWhileLoop) {
    return RunTrips(*programs.graphs[0], static_cast<size_t>(LoopCarried(n)), static_cast<size_t>(LoopInvariants(n)),
                    inputs, keep);
  }
  if (n.op == Op::kWhileGrad) return RunLoopBackward(n, programs, inputs, kept);
  // cond, cond_grad: only the branch the predicate picks runs.
  const CompiledGraph& branch = *programs.graphs[Holds(*inputs[0]) ? 0 : 1];
  std::vector<Tensor> results;
  PIJIT_RETURN_IF_ERROR(branch.Run(inputs.subspan(1), &results));
  return results;
}

}  // namespace pijit::graph
