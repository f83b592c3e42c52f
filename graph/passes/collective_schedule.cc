#include "graph/passes/collective_schedule.h"

#include <functional>
#include <queue>
#include <vector>

#include "kernels/errors.h"
#include "kernels/flags.h"

namespace pijit::graph::collective_schedule {
namespace {

// Ops that only assemble an all-reduce's input: moving them costs nothing in compute.
bool Assembles(Op op) { return HasTrait(op, kShape) || op == Op::kConcat || op == Op::kCast; }

}  // namespace

absl::StatusOr<bool> Run(Graph& g) {
  const auto& nodes = g.nodes();
  const size_t n = nodes.size();
  std::vector<NodeId> collectives;
  for (size_t id = 0; id < n; ++id)
    if (nodes[id].op == Op::kAllReduce) collectives.push_back(static_cast<NodeId>(id));
  if (collectives.empty() || !flags::CommOverlap()) return false;

  // What moves: the all-reduces and the assembly ops they read through (inputs come first, so
  // one pass from the end finds them all).
  std::vector<bool> moves(n, false);
  for (size_t k = n; k-- > 0;) {
    if (nodes[k].op == Op::kAllReduce) moves[k] = true;
    if (!moves[k]) continue;
    for (NodeId i : nodes[k].inputs)
      if (Assembles(nodes[i].op) && nodes[i].op != Op::kParam) moves[i] = true;
  }
  // For each moving node, the inputs it still waits for; an all-reduce also waits for the one
  // before it, which keeps their order.
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<NodeId>> movers_reading(n);
  auto depends = [&](NodeId mover, NodeId on) {
    ++waiting[mover];
    movers_reading[on].push_back(mover);
  };
  for (size_t id = 0; id < n; ++id) {
    if (!moves[id]) continue;
    for (NodeId i : nodes[id].inputs) depends(static_cast<NodeId>(id), i);
  }
  for (size_t k = 1; k < collectives.size(); ++k) depends(collectives[k], collectives[k - 1]);

  std::vector<NodeId> order;
  order.reserve(n);
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<NodeId>> ready;  // earliest first
  auto emit = [&](NodeId id) {
    order.push_back(id);
    for (NodeId m : movers_reading[id])
      if (--waiting[m] == 0) ready.push(m);
  };
  auto emit_ready = [&] {
    while (!ready.empty()) {
      const NodeId m = ready.top();
      ready.pop();
      emit(m);
    }
  };
  for (size_t id = 0; id < n; ++id)
    if (moves[id] && waiting[id] == 0) ready.push(static_cast<NodeId>(id));
  emit_ready();
  for (size_t id = 0; id < n; ++id) {
    if (moves[id]) continue;  // emitted as soon as its inputs are
    emit(static_cast<NodeId>(id));
    emit_ready();
  }
  bool changed = false;
  for (size_t pos = 0; pos < order.size(); ++pos) changed |= order[pos] != static_cast<NodeId>(pos);
  if (!changed) return false;
  PIJIT_RETURN_IF_ERROR(g.Reorder(order));
  return true;
}

}  // namespace pijit::graph::collective_schedule
