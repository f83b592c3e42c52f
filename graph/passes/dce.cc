#include "graph/passes/dce.h"

namespace pijit::graph::dce {

absl::StatusOr<bool> Run(Graph& g) { return g.Compact(g.LiveNodes()) > 0; }

}  // namespace pijit::graph::dce
