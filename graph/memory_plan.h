// Memory planning for compiled graphs: which computed values live in one arena, and where.
//
// A graph with static sizes knows the byte size of every value and the span of nodes over
// which each value's storage is in use, so the intermediates of a call can share one buffer
// allocated once per graph instead of one allocation (and free) per node per call:
//
//   %2 = matmul(%0, %1)    slot A  ─┐ live over nodes 2..4
//   %3 = reshape(%2)       (view of %2: extends A's span to %3's last use)
//   %4 = relu(%3)          slot B    ─┐ A and B overlap in time: different offsets
//   %5 = exp(%4)           slot A'    │ A is dead after %4: A' may reuse A's bytes
//   return (%5 ...)                   ┘ (an output never gets a slot: the caller owns it)
//
// Storage, not values, is what is planned. A value's storage is its *root*'s: the value itself,
// or for an op whose result may share its input's storage (views: reshape, transpose,
// broadcast_to, squeeze, unsqueeze, flatten, index; assign, which returns its variable; cast to
// the input's own dtype, which returns the input) the root of that input. A root's storage is
// in use from the root's node to the last use of any value sharing it. Roots that are
// params or constants, roots that some graph output shares (the output leaves the call), and
// empty values get no slot.
//
// Placement is the "greedy by size" offset planner (Pisarchyk and Lee, "Efficient Memory
// Management for Deep Neural Net Inference", 2020; TensorFlow Lite's arena planner and MNN use
// the same idea): take the slots largest first; place each at the lowest-waste position among
// the already placed slots whose spans overlap its own — the smallest gap between them that
// fits it (best fit), or above the highest of them. Sizes are rounded up to 64 bytes, so every
// slot starts 64-byte aligned. The work grows with the number of pairs of slots whose spans
// overlap (a chain of 1000 nodes has ~1000), not with the square of the number of slots.
#pragma once
#include <cstddef>
#include <vector>

#include "graph/graph.h"

namespace pijit::graph {

struct MemoryPlan {
  static constexpr int32_t kNoSlot = -1;
  struct Slot {
    NodeId node;      // the root whose storage this is
    size_t offset;    // into the arena, a multiple of kAlignment
    size_t nbytes;    // the value's exact size (what the kernel asks Storage::Allocate for)
    int32_t first;    // span of nodes over which the storage is in use, inclusive
    int32_t last;
  };
  static constexpr size_t kAlignment = 64;

  std::vector<int32_t> slot;  // per node: its index in `slots`, or kNoSlot
  std::vector<NodeId> root;   // per node: the node whose storage its value may share
  std::vector<Slot> slots;
  size_t arena_bytes = 0;

  bool empty() const { return slots.empty(); }
};

// The input whose storage `n`'s result may share (see above), or -1.
int SharedStorageInput(const Graph& g, const Node& n);

// Plans the graph's computed values into one arena. Sizes come from the metas, so a graph
// whose sizes vary between calls must not be planned (its kernels would not find their
// slots; nothing breaks, but nothing is gained).
MemoryPlan PlanMemory(const Graph& g);

}  // namespace pijit::graph
