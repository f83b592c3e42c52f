// Kernels for complex64 and complex128 elements: the binary arithmetic, the unary functions and
// the reductions that take them (graph/complex_support.h lists the ops). The generic kernels
// call these where a dtype is complex, so that their real-only loops never see one.
#pragma once
#include "absl/status/statusor.h"
#include "kernels/ops.h"

namespace pijit {

// The result of `op` on complex `in`: abs gives the real dtype of its parts, neg, square, exp,
// log and sqrt keep it; any other op is a TypeError naming it.
absl::StatusOr<TensorMeta> InferComplexUnary(UnaryOp op, const TensorMeta& in);
absl::StatusOr<Tensor> ComplexUnary(UnaryOp op, const Tensor& a);

// A TypeError unless `op` is add, sub, mul, div, equal or not_equal on `dtype` (complex).
absl::Status CheckComplexBinary(BinaryOp op, DType dtype);
// out = op(va, vb) for views of out's shape in the complex dtype `compute`.
absl::Status RunComplexBinary(BinaryOp op, DType compute, const Tensor& va, const Tensor& vb,
                              const Tensor& out);

// A TypeError unless `op` is sum, mean or prod.
absl::Status CheckComplexReduce(ReduceOp op, DType dtype);
// out[i] = op over row i of `rows` (contiguous, kept x red) for complex `rows`.
void ReduceComplexRows(ReduceOp op, const Tensor& rows, int64_t kept, int64_t red,
                       const Tensor& out);

}  // namespace pijit

namespace pijit {

// The real (imag false) or imaginary part of complex `a` as a view of its storage, in the real
// dtype of its parts.
absl::StatusOr<Tensor> ComplexPart(const Tensor& a, bool imag);
// Complex `a` as a view of shape a.shape + (2,) in the real dtype of its parts (torch's and
// MindSpore's view_as_real).
absl::StatusOr<Tensor> ViewAsReal(const Tensor& a);
// real + imag * 1j for float32 or float64 tensors of one dtype, broadcast together (MindSpore's
// ops.Complex): complex64 from float32, complex128 from float64.
absl::StatusOr<Tensor> MakeComplex(const Tensor& real, const Tensor& imag);

}  // namespace pijit
