// Common subexpression elimination: a node with the same op, the same inputs and the same
// attributes as an earlier node (constants: the same dtype, shape and bytes) is replaced by
// the earlier one. Params are never merged. Uses are redirected; the duplicates stay behind
// for dce. One forward walk: inputs are canonicalised before a node's key is formed, so
// chains of duplicates collapse in one run.
#pragma once
#include "graph/passes/pass.h"

namespace pijit::graph::cse {
absl::StatusOr<bool> Run(Graph& g);
}  // namespace pijit::graph::cse
