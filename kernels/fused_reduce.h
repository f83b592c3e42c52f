// Reductions of fused elementwise programs: sum, mean, max or min of a FusedKernel's result,
// computed chunk by chunk so that the result is never written to memory.
//
// The reduction follows the eager kernel's order exactly (kernels/cpu/reduce_vec.h): each row
// is split into the same chunks of rvec::kChunk elements, a chunk's program results are
// computed into a per-thread buffer and reduced by the same leaf (SumChunk, MaxLeaf, MinLeaf),
// and the chunks' values are combined in the same fixed order. So the result equals
// Reduce(op, kernel.Run(inputs, shape), axes, keepdims) bit for bit.
//
// Reductions over leading or middle axes (a bias gradient's sum over axis 0, say) follow the
// eager column schedule (rvec::ReduceColumns) the same way, with the program's results for a
// block of rows computed into the buffer.
//
// That path is taken when, at run time, the reduced axes of size > 1 are adjacent among the
// axes of size > 1 (all axes, trailing axes such as axis=-1, leading axes such as axis=0) and
// every input is contiguous with the result's element count or has a single element.
// Anything else (inputs broadcast along some axes, strided views, reduced axes apart)
// materialises the program's result and reduces it with Reduce: the same values, with the
// intermediate written.
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
