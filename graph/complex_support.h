// Which operations take complex64 and complex128 tensors.
//
// Complex tensors run eagerly, on the CPU, in the ops listed in complex_support.cc: the
// arithmetic (add, sub, mul, div, neg), equal and not_equal, abs (a real result), exp, log,
// sqrt, square, sum, mean and prod, casts, the creation ops and the copies and views that move
// elements without looking at them (reshape, transpose, slicing, concat, ...). Every other op
// refuses them with a TypeError that names the op and the dtype, before any kernel runs: the
// kernels' dtype dispatch (kernels/dtype.h DispatchDType) has no complex case, so a complex
// tensor reaching one would be misread as float64.
//
// Compiled graphs hold no complex values: the fused code generators, the algebraic
// simplifications and the CUDA kernels are real-only. A node with a complex input or result is
// refused when the graph is built, which makes the capture break there and the operation run
// eagerly, with the eager result.
#pragma once
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "graph/graph.h"

namespace pijit::graph {

// OK unless `n` takes or makes a complex tensor and is not one of the ops that handle them.
absl::Status CheckEagerComplexSupport(const Node& n, absl::Span<const Tensor* const> inputs);

// OK unless `n` (being added to a graph, or run on a device) takes or makes a complex tensor.
absl::Status CheckGraphComplexSupport(const Node& n, absl::Span<const TensorMeta* const> inputs,
                                      DType result);

}  // namespace pijit::graph
