// Reductions of fused elementwise programs: sum, mean, max or min of a FusedKernel's result,
// computed chunk by chunk so that the result is never written to memory.
//
// The reduction follows the eager kernel's order exactly (kernels/cpu/reduce_vec.h): each row
// is split into the same chunks of rvec::kChunk elements, a chunk's program results are
// computed into a per-thread buffer and reduced by the same leaf (SumChunk, MaxLeaf, MinLeaf),
// and the chunks' values are combined in the same fixed order. So the result equals
// Reduce(op, kernel.Run(inputs, shape), axes, keepdims) bit for bit.
//
// That path is taken when, at run time, the reduced axes of size > 1 all follow the kept ones
// of size > 1 (all axes, or trailing axes such as axis=-1: rows of the result in memory order)
// and every input is contiguous with the result's element count or has a single element.
// Anything else (inputs broadcast along some axes, strided views, other axes) materialises the
// program's result and reduces it with Reduce: the same values, with the intermediate written.
#pragma once
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/fused.h"
#include "kernels/ops.h"

namespace pijit {

// The reductions FusedReduce computes: sum, mean, max, min.
bool FusedReduceSupports(ReduceOp op);

// reduce(op, the program of `kernel` over `inputs` broadcast to `shape`, axes, keepdims), as
// Reduce computes it. Bad input (wrong count, dtype or shape of the inputs, bad axes, an
// empty max/min) is an error, never a crash.
absl::StatusOr<Tensor> FusedReduce(const FusedKernel& kernel, ReduceOp op,
                                   absl::Span<const Tensor* const> inputs,
                                   absl::Span<const int64_t> shape,
                                   absl::Span<const int64_t> axes, bool keepdims);

}  // namespace pijit
