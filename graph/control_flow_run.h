// Running a control-flow node (graph/control_flow.h) inside a compiled graph: its graphs are
// compiled graphs of their own, compiled once with the graph that holds them (graph/executor.h).
#pragma once
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace pijit::graph {

class CompiledGraph;

// A region node's graphs, compiled, in the order of Region::graphs.
struct RegionPrograms {
  std::vector<std::shared_ptr<const CompiledGraph>> graphs;
};

// A while_loop's trips for its while_grad: per trip, its carried values then its residuals.
struct LoopTrips {
  std::vector<std::vector<Tensor>> trips;
};

// The results of region node `n` on `inputs`: a loop's carried results, a conditional's
// branch's results, or the gradients of a while_grad or cond_grad. A while_loop fills `keep`
// with its trips when given one; a while_grad reads `kept` (its loop's trips) when given one,
// else runs the trips again.
// A loop whose condition never fails runs until the process is interrupted, as Python's would:
// every 64 trips a while_loop asks `check` (the bindings: Python's signal handlers, which may
// leave an exception set), and stops with a Cancelled error when it says so.
void SetLoopInterruptCheck(bool (*check)());

absl::StatusOr<std::vector<Tensor>> RunRegionNode(const Node& n, const RegionPrograms& programs,
                                                  absl::Span<const Tensor* const> inputs,
                                                  LoopTrips* keep = nullptr, const LoopTrips* kept = nullptr);

}  // namespace pijit::graph
