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

// The results of region node `n` on `inputs`: a loop's carried results, a conditional's
// branch's results, or the gradients of a while_grad or cond_grad.
absl::StatusOr<std::vector<Tensor>> RunRegionNode(const Node& n, const RegionPrograms& programs,
                                                  absl::Span<const Tensor* const> inputs);

}  // namespace pijit::graph
