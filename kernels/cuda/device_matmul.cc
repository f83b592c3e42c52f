// Matrix products on the GPU through cuBLAS (kernels/cuda/device_ops.h).
//
// cuBLAS is column-major; pijit's tensors are row-major. A row-major C = A B is the
// column-major C^T = B^T A^T, so the call passes B first and A second, each with the
// operation that reads its memory as the matrix cuBLAS expects: a row-major contiguous matrix
// is read as is (N), one whose last two axes are a transposed view (x.T) as T, with no copy.
#include "absl/strings/str_format.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_ops.h"
#include "kernels/errors.h"

namespace pijit::cuda {
namespace {

// An operand as cuBLAS reads it: pointer, operation, leading dimension, batch stride.
struct BlasOperand {
  const void* data = nullptr;
  cublasOperation_t op = CUBLAS_OP_N;
  int ld = 0;
  long long batch_stride = 0;
  long long batch = 1;
  Tensor keep;  // a contiguous copy, when one was needed
};

// `t` viewed as (batch, rows, cols): its last two axes, the others flattened.
absl::StatusOr<BlasOperand> OperandOf(const Tensor& t, int64_t rows, int64_t cols) {
  BlasOperand o;
  const int64_t nd = t.ndim();
  for (int64_t d = 0; d + 2 < nd; ++d) o.batch *= t.shape()[d];
  const int64_t s_row = t.strides()[nd - 2], s_col = t.strides()[nd - 1];
  // Batch axes must step by one matrix each (or the tensor has one matrix).
  bool packed_batch = true;
  int64_t expect = rows * cols;
  for (int64_t d = nd - 3; d >= 0; --d) {
    if (t.shape()[d] != 1 && t.strides()[d] != expect) packed_batch = false;
    expect *= t.shape()[d];
  }
  if (packed_batch && s_col == 1 && (s_row == cols || rows == 1)) {
    o.op = CUBLAS_OP_N;
    o.ld = static_cast<int>(std::max<int64_t>(cols, 1));
    o.data = t.raw_data();
  } else if (packed_batch && s_row == 1 && (s_col == rows || cols == 1)) {
    o.op = CUBLAS_OP_T;
    o.ld = static_cast<int>(std::max<int64_t>(rows, 1));
    o.data = t.raw_data();
  } else {
    PIJIT_ASSIGN_OR_RETURN(o.keep, DeviceContiguous(t.is_contiguous() ? t : t));
    if (!o.keep.is_contiguous()) return absl::InternalError("matmul: copy is not contiguous");
    o.op = CUBLAS_OP_N;
    o.ld = static_cast<int>(std::max<int64_t>(cols, 1));
    o.data = o.keep.raw_data();
  }
  o.batch_stride = o.batch > 1 ? rows * cols : 0;
  return o;
}

// Views of a 1-D operand as a matrix: (1, k) on the left, (k, 1) on the right.
Tensor AsMatrix(const Tensor& t, bool left) {
  if (t.ndim() != 1) return t;
  const int64_t k = t.shape()[0], s = t.strides()[0];
  return left ? Tensor::View(t.storage(), t.dtype(), {1, k}, {k * s, s}, t.offset())
              : Tensor::View(t.storage(), t.dtype(), {k, 1}, {s, 1}, t.offset());
}

// cuBLAS's workspace, pijit's memory set once: cuBLAS then allocates nothing itself while a
// call is recorded into a CUDA graph (kernels/cuda/graph_capture.h), and the recording keeps
// pointing at memory that lives as long as the process.
absl::Status EnsureBlasWorkspace(const CudaApi& api) {
  static const absl::Status status = [&api]() -> absl::Status {
    if (!api.cublasSetWorkspace) return absl::OkStatus();  // older cuBLAS: its own workspace
    constexpr int64_t kBytes = int64_t{32} << 20;
    PIJIT_ASSIGN_OR_RETURN(Tensor ws, EmptyOnDevice({kBytes}, DType::kUInt8));
    static Tensor* kept = new Tensor(ws);  // for the process, as the handle
    if (api.cublasSetWorkspace(api.blas, kept->raw_data(), kBytes) != 0) {
      return absl::InternalError("cublasSetWorkspace failed");
    }
    return absl::OkStatus();
  }();
  return status;
}

}  // namespace

absl::StatusOr<Tensor> DeviceMatMul(const Tensor& a_in, const Tensor& b_in, const TensorMeta& out) {
  if (a_in.device() != Device::kCUDA || b_in.device() != Device::kCUDA) {
    return absl::InvalidArgumentError("matmul: an operand is not on the GPU");
  }
  if (a_in.dtype() != b_in.dtype() || a_in.dtype() != out.dtype ||
      (out.dtype != DType::kFloat32 && out.dtype != DType::kFloat64)) {
    return absl::UnimplementedError(absl::StrFormat(
        "the CUDA backend runs matmul on two float32 or two float64 operands, not %s and %s",
        DTypeName(a_in.dtype()), DTypeName(b_in.dtype())));
  }
  if (a_in.ndim() == 0 || b_in.ndim() == 0) {
    return absl::InvalidArgumentError("matmul: operands must have at least one axis");
  }
  PIJIT_ASSIGN_OR_RETURN(const CudaApi* api, CudaApi::Get());
  const Tensor a = AsMatrix(a_in, true), b = AsMatrix(b_in, false);
  const int64_t m = a.shape()[a.ndim() - 2], k = a.shape()[a.ndim() - 1];
  const int64_t n = b.shape()[b.ndim() - 1];
  if (b.shape()[b.ndim() - 2] != k) return absl::InvalidArgumentError("matmul: inner sizes differ");
  PIJIT_ASSIGN_OR_RETURN(BlasOperand A, OperandOf(a, m, k));
  PIJIT_ASSIGN_OR_RETURN(BlasOperand B, OperandOf(b, k, n));
  if (A.batch != B.batch && A.batch != 1 && B.batch != 1) {
    return absl::UnimplementedError(
        "the CUDA backend runs batched matmul when both batch shapes are equal or one is absent");
  }
  const long long batch = std::max(A.batch, B.batch);
  if (A.batch > 1 && B.batch > 1 && a.ndim() != b.ndim()) {
    return absl::UnimplementedError("matmul: batch shapes of different ranks on the GPU");
  }
  PIJIT_ASSIGN_OR_RETURN(Tensor c, EmptyOnDevice(out.shape, out.dtype));
  if (c.numel() == 0) return c;
  if (k == 0) {
    PIJIT_RETURN_IF_ERROR(DriverStatus(*api, api->cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(c.raw_data()), 0,
                                                                  c.numel() * c.itemsize(), api->stream),
                                       "cuMemsetD8Async"));
    return c;
  }
  PIJIT_RETURN_IF_ERROR(EnsureBlasWorkspace(*api));
  const int M = static_cast<int>(n), N = static_cast<int>(m), K = static_cast<int>(k);
  cublasStatus_t st;
  if (out.dtype == DType::kFloat32) {
    const float one = 1, zero = 0;
    st = api->cublasSgemmStridedBatched(
        api->blas, B.op, A.op, M, N, K, &one, static_cast<const float*>(B.data), B.ld, B.batch_stride,
        static_cast<const float*>(A.data), A.ld, A.batch_stride, &zero, c.data<float>(), M,
        static_cast<long long>(m) * n, static_cast<int>(batch));
  } else {
    const double one = 1, zero = 0;
    st = api->cublasDgemmStridedBatched(
        api->blas, B.op, A.op, M, N, K, &one, static_cast<const double*>(B.data), B.ld, B.batch_stride,
        static_cast<const double*>(A.data), A.ld, A.batch_stride, &zero, c.data<double>(), M,
        static_cast<long long>(m) * n, static_cast<int>(batch));
  }
  if (st != 0) return absl::InternalError(absl::StrFormat("cuBLAS gemm failed (status %d)", st));
  return c;
}

}  // namespace pijit::cuda
