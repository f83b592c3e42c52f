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
  return DriverStatus(api, api.cuLaunchKernel(fn, blocks, 1, 1, kReduceBlock, 1, 1, 0, nullptr,
                                              params, nullptr),
                      "cuLaunchKernel");
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
  PIJIT_ASSIGN_OR_RETURN(std::string src, RenderReduce(op, a.dtype(), out.dtype));
  PIJIT_ASSIGN_OR_RETURN(Tensor result, EmptyOnDevice(out.shape, out.dtype));
  if (args.n_out == 0) return result;
  args.in = a.raw_data();
  args.out = result.raw_data();
  PIJIT_ASSIGN_OR_RETURN(CUfunction fn, CompiledFunction(src, "pijit_reduce"));
  PIJIT_RETURN_IF_ERROR(LaunchBlocks(*api, fn, args.n_out, &args));
  return result;
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
  PIJIT_ASSIGN_OR_RETURN(std::string src, RenderSoftmax(a.dtype(), log));
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
  PIJIT_ASSIGN_OR_RETURN(CUfunction fn, CompiledFunction(src, "pijit_softmax"));
  PIJIT_RETURN_IF_ERROR(LaunchBlocks(*api, fn, args.rows, &args));
  return result;
}

}  // namespace pijit::cuda
