// For passes that rewrite a node in place into the last of several new nodes: Graph::AddOp
// appends the new ones at the graph's end, after the rewritten node that now reads them;
// Place() then moves each group right before the node it was made for, which keeps the order
// topological (the new nodes read only nodes that came before the rewritten one).
#pragma once
#include <vector>

#include "absl/status/status.h"
#include "graph/graph.h"

namespace pijit::graph {

class NodeInsertion {
 public:
  explicit NodeInsertion(const Graph& g) : count_(g.nodes().size()), before_(count_) {}
  // Call before adding the nodes for `id`; they are those added until the next call or Place.
  void Begin(const Graph& g, NodeId id) {
    Close(g);
    open_ = id;
    first_ = g.nodes().size();
  }
  bool empty() const { return !any_ && open_ < 0; }
  // Reorders `g` so that every group comes right before its node.
  absl::Status Place(Graph& g);

 private:
  void Close(const Graph& g);

  size_t count_;
  std::vector<std::vector<NodeId>> before_;
  NodeId open_ = -1;
  size_t first_ = 0;
  bool any_ = false;
};

}  // namespace pijit::graph
