#include "graph/memory_plan.h"

#include <algorithm>
#include <limits>

namespace pijit::graph {

int SharedStorageInput(const Graph& g, const Node& n) {
  if (n.inputs.empty()) return -1;
  if (HasTrait(n.op, kShape)) return 0;  // a view when it can be one, else a fresh copy
  if (n.op == Op::kAssign) return 0;     // returns the variable it wrote
  // cast to the input's own dtype returns the input (kernels/ops.h Cast).
  if (n.op == Op::kCast && g.node(n.inputs[0]).meta.dtype == n.meta.dtype) return 0;
  return -1;
}

namespace {

size_t RoundUp(size_t n) {
  return (n + MemoryPlan::kAlignment - 1) / MemoryPlan::kAlignment * MemoryPlan::kAlignment;
}

// For each slot, the slots whose spans overlap its own: a sweep over the slots by first use,
// linear in the number of overlapping pairs (slots are made in node order, so by first use).
std::vector<std::vector<size_t>> OverlappingSlots(const std::vector<MemoryPlan::Slot>& slots) {
  std::vector<std::vector<size_t>> out(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    for (size_t j = i + 1; j < slots.size() && slots[j].first <= slots[i].last; ++j) {
      out[i].push_back(j);
      out[j].push_back(i);
    }
  }
  return out;
}

// Greedy by size (see the header): `slots` get their offsets; returns the arena's size.
size_t PlaceGreedyBySize(std::vector<MemoryPlan::Slot>& slots) {
  const std::vector<std::vector<size_t>> overlapping = OverlappingSlots(slots);
  std::vector<size_t> order(slots.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return slots[a].nbytes > slots[b].nbytes;  // ties keep node order
  });
  std::vector<bool> placed(slots.size(), false);
  std::vector<size_t> live;  // the placed slots overlapping the one being placed, by offset
  size_t arena = 0;
  for (size_t s : order) {
    MemoryPlan::Slot& slot = slots[s];
    const size_t need = RoundUp(slot.nbytes);
    live.clear();
    for (size_t o : overlapping[s])
      if (placed[o]) live.push_back(o);
    std::sort(live.begin(), live.end(),
              [&](size_t a, size_t b) { return slots[a].offset < slots[b].offset; });
    // The smallest gap between them that fits, else above them all.
    size_t best = std::numeric_limits<size_t>::max();
    size_t best_gap = std::numeric_limits<size_t>::max();
    size_t end = 0;  // end of the overlapping slots seen so far
    for (size_t o : live) {
      const MemoryPlan::Slot& other = slots[o];
      if (other.offset >= end + need && other.offset - end < best_gap) {
        best = end;
        best_gap = other.offset - end;
      }
      end = std::max(end, other.offset + RoundUp(other.nbytes));
    }
    slot.offset = best != std::numeric_limits<size_t>::max() ? best : end;
    placed[s] = true;
    arena = std::max(arena, slot.offset + need);
  }
  return arena;
}

}  // namespace

MemoryPlan PlanMemory(const Graph& g) {
  const auto& nodes = g.nodes();
  const int32_t n = static_cast<int32_t>(nodes.size());
  MemoryPlan plan;
  plan.slot.assign(n, MemoryPlan::kNoSlot);
  plan.root.resize(n);
  // Roots, and for each root the last node that uses any value sharing its storage.
  std::vector<int32_t> last(n);
  for (int32_t id = 0; id < n; ++id) {
    const int in = SharedStorageInput(g, nodes[id]);
    plan.root[id] = in < 0 ? id : plan.root[nodes[id].inputs[in]];
    last[id] = id;
  }
  for (int32_t id = 0; id < n; ++id)
    for (NodeId i : nodes[id].inputs) last[plan.root[i]] = std::max(last[plan.root[i]], id);
  std::vector<bool> escapes(n, false);  // shared by a graph output
  for (NodeId o : g.outputs()) escapes[plan.root[o]] = true;
  for (int32_t id = 0; id < n; ++id) {
    const Node& node = nodes[id];
    if (plan.root[id] != id || escapes[id] || HasTrait(node.op, kSource)) continue;
    // A control-flow node's results come from its graphs' own compiled graphs.
    if (HasTrait(node.op, kRegion) || node.op == Op::kResult) continue;
    const auto& shape = node.meta.shape;
    if (std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 0; })) continue;
    const int64_t numel = NumElements(shape);
    if (numel == 0) continue;
    const size_t nbytes = static_cast<size_t>(numel) * ItemSize(node.meta.dtype);
    plan.slot[id] = static_cast<int32_t>(plan.slots.size());
    plan.slots.push_back({id, 0, nbytes, id, last[id]});
  }
  plan.arena_bytes = PlaceGreedyBySize(plan.slots);
  return plan;
}

}  // namespace pijit::graph
