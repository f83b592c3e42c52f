// Reductions, softmax and matrix products on the GPU (kernels/cuda/device_ops.h).
#include <algorithm>

#include "absl/strings/str_format.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_ops.h"
#include "kernels/cuda/kernel_source.h"
#include "kernels/cuda/module_cache.h"
#include "kernels/errors.h"

namespace pijit::cuda {
namespace {

absl::Status LaunchBlocks(const CudaApi& api, CUfunction fn, long long work, void* args) {
  constexpr long long kMaxBlocks = 1 << 20;
  const unsigned blocks = static_cast<unsigned>(std::max(1LL, std::min(work, kMaxBlocks)));
  void* params[] = {args};
  return DriverStatus(api, api.cuLaunchKernel(fn, blocks, 1, 1, kReduceBlock, 1, 1, 0, api.stream,
                                              params, nullptr),
                      "cuLaunchKernel");
}

// The reduction kernel of `op` from `in` to `out`, rendered only when first needed.
absl::StatusOr<CUfunction> ReduceFunction(ReduceOp op, DType in, DType out, bool wide) {
  return CompiledFunction(
      absl::StrFormat("reduce|%d|%d|%d|%d", static_cast<int>(op), static_cast<int>(in),
                      static_cast<int>(out), wide),
      [=] { return RenderReduce(op, in, out, wide); }, "pijit_reduce");
}

absl::Status CheckRank(const Tensor& a, const char* what) {
  if (a.device() != Device::kCUDA) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: the input is not on the GPU", what));
  }
  if (a.ndim() > kMaxDims) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: the CUDA backend handles tensors of at most %d axes", what, kMaxDims));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Tensor> DeviceReduce(ReduceOp op, const Tensor& a, absl::Span<const int64_t> axes,
                                    const TensorMeta& out) {
  PIJIT_RETURN_IF_ERROR(CheckRank(a, ReduceOpName(op)));
  PIJIT_ASSIGN_OR_RETURN(const CudaApi* api, CudaApi::Get());
  std::vector<bool> reduced(a.ndim(), axes.empty());
  for (int64_t ax : axes) {
    const int64_t d = ax < 0 ? ax + a.ndim() : ax;
    if (d < 0 || d >= a.ndim()) return absl::InvalidArgumentError("reduce: axis out of range");
    reduced[d] = true;
  }
  ReduceArgs args{};
  args.n_out = 1;
  args.n_red = 1;
  for (int64_t d = 0; d < a.ndim(); ++d) {
    if (reduced[d]) {
      args.red_shape[args.red_ndim] = a.shape()[d];
      args.red_stride[args.red_ndim++] = a.strides()[d];
      args.n_red *= a.shape()[d];
    } else {
      args.kept_shape[args.kept_ndim] = a.shape()[d];
      args.kept_stride[args.kept_ndim++] = a.strides()[d];
      args.n_out *= a.shape()[d];
    }
  }
  if (op == ReduceOp::kMax || op == ReduceOp::kMin) {
    if (args.n_red == 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s of an empty axis has no identity", ReduceOpName(op)));
    }
  }
  const bool wide = NeedsWideIndex(a);
  // Looked up before anything is allocated: an op or dtype without a kernel fails first.
  PIJIT_ASSIGN_OR_RETURN(CUfunction fn, ReduceFunction(op, a.dtype(), out.dtype, wide));
  PIJIT_ASSIGN_OR_RETURN(Tensor result, EmptyOnDevice(out.shape, out.dtype));
  if (args.n_out == 0) return result;
  args.in = a.raw_data();
  args.chunks = 1;
  args.chunk_len = args.n_red;
  args.divisor = args.n_red;
  // Few outputs over many elements (batch statistics: 64 channels of 131,072 values) would
  // leave most of the GPU idle with a block per output: split each output's elements over
  // blocks, then reduce the partial results.
  constexpr long long kFewOutputs = 1024, kManyElements = 32768, kPerBlock = 8192;
  if (args.n_out < kFewOutputs && args.n_red >= kManyElements) {
    args.chunks = std::min((args.n_red + kPerBlock - 1) / kPerBlock, std::max(2LL, 4096 / args.n_out));
    args.chunk_len = (args.n_red + args.chunks - 1) / args.chunks;
    args.divisor = 0;
    PIJIT_ASSIGN_OR_RETURN(Tensor partial, EmptyOnDevice({args.n_out, args.chunks}, out.dtype));
    args.out = partial.raw_data();
    PIJIT_RETURN_IF_ERROR(LaunchBlocks(*api, fn, args.n_out * args.chunks, &args));
    ReduceArgs fin{};
    fin.in = partial.raw_data();
    fin.out = result.raw_data();
    fin.n_out = args.n_out;
    fin.n_red = args.chunks;
    fin.kept_ndim = fin.red_ndim = 1;
    fin.kept_shape[0] = args.n_out;
    fin.kept_stride[0] = args.chunks;
    fin.red_shape[0] = args.chunks;
    fin.red_stride[0] = 1;
    fin.chunks = 1;
    fin.chunk_len = args.chunks;
    fin.divisor = args.n_red;
    PIJIT_ASSIGN_OR_RETURN(CUfunction fin_fn, ReduceFunction(op, out.dtype, out.dtype, wide));
    PIJIT_RETURN_IF_ERROR(LaunchBlocks(*api, fin_fn, fin.n_out, &fin));
    return result;
  }
  args.out = result.raw_data();
  PIJIT_RETURN_IF_ERROR(LaunchBlocks(*api, fn, args.n_out, &args));
  return result;
}

absl::StatusOr<Tensor> DeviceVariance(const Tensor& a, absl::Span<const int64_t> axes, int64_t ddof, bool root,
                                      const TensorMeta& out) {
  const char* what = root ? "std" : "var";
  PIJIT_RETURN_IF_ERROR(CheckRank(a, what));
  if (!IsFloating(out.dtype)) {
    return absl::UnimplementedError(absl::StrFormat("%s: the CUDA backend gives float32 or float64", what));
  }
  // The CPU's two passes in double: the mean, then the squared deviations from it.
  Shape kept = a.shape();
  int64_t count = 1;
  std::vector<bool> reduced(a.ndim(), axes.empty());
  for (int64_t ax : axes) {
    const int64_t d = ax < 0 ? ax + a.ndim() : ax;
    if (d < 0 || d >= a.ndim()) return absl::InvalidArgumentError(absl::StrFormat("%s: axis out of range", what));
    reduced[d] = true;
  }
  for (int64_t d = 0; d < a.ndim(); ++d) {
    if (!reduced[d]) continue;
    count *= a.shape()[d];
    kept[d] = 1;
  }
  PIJIT_ASSIGN_OR_RETURN(const Tensor wide, DeviceCast(a, DType::kFloat64));
  PIJIT_ASSIGN_OR_RETURN(const Tensor mean, DeviceReduce(ReduceOp::kMean, wide, axes, {DType::kFloat64, kept}));
  const Tensor* both[] = {&wide, &mean};
  PIJIT_ASSIGN_OR_RETURN(const Tensor squares, DeviceElementwise("    const T d = T(x0) - T(x1);\n    r = d * d;",
                                                                 DType::kFloat64, both, MetaOf(wide)));
  PIJIT_ASSIGN_OR_RETURN(const Tensor total, DeviceReduce(ReduceOp::kSum, squares, axes, {DType::kFloat64, out.shape}));
  const double denom = static_cast<double>(std::max<int64_t>(count - ddof, 0));  // 0: inf or NaN, as NumPy
  const Tensor* one[] = {&total};
  const std::string body = absl::StrFormat(root ? "    r = pj::sqrt(T(x0) / T(%.17g));" : "    r = T(x0) / T(%.17g);", denom);
  PIJIT_ASSIGN_OR_RETURN(const Tensor v, DeviceElementwise(body, DType::kFloat64, one, {DType::kFloat64, out.shape}));
  return DeviceCast(v, out.dtype);
}

absl::StatusOr<Tensor> DeviceSoftmax(const Tensor& a, int64_t axis, bool log) {
  const char* what = log ? "log_softmax" : "softmax";
  PIJIT_RETURN_IF_ERROR(CheckRank(a, what));
  PIJIT_ASSIGN_OR_RETURN(const CudaApi* api, CudaApi::Get());
  const int64_t nd = a.ndim();
  if (nd == 0) return absl::InvalidArgumentError(absl::StrFormat("%s of a scalar", what));
  const int64_t ax = axis < 0 ? axis + nd : axis;
  if (ax < 0 || ax >= nd) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: axis %d out of range", what, axis));
  }
  const bool wide = NeedsWideIndex(a);
  PIJIT_ASSIGN_OR_RETURN(
      CUfunction fn,
      CompiledFunction(absl::StrFormat("softmax|%d|%d|%d", static_cast<int>(a.dtype()), log, wide),
                       [&] { return RenderSoftmax(a.dtype(), log, wide); }, "pijit_softmax"));
  PIJIT_ASSIGN_OR_RETURN(Tensor result, EmptyOnDevice(a.shape(), a.dtype()));
  SoftmaxArgs args{};
  args.rows = 1;
  for (int64_t d = 0; d < nd; ++d) {
    if (d == ax) continue;
    args.kept_shape[args.kept_ndim] = a.shape()[d];
    args.in_kept_stride[args.kept_ndim] = a.strides()[d];
    args.out_kept_stride[args.kept_ndim++] = result.strides()[d];
    args.rows *= a.shape()[d];
  }
  args.len = a.shape()[ax];
  args.in_axis_stride = a.strides()[ax];
  args.out_axis_stride = result.strides()[ax];
  if (args.rows == 0 || args.len == 0) return result;
  args.in = a.raw_data();
  args.out = result.raw_data();
  PIJIT_RETURN_IF_ERROR(LaunchBlocks(*api, fn, args.rows, &args));
  return result;
}

}  // namespace pijit::cuda
