// Dead code elimination: removes the nodes no output depends on and renumbers the rest
// densely, in order (Graph::Compact). Params are never removed: the cache maps them to the
// call's arguments.
#pragma once
#include "graph/passes/pass.h"

namespace pijit::graph::dce {
absl::StatusOr<bool> Run(Graph& g);
}  // namespace pijit::graph::dce
