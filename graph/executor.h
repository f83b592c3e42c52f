// Runs a verified graph natively: one kernel call per node, no Python.
//
// Compile optimises the graph (graph/passes/pipeline.h) without changing its interface:
// params keep their order and count (the cache maps them to the call's arguments) and
// outputs keep their order, metas and values. Passes may make an output share storage with
// a param, a constant or another output where eager execution gave a fresh tensor (x*1 -> x,
// folding, cse); Run copies such outputs, so callers see the storage eager would give them.
#pragma once
#include <vector>

#include "graph/graph.h"
#include "graph/passes/pipeline.h"

namespace pijit::graph {

struct CompileOptions {
  bool optimize = true;
  PipelineOptions pipeline;
};

class CompiledGraph {
 public:
  static absl::StatusOr<CompiledGraph> Compile(Graph g, const CompileOptions& options = {});
  // `inputs` in parameter order; returns the graph outputs in order.
  absl::Status Run(absl::Span<const Tensor* const> inputs, std::vector<Tensor>* outputs) const;
  const Graph& graph() const { return graph_; }

 private:
  Graph graph_;
  std::vector<int32_t> last_use_;  // per node: index of the last node reading it
  std::vector<bool> copy_output_;  // per output: copy it (see the header comment)
};

}  // namespace pijit::graph
