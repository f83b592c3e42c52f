// Time spent per kind of operation (op, result dtype and shape), for PIJIT_PROFILE and
// pijit.Profiler: compiled graphs' nodes and eager ops, each kind counted apart. Recording is
// off unless PIJIT_PROFILE is set or a Profiler turns it on; the check on the hot paths is one
// relaxed atomic load.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/ops.h"

namespace pijit::graph {

struct NodeTime {
  std::string node;  // "<op> <dtype><shape>", eager ops prefixed with "eager "
  double ms;
  int64_t count;
};

namespace op_profile_detail {
extern std::atomic<bool> g_on;
}

// Whether times are being recorded now.
inline bool OpProfilingOn() { return op_profile_detail::g_on.load(std::memory_order_relaxed); }
void SetOpProfiling(bool on);
// Forgets every time recorded so far.
void ResetOpProfile();
// Adds `seconds` to the kind (`op`, `meta`); `eager` marks an op run outside compiled graphs.
void AddOpTime(std::string_view op, const TensorMeta& meta, bool eager, double seconds);
// The times so far, largest first.
std::vector<NodeTime> OpProfileSnapshot();

}  // namespace pijit::graph
