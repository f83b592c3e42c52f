// Eager tensor operations. Every op has a shape/dtype inference function (Infer*) that
// reports bad input exactly as the op itself does; graph capture calls the inference
// functions, so a jitted call and an eager call fail with the same error.
#pragma once
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/tensor.h"

namespace pijit {

struct TensorMeta {
  DType dtype;
  Shape shape;
  bool operator==(const TensorMeta& o) const { return dtype == o.dtype && shape == o.shape; }
};
inline TensorMeta MetaOf(const Tensor& t) { return {t.dtype(), t.shape()}; }

enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv };
enum class UnaryOp : uint8_t { kNeg, kExp, kLog, kRelu };
enum class ReduceOp : uint8_t { kSum, kMean };
const char* BinaryOpName(BinaryOp op);  // "add"
const char* UnaryOpName(UnaryOp op);
const char* ReduceOpName(ReduceOp op);

absl::StatusOr<Shape> BroadcastShapes(const char* op, absl::Span<const int64_t> a,
                                      absl::Span<const int64_t> b);

absl::StatusOr<TensorMeta> InferBinary(BinaryOp op, const TensorMeta& a, const TensorMeta& b);
absl::StatusOr<Tensor> Binary(BinaryOp op, const Tensor& a, const Tensor& b);

absl::StatusOr<TensorMeta> InferUnary(UnaryOp op, const TensorMeta& a);
absl::StatusOr<Tensor> Unary(UnaryOp op, const Tensor& a);

// `axes` empty means every axis. Negative axes count from the end.
absl::StatusOr<TensorMeta> InferReduce(ReduceOp op, const TensorMeta& a,
                                       absl::Span<const int64_t> axes, bool keepdims);
absl::StatusOr<Tensor> Reduce(ReduceOp op, const Tensor& a, absl::Span<const int64_t> axes,
                              bool keepdims);

// NumPy matmul semantics: 1-D operands are promoted and the added axis removed; leading
// (batch) axes broadcast. float32 runs on oneDNN, float64 on BLAS.
absl::StatusOr<TensorMeta> InferMatMul(const TensorMeta& a, const TensorMeta& b);
absl::StatusOr<Tensor> MatMul(const Tensor& a, const Tensor& b);

// One -1 entry is inferred. A view when the input is contiguous, a copy otherwise.
absl::StatusOr<TensorMeta> InferReshape(const TensorMeta& a, absl::Span<const int64_t> shape);
absl::StatusOr<Tensor> Reshape(const Tensor& a, absl::Span<const int64_t> shape);

// `perm` empty reverses the axes. Always a view.
absl::StatusOr<TensorMeta> InferTranspose(const TensorMeta& a, absl::Span<const int64_t> perm);
absl::StatusOr<Tensor> Transpose(const Tensor& a, absl::Span<const int64_t> perm);

absl::StatusOr<Tensor> Cast(const Tensor& a, DType dtype);
// A view of `a` broadcast to `shape` (stride 0 on broadcast axes).
absl::StatusOr<Tensor> BroadcastTo(const Tensor& a, absl::Span<const int64_t> shape);

// Resolves one axis against `ndim`; error names the op.
absl::StatusOr<int64_t> NormalizeAxis(const char* op, int64_t axis, int64_t ndim);

}  // namespace pijit
