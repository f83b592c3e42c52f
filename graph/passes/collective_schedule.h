// Collective scheduling: each all-reduce moves up to just after the nodes its input needs,
// together with the reshapes, casts and concatenations that assemble that input (a bucket of
// flattened gradients), so that the executor starts it there and the communication runs
// behind the nodes that follow (the rest of the backward pass); the nodes that read its result
// stay where they were, and the executor waits for it at the first of them.
//
//   before                                after
//   %7  = dW2 (last layer's gradient)     %7  = dW2
//   %8  = dW1 (needs the whole backward)  %9  = reshape(%7)
//   %9  = reshape(%7)                     %10 = all_reduce(%9)   <- starts; %8 runs behind it
//   %10 = all_reduce(%9)                  %8  = dW1
//   %11 = sub(W2, %10)                    %11 = sub(W2, %10)     <- waits here
//
// Only moves up, and only nodes without state, so every value is the same as before. The
// all-reduces keep their order among themselves: every rank must issue its collectives in the
// same order, and every rank runs the same graph. PIJIT_COMM_OVERLAP=0 turns the pass off
// (benchmarks/data_parallel.py measures what it hides).
#pragma once
#include "graph/passes/pass.h"

namespace pijit::graph::collective_schedule {
absl::StatusOr<bool> Run(Graph& g);
}  // namespace pijit::graph::collective_schedule
