// Constant folding: an op whose inputs are all constants is evaluated once, with the same
// eager kernel the executor would call, and becomes a constant node holding the result (so
// the value is bit-identical). Results of more than kMaxFoldedElements elements are left
// alone: a folded constant lives as long as the compiled graph and would cost memory where
// the op costs little time. Ops whose kernel fails stay, so the run reports the error as
// eager execution does.
#pragma once
#include "graph/passes/pass.h"

namespace pijit::graph::constant_folding {
inline constexpr int64_t kMaxFoldedElements = 4096;
absl::StatusOr<bool> Run(Graph& g);
}  // namespace pijit::graph::constant_folding
