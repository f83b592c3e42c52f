// Runs a verified graph natively: one kernel call per node, no Python.
#pragma once
#include <vector>

#include "graph/graph.h"

namespace pijit::graph {

class CompiledGraph {
 public:
  static absl::StatusOr<CompiledGraph> Compile(Graph g);
  // `inputs` in parameter order; returns the graph outputs in order.
  absl::Status Run(absl::Span<const Tensor* const> inputs, std::vector<Tensor>* outputs) const;
  const Graph& graph() const { return graph_; }

 private:
  Graph graph_;
  std::vector<int32_t> last_use_;  // per node: index of the last node reading it
};

}  // namespace pijit::graph
