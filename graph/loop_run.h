// Running a loop node (graph/loop.h) inside a compiled graph: its bodies are compiled graphs
// of their own, compiled once with the graph that holds them (graph/executor.h).
#pragma once
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace pijit::graph {

class CompiledGraph;

struct LoopPrograms {
  std::shared_ptr<const CompiledGraph> body;
  std::shared_ptr<const CompiledGraph> body_vjp;  // while_grad
};

// A while_loop's carried results, or a while_grad's gradients (carried, then invariants).
absl::StatusOr<std::vector<Tensor>> RunLoopNode(const Node& n, const LoopPrograms& programs,
                                                absl::Span<const Tensor* const> inputs);

}  // namespace pijit::graph
