#include "graph/passes/node_insertion.h"

namespace pijit::graph {

void NodeInsertion::Close(const Graph& g) {
  if (open_ < 0) return;
  for (size_t k = first_; k < g.nodes().size(); ++k) before_[open_].push_back(static_cast<NodeId>(k));
  any_ = true;
  open_ = -1;
}

absl::Status NodeInsertion::Place(Graph& g) {
  Close(g);
  if (!any_) return absl::OkStatus();
  std::vector<NodeId> order;
  order.reserve(g.nodes().size());
  for (size_t id = 0; id < count_; ++id) {
    order.insert(order.end(), before_[id].begin(), before_[id].end());
    order.push_back(static_cast<NodeId>(id));
  }
  return g.Reorder(order);
}

}  // namespace pijit::graph
