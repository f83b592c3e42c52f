// What every pass has in common. A pass is one function in its own namespace,
//
//   absl::StatusOr<bool> Run(Graph& g);   // true when it changed the graph
//
// that leaves `g` verified (Graph::Verify) with its interface unchanged: the same params in
// the same order, the same number of outputs in the same order, each output with the same
// meta and the same values as before (bit for bit, except where a pass documents a
// tolerance). Passes may leave dead nodes behind; dce removes them.
#pragma once
#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace pijit::graph {

using PassFn = absl::StatusOr<bool> (*)(Graph& g);

}  // namespace pijit::graph
